"""The stream-json source on the 79 real terminal-bench runs and a truncated fixture."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scorer.models import EventKind, SessionInfo, SourceKind
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
    # the agent's real times from the run's label.json, not the file's copy time
    assert session.started_at == datetime.fromisoformat(label["agent_started_at"])
    assert session.ended_at == datetime.fromisoformat(label["agent_ended_at"])
    assert session.extra["times_from"] == "label"


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


# --- times: the run's label, else the stream's own, else the file's ---------------------


def _stream(folder: Path, *lines: dict) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    init = {"type": "system", "subtype": "init", "session_id": "s-1", "cwd": "/app"}
    say = {"type": "assistant", "message": {"id": "m1", "role": "assistant",
           "content": [{"type": "text", "text": "done"}]}, "parent_tool_use_id": None}  # fmt: skip
    path = folder / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in (init, say, *lines)) + "\n")
    return path


def test_trends_see_79_runs_over_their_real_day_not_the_copy_time(terminal_bench: Path) -> None:
    days = Counter()
    for path in _runs():
        info = SessionInfo.of(StreamJsonSource(path).load())
        assert info.times_from == "label"
        days[info.started_at.date().isoformat()] += 1
    assert days == {"2025-11-09": 79}  # all ran that day (they showed the copy's day)


def test_without_a_label_the_file_time_is_the_labelled_fallback(
    tmp_path: Path, terminal_bench: Path
) -> None:
    copy = tmp_path / "chess-best-move" / "session.jsonl"
    copy.parent.mkdir()
    shutil.copy(terminal_bench / "chess-best-move" / "session.jsonl", copy)
    session = StreamJsonSource(copy).load()
    assert session.started_at is None and "times_from" not in session.extra
    info = SessionInfo.of(session)
    assert info.times_from == "file" and info.ended_at is not None


def test_the_streams_own_timestamps_are_used_without_a_label(tmp_path: Path) -> None:
    path = _stream(
        tmp_path / "run",
        {"type": "result", "subtype": "success", "timestamp": "2026-01-02T03:05:00Z"},
        {"type": "user", "timestamp": "2026-01-02T03:04:00Z", "message": {"content": "go"}},
    )
    info = SessionInfo.of(StreamJsonSource(path).load())
    assert info.times_from == "events"
    assert info.started_at == datetime(2026, 1, 2, 3, 4, tzinfo=UTC)
    assert info.ended_at == datetime(2026, 1, 2, 3, 5, tzinfo=UTC)


@pytest.mark.parametrize(
    ("label", "warned"),
    [
        ("{not json", True),
        (json.dumps({"agent_started_at": "yesterday"}), True),
        (json.dumps({"name": "another tool's label"}), False),
    ],
)
def test_an_unusable_label_falls_back_to_the_file_time(
    tmp_path: Path, label: str, warned: bool
) -> None:
    path = _stream(tmp_path / "run")
    (path.parent / "label.json").write_text(label)
    session = StreamJsonSource(path).load()
    assert SessionInfo.of(session).times_from == "file"
    assert any("label.json" in w for w in session.extra["warnings"]) is warned


def test_a_label_end_before_its_start_keeps_the_start_only(tmp_path: Path) -> None:
    path = _stream(tmp_path / "run")
    (path.parent / "label.json").write_text(
        json.dumps(
            {"agent_started_at": "2025-11-09T07:00:00", "agent_ended_at": "2025-11-09T06:00:00Z"}
        )
    )
    session = StreamJsonSource(path).load()
    assert session.started_at == datetime(2025, 11, 9, 7, tzinfo=UTC)  # naive: read as UTC
    assert session.ended_at is None and session.extra["times_from"] == "label"
