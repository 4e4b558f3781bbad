"""The native source on self-written edge-case fixtures (tests/fixtures/sources)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scorer.errors import EmptySessionError, SourceError
from scorer.models import Event, EventKind
from scorer.sources import ClaudeCodeSource, number_events
from scorer.sources._common import detect_failure
from tests.conftest import FIXTURES

HERE = FIXTURES / "sources"
REPO = Path(__file__).resolve().parents[2]


def _load(name: str):
    return ClaudeCodeSource(HERE / name).load()


def test_split_lines_merge_usage_and_replays_are_deduped() -> None:
    session = _load("split_replay.jsonl")
    assert [e.kind for e in session.events] == [
        EventKind.PROMPT,
        EventKind.THINKING,
        EventKind.ASSISTANT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.ASSISTANT,
    ]
    # msg_A spans three lines (output 1 → 5 → 20): only the last snapshot counts.
    assert session.usage.output_tokens == 20 + 7
    assert session.usage.input_tokens == 20
    assert session.usage.cache_read_tokens == 200
    assert session.usage.cache_write_tokens == 10
    assert session.extra["duplicate_lines"] == 2
    assert session.extra["bad_lines"] == 1  # the broken line, counted not fatal
    assert session.events[1].text == "I will list the files."
    assert session.events[4].tool_name == "Bash"
    assert session.title == "List files"
    assert session.project == "proj"


def test_user_line_kinds_and_failures_without_is_error() -> None:
    session = _load("user_kinds.jsonl")
    kinds = [e.kind for e in session.events]
    assert kinds == [
        EventKind.COMMAND,
        EventKind.META,
        EventKind.PROMPT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_CALL,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.TOOL_RESULT,
        EventKind.TOOL_RESULT,
        EventKind.API_ERROR,
        EventKind.INTERRUPTION,
        EventKind.NOTIFICATION,
        EventKind.COMMAND,
        EventKind.ASSISTANT,
        EventKind.COMPACTION,
        EventKind.PROMPT,
        EventKind.ASSISTANT,
    ]
    bash, edit, read = session.events[6:9]
    assert (bash.is_error, bash.exit_code) == (True, 2)
    assert edit.is_error and edit.exit_code is None
    assert not read.is_error
    api = session.events[9]
    assert api.meta == {"status": 529, "error": "overloaded"}
    assert session.models == ["claude-sonnet-4-5-20250929"]  # <synthetic> is not a model
    note = session.events[11]
    assert note.tool_use_id == "toolu_b" and note.meta["status"] == "completed"
    assert session.events[0].text == "/clear"
    assert session.events[12].text == "Cleared"
    assert session.extra["skipped_thinking"] == 1
    compaction = session.events[14]
    assert compaction.meta == {"trigger": "auto", "preTokens": 150000}
    assert compaction.text.startswith("This session is being continued")


def test_meta_json_links_subagent_and_acompact_is_ignored() -> None:
    root = HERE / "meta_link" / "-home-dev-proj"
    session = ClaudeCodeSource(root / "22222222-3333-4444-8555-666666666666.jsonl").load()
    kinds = [e.kind for e in session.events]
    assert kinds == [
        EventKind.PROMPT,
        EventKind.TOOL_CALL,
        EventKind.TOOL_RESULT,
        EventKind.SUBAGENT,
        EventKind.ASSISTANT,
    ]
    sub = session.events[3]
    assert (sub.agent_id, sub.tool_use_id, sub.text) == (
        "x1y2z3",
        "toolu_agent",
        "Locate config loader",
    )
    assert sub.meta["agent_type"] == "Explore"
    assert [c.index for c in sub.children] == [5, 6, 7, 8]
    assert session.events[4].index == 9
    # Subagent usage counts; the acompact run (output 999) does not.
    assert session.usage.output_tokens == 30 + 9 + 11 + 13
    assert session.models == ["claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"]
    assert session.extra["compaction_runs"] == ["agent-acompact-0f0f0f.jsonl"]


def test_unlinked_subagent_is_placed_by_timestamp(tmp_path: Path) -> None:
    src = HERE / "meta_link" / "-home-dev-proj"
    dest = tmp_path / "proj"
    sid = "22222222-3333-4444-8555-666666666666"
    (dest / sid / "subagents").mkdir(parents=True)
    (dest / f"{sid}.jsonl").write_text((src / f"{sid}.jsonl").read_text())
    agent = src / sid / "subagents" / "agent-x1y2z3.jsonl"
    (dest / sid / "subagents" / agent.name).write_text(agent.read_text())  # no meta.json
    session = ClaudeCodeSource(dest / f"{sid}.jsonl").load()
    sub = next(e for e in session.events if e.kind == EventKind.SUBAGENT)
    assert sub.meta["linked"] is False
    assert session.events.index(sub) == 2  # started at :03, between the call and its result


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("empty.jsonl", EmptySessionError),
        ("only_snapshots.jsonl", EmptySessionError),
        ("array.json", SourceError),
        ("other_jsonl.jsonl", SourceError),
        ("binary.jsonl", SourceError),
        ("does-not-exist.jsonl", SourceError),
    ],
)
def test_bad_inputs_raise_typed_errors(name: str, error: type[Exception]) -> None:
    with pytest.raises(error, match=name.replace(".", r"\.")):
        _load(name)


def test_number_events_is_depth_first() -> None:
    child = Event(index=0, kind=EventKind.ASSISTANT)
    events = [
        Event(index=0, kind=EventKind.PROMPT),
        Event(
            index=0,
            kind=EventKind.SUBAGENT,
            children=[child, Event(index=0, kind=EventKind.ASSISTANT)],
        ),
        Event(index=0, kind=EventKind.ASSISTANT),
    ]
    numbered = number_events(events)
    assert numbered is events
    assert [e.index for e in events] == [1, 2, 5]
    assert [c.index for c in events[1].children] == [3, 4]


@pytest.mark.parametrize(
    ("text", "flag", "tur", "expected"),
    [
        ("Exit code 3\nboom", None, None, (True, 3)),
        ("ok", None, "Error: Exit code 1\nx", (True, 1)),
        ("<tool_use_error>nope</tool_use_error>", None, None, (True, None)),
        ("all good", False, {"stdout": "all good"}, (False, None)),
        ("Exit code 0", None, None, (False, 0)),
        ("whatever", True, None, (True, None)),
    ],
)
def test_detect_failure(text, flag, tur, expected) -> None:
    assert detect_failure(text, flag, tur) == expected


def test_demo_session_parses() -> None:
    session = ClaudeCodeSource(REPO / "examples" / "demo-session.jsonl").load()
    failed = [e for e in session.events if e.is_error]
    assert [(e.tool_name, e.exit_code) for e in failed] == [("Bash", 1)]
    assert session.title == "Fix median() for even-length and unsorted lists"
    assert sum(1 for e in session.events if e.kind == EventKind.PROMPT) == 2
    assert session.usage.output_tokens == 71 + 58 + 152 + 61 + 118 + 64 + 55 + 96 + 60 + 31
    lines = (REPO / "examples" / "demo-session.jsonl").read_text().splitlines()
    assert 25 <= len(lines) <= 40
    assert {json.loads(line)["type"] for line in lines} >= {
        "file-history-snapshot",
        "progress",
        "system",
        "user",
        "assistant",
    }
