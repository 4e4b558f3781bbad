"""The native source on the real transcripts in ../shared/data (skipped when absent)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scorer.models import EventKind, Session
from scorer.sources import ClaudeCodeSource
from tests.conftest import BIG_SESSION, CC_PROJECTS, SPOTTER, require

FASTHOOKS = CC_PROJECTS / "-home-USER-projects-fasthooks"
BIG_AGENT = BIG_SESSION.with_suffix("") / "subagents" / "agent-aac57f5.jsonl"


def _all_transcripts() -> list[Path]:
    return sorted(CC_PROJECTS.rglob("*.jsonl")) if CC_PROJECTS.exists() else []


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _tool_blocks(path: Path, block_type: str) -> list[dict]:
    return [
        block
        for line in _lines(path)
        if line.get("type") in ("user", "assistant")
        and isinstance(line["message"].get("content"), list)
        for block in line["message"]["content"]
        if block.get("type") == block_type
    ]


def _last_usage_sum(*paths: Path) -> dict[str, int]:
    """Independent token total: last usage per message.id, summed."""
    last: dict[str, dict] = {}
    for path in paths:
        for line in _lines(path):
            if line.get("type") == "assistant" and not line.get("isApiErrorMessage"):
                last[line["message"]["id"]] = line["message"]["usage"]
    keys = (
        "input_tokens",
        "output_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
    )
    return {k: sum(u.get(k, 0) for u in last.values()) for k in keys}


def _kinds(session: Session) -> Counter:
    return Counter(e.kind for _, e in session.iter_events())


@pytest.mark.parametrize("path", _all_transcripts(), ids=lambda p: p.name)
def test_every_real_transcript_parses(path: Path) -> None:
    session = ClaudeCodeSource(path).load()
    indices = [e.index for _, e in session.iter_events()]
    assert indices == list(range(1, len(indices) + 1))
    assert session.extra["bad_lines"] == 0
    assert session.models and all(m != "<synthetic>" for m in session.models)


def test_real_data_present(cc_projects: Path) -> None:
    assert len(_all_transcripts()) == 8


def test_big_session_counts_match_the_raw_file(big_session: Path) -> None:
    session = ClaudeCodeSource(big_session).load()
    kinds = _kinds(session)
    raw_calls = len(_tool_blocks(big_session, "tool_use")) + len(
        _tool_blocks(BIG_AGENT, "tool_use")
    )
    results = _tool_blocks(big_session, "tool_result") + _tool_blocks(BIG_AGENT, "tool_result")
    assert kinds[EventKind.TOOL_CALL] == raw_calls == 254
    assert kinds[EventKind.TOOL_RESULT] == len(results)
    errors = sum(
        1 for _, e in session.iter_events() if e.kind == EventKind.TOOL_RESULT and e.is_error
    )
    assert errors == sum(1 for b in results if b.get("is_error")) == 12


def test_big_session_usage_is_last_snapshot_per_message(big_session: Path) -> None:
    session = ClaudeCodeSource(big_session).load()
    expected = _last_usage_sum(big_session, BIG_AGENT)  # acompact run excluded
    assert session.usage.input_tokens == expected["input_tokens"]
    assert session.usage.output_tokens == expected["output_tokens"]
    assert session.usage.cache_read_tokens == expected["cache_read_input_tokens"]
    assert session.usage.cache_write_tokens == expected["cache_creation_input_tokens"]
    naive = sum(
        line["message"]["usage"]["output_tokens"]
        for line in _lines(big_session)
        if line.get("type") == "assistant"
    )
    assert session.usage.output_tokens < naive  # summing split lines would double-count


def test_big_session_links_its_subagent_after_the_task_result(big_session: Path) -> None:
    session = ClaudeCodeSource(big_session).load()
    subagents = [e for e in session.events if e.kind == EventKind.SUBAGENT]
    assert [s.agent_id for s in subagents] == ["aac57f5"]  # acompact is not a subagent
    sub = subagents[0]
    assert sub.tool_use_id == "toolu_01Hf8v1Za7y4af8VUwSR4CXU"
    assert sub.text == "Check OTEL hex package versions"
    assert len(sub.children) == 28
    before = session.events[session.events.index(sub) - 1]
    assert before.kind == EventKind.TOOL_RESULT and before.tool_use_id == sub.tool_use_id
    assert sub.children[0].index == sub.index + 1
    assert session.extra["compaction_runs"] == ["agent-acompact-946d2b.jsonl"]
    assert "claude-sonnet-4-5-20250929" in session.models  # the subagent's model


def test_big_session_compaction_and_metadata(big_session: Path) -> None:
    session = ClaudeCodeSource(big_session).load()
    compactions = [e for e in session.events if e.kind == EventKind.COMPACTION]
    assert len(compactions) == 1
    assert compactions[0].meta == {"trigger": "manual", "preTokens": 142431}
    assert compactions[0].text.startswith("This session is being continued")
    assert session.session_id == "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    assert session.git_branches == ["spotter-4te"]
    assert session.extra["turn_duration_ms"] == 1341830 + 790696
    assert session.started_at < session.ended_at


def test_fasthooks_thinking_errors_compact_and_legacy_sidechain() -> None:
    path = require(FASTHOOKS / "sample_main_transcript.jsonl")
    session = ClaudeCodeSource(path).load()
    kinds = _kinds(session)
    raw_thinking = [b for b in _tool_blocks(path, "thinking") if b["thinking"].strip()]
    assert kinds[EventKind.THINKING] == len(raw_thinking) == 12
    assert all("\n" not in e.text for e in session.events if e.kind == EventKind.THINKING)
    failed = [e for e in session.events if e.kind == EventKind.TOOL_RESULT and e.is_error]
    assert [(e.tool_name, e.exit_code) for e in failed] == [("Bash", 1), ("Bash", 127)]
    assert any(e.kind == EventKind.COMMAND and e.text == "/compact" for e in session.events)
    assert kinds[EventKind.COMPACTION] == 1
    # The legacy sibling agent file shares the sessionId but is a 2.0.x "Warmup" run.
    assert session.extra["skipped_agents"] == ["agent-sample_sidechain.jsonl"]
    assert kinds[EventKind.SUBAGENT] == 0


def test_legacy_agent_file_scored_directly_is_its_own_session() -> None:
    path = require(FASTHOOKS / "agent-sample_sidechain.jsonl")
    session = ClaudeCodeSource(path).load()
    assert [e.kind for e in session.events] == [EventKind.PROMPT, EventKind.ASSISTANT]
    assert session.events[0].text == "Warmup"


def test_progress_only_subagent_is_rebuilt_from_agent_progress() -> None:
    session = ClaudeCodeSource(require(SPOTTER / "subagent.jsonl")).load()
    (sub,) = [e for e in session.events if e.kind == EventKind.SUBAGENT]
    assert sub.agent_id == "afb92ff"
    assert sub.tool_use_id == "toolu_01Cz2Pnv7qNcnK1ZiocxWhQX"
    assert sub.text == "Draft beads for linting setup"
    assert sub.meta["origin"] == "progress"
    assert any(c.kind == EventKind.TOOL_RESULT and c.is_error for c in sub.children)


def test_short_session_rejections_and_interrupt() -> None:
    session = ClaudeCodeSource(require(SPOTTER / "short.jsonl")).load()
    kinds = _kinds(session)
    assert kinds[EventKind.INTERRUPTION] == 1
    assert kinds[EventKind.PROMPT] == 1
    assert sum(e.is_error for e in session.events) == 2  # two rejected tool uses
    assert next(e.text for e in session.events if e.kind == EventKind.COMMAND) == "/model"
