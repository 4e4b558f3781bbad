"""The stream-json source on the 79 real terminal-bench runs and a truncated fixture."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scorer.models import EventKind, SourceKind
from scorer.sources import StreamJsonSource, resolve
from tests.conftest import FIXTURES, TERMINAL_BENCH


def _runs() -> list[Path]:
    return sorted(TERMINAL_BENCH.glob("*/session.jsonl")) if TERMINAL_BENCH.exists() else []


def _raw(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_terminal_bench_has_79_streams(terminal_bench: Path) -> None:
    assert len(_runs()) == 79


@pytest.mark.parametrize("path", _runs(), ids=lambda p: p.parent.name)
def test_every_run_parses_and_matches_raw_counts(path: Path) -> None:
    source = resolve(str(path), task="the task")
    assert source.kind == SourceKind.STREAM_JSON
    session = source.load()
    raw = _raw(path)
    blocks = [
        b
        for line in raw
        if line["type"] in ("user", "assistant") and isinstance(line["message"]["content"], list)
        for b in line["message"]["content"]
    ]
    kinds = Counter(e.kind for _, e in session.iter_events())
    assert kinds[EventKind.TOOL_CALL] == sum(b["type"] == "tool_use" for b in blocks)
    assert kinds[EventKind.TOOL_RESULT] == sum(b["type"] == "tool_result" for b in blocks)
    flagged = sum(bool(b.get("is_error")) for b in blocks if b["type"] == "tool_result")
    errors = sum(
        1 for _, e in session.iter_events() if e.kind == EventKind.TOOL_RESULT and e.is_error
    )
    assert errors == flagged
    label = json.loads((path.parent / "label.json").read_text())
    has_result = any(line["type"] == "result" for line in raw)
    assert session.extra["complete"] is has_result is label["stream_complete"]
    assert kinds[EventKind.RESULT] == int(has_result)
    assert session.task == "the task" and session.task_text == "the task"
    init = raw[0]
    assert session.session_id == init["session_id"] and session.cwd == init["cwd"]
    assert session.models[0] == init["model"]
    indices = [e.index for _, e in session.iter_events()]
    assert indices == list(range(1, len(indices) + 1))


def test_result_fields_and_subagents(terminal_bench: Path) -> None:
    session = StreamJsonSource(terminal_bench / "swe-bench-astropy-1" / "session.jsonl").load()
    result = session.events[-1]
    assert result.kind == EventKind.RESULT
    raw_result = _raw(terminal_bench / "swe-bench-astropy-1" / "session.jsonl")[-1]
    assert session.extra["num_turns"] == raw_result["num_turns"]
    assert session.extra["duration_ms"] == raw_result["duration_ms"]
    assert session.cost_usd == raw_result["total_cost_usd"]
    subs = [e for e in session.events if e.kind == EventKind.SUBAGENT]
    assert len(subs) == 2
    first = subs[0]
    assert first.children[0].kind == EventKind.PROMPT
    assert first.children[0].text.startswith("Find the implementation of the separability_matrix")
    before = session.events[session.events.index(first) - 1]
    assert before.kind == EventKind.TOOL_RESULT and before.tool_use_id == first.tool_use_id


def test_truncated_stream_without_result_line() -> None:
    session = StreamJsonSource(FIXTURES / "sources" / "stream_truncated.jsonl").load()
    assert session.extra["complete"] is False
    assert session.cost_usd is None
    assert [e.kind for e in session.events] == [
        EventKind.ASSISTANT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
    ]
    assert session.events[2].is_error and session.events[2].exit_code == 1
    assert session.usage.output_tokens == 9  # last snapshot of msg_1, not 1 + 9
    assert session.task_text is None
