"""Sessions people recognise: titles, task text, agent models and honest times (pure)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from scorer._identity import (
    TASK_CHARS,
    cut_text,
    is_generic_name,
    one_line,
    path_title,
    pick_title,
    session_times,
)
from scorer.models import Event, EventKind, Session, SessionInfo, SourceKind
from scorer.prepare import prepare

GH = "ghp" + "_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"


def test_one_line_takes_the_first_line_with_words_and_cuts_at_a_word():
    assert one_line("\n\n  ---\n  Fix   the login\tbug \nmore") == "Fix the login bug"
    assert one_line("<command-name>/review</command-name> the PR") == "/review the PR"
    long = "word " * 40
    cut = one_line(long)
    assert cut is not None and len(cut) <= 80 and cut.endswith("…") and "wor…" not in cut
    assert one_line("") is None and one_line(None) is None and one_line("--- ***") is None


def test_generic_trace_names_are_not_titles():
    for name in ("Claude Code - Turn 3 (4d5611e5)", "Turn 12", "Conversational Turn", None):
        assert is_generic_name(name)
    assert not is_generic_name("rag-answer") and not is_generic_name("Turn the page")


@pytest.mark.parametrize(
    ("origin", "want"),
    [
        ("/data/tb/chess-best-move/session.jsonl", ("chess-best-move", "folder")),
        ("/home/u/.claude/projects/-x/ae4a77f8.jsonl", ("ae4a77f8.jsonl", "file")),
        ("https://cloud.langfuse.com/project/p/sessions/s", None),
        ("tmux /tmp/sock: work:1", None),
        (None, None),
    ],
)
def test_path_titles(origin, want):
    assert path_title(origin) == want


def test_pick_title_order():
    origin = "/runs/fix-git/session.jsonl"
    assert pick_title(("My title", "task", "prompt", None), origin, "id") == ("My title", "session")
    assert pick_title(("Turn 1", "Do X\nmore", "p", None), origin, "id") == ("Do X", "task")
    assert pick_title((None, None, "hello there", "s"), origin, "id") == (
        "hello there",
        "first prompt",
    )
    assert pick_title((None, None, None, "shown"), origin, "id") == ("shown", "screen")
    assert pick_title((None, None, None, None), origin, "id") == ("fix-git", "folder")
    assert pick_title((None, None, None, None), None, "tmux:work") == ("tmux:work", "id")


def test_times_are_the_sessions_own_else_the_file_time_labelled():
    start, end = datetime(2026, 1, 2, 3, tzinfo=UTC), datetime(2026, 1, 2, 4, tzinfo=UTC)
    assert session_times(start, end, {}) == (start, end, "events")
    assert session_times(start, None, {"times_from": "recording"})[2] == "recording"
    extra = {"file_mtime": end.isoformat(), "duration_ms": 3_600_000}
    assert session_times(None, None, extra) == (start, end, "file")
    assert session_times(None, None, {"file_mtime": end.isoformat()}) == (None, end, "file")
    assert session_times(None, None, {}) == (None, None, None)


def test_cut_text_says_how_much_was_cut():
    assert cut_text("short", 10) == "short"
    cut = cut_text("x" * 25, 10)
    assert cut is not None and cut.startswith("x" * 10) and "15 more characters" in cut


def _session(**kw) -> Session:
    events = kw.pop("events", None) or [
        Event(index=1, kind=EventKind.PROMPT, text=f"Deploy with token {GH}\nthen check"),
        Event(index=2, kind=EventKind.ASSISTANT, text="ok", model="claude-opus-4-6"),
        Event(index=3, kind=EventKind.ASSISTANT, text="ok", model="claude-haiku-4-5"),
        Event(index=4, kind=EventKind.ASSISTANT, text="ok", model="claude-opus-4-6"),
    ]
    return Session(session_id="s1", source=SourceKind.CLAUDE_CODE, events=events, **kw)


def test_session_info_of_a_redacted_session_keeps_no_secret():
    info = SessionInfo.of(prepare(_session(cwd="/home/u/proj")).session)
    assert info.title_from == "first prompt" and info.title.startswith("Deploy with token")
    assert GH not in (info.title or "") and GH not in (info.task or "")
    assert "then check" in (info.task or "")
    assert info.agent_models == ["claude-opus-4-6", "claude-haiku-4-5"]
    assert info.agent_model == "claude-opus-4-6" and info.project == "proj"


def test_session_info_task_is_capped():
    long = "do it " * 5000
    info = SessionInfo.of(_session(task=long))
    assert info.title_from == "task" and info.task is not None
    assert TASK_CHARS < len(info.task) < TASK_CHARS + 80


def test_a_terminal_session_uses_what_its_screen_shows():
    events = [Event(index=1, kind=EventKind.TERMINAL, text="$ ls")]
    screen = {"model": "claude-opus-4-6", "cwd": "~/projects/spotter", "prompt": "fix it"}
    session = Session(
        session_id="terminal:x/y.txt",
        source=SourceKind.TERMINAL,
        origin="/x/y.txt",
        events=events,
        extra={"screen": screen, "file_mtime": "2026-11-20T10:00:00+00:00"},
    )
    info = SessionInfo.of(session)
    assert (info.title, info.title_from, info.task) == ("fix it", "screen", "fix it")
    assert info.agent_models == ["claude-opus-4-6"] and info.project == "spotter"
    assert info.started_at is None and info.times_from == "file"
    assert info.ended_at == datetime(2026, 11, 20, 10, tzinfo=UTC)
