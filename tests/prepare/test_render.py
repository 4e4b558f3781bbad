from __future__ import annotations

import re

from scorer.models import EventKind, Session, SourceKind
from scorer.prepare import cut_middle, render_events, render_header, render_timeline, tool_call_line
from tests.conftest import BIG_SESSION, require
from tests.prepare.sessions import sample_session


def by_index(session: Session) -> dict[int, str]:
    return {r.index: r.text for r in render_events(session)}


def test_every_event_rendered_once_with_its_ref_in_order():
    session = sample_session()
    rendered = render_events(session)
    assert [r.index for r in rendered] == [e.index for _, e in session.iter_events()]
    for r in rendered:
        assert r.text.lstrip().startswith(f"#{r.index} ")


def test_compact_tool_lines():
    t = by_index(sample_session())
    assert t[3] == "#3 Read src/x.py [1-200]"
    assert t[5] == "#5 Bash: pytest -q tests/"
    assert t[7] == "#7 Edit src/x.py (-3 +5 lines)"
    assert t[9] == "#9 Task (Explore): check docs"
    assert t[19].startswith('#19 mcp__thing__do {"alpha": 1, "beta": "xxx')
    assert t[19].endswith("…") and len(t[19]) < 260


def test_tool_call_line_variants():
    assert (
        tool_call_line("Write", {"file_path": "a.py", "content": "x\ny"}) == "Write a.py (2 lines)"
    )
    assert tool_call_line("Bash", {"command": "cd x\n  && make"}) == "Bash: cd x ⏎ && make"
    assert tool_call_line("Read", {"file_path": "a.py"}) == "Read a.py"
    assert (
        tool_call_line(
            "MultiEdit", {"file_path": "a", "edits": [{"old_string": "a", "new_string": "b\nc"}]}
        )
        == "MultiEdit a (1 edits, -1 +2 lines)"
    )
    assert (
        tool_call_line("Grep", {"pattern": "x+", "path": "src", "glob": "*.py"})
        == 'Grep "x+" in src (*.py)'
    )


def test_error_result_is_linked_marked_and_cut_head_and_tail():
    text = by_index(sample_session())[6]
    assert text.startswith("#6 ↳ result of #5 (exit 1) ERROR:\n")
    assert "line 0 of output" in text and "1 failed, 3 passed in 0.52s" in text
    note = re.search(r"\[… ([\d,]+) chars / ([\d,]+) lines cut …\]", text)
    assert note and int(note.group(2).replace(",", "")) > 1_500
    assert "line 1000 of output" not in text
    assert len(text) < 3_300


def test_ok_result_single_line_stays_on_one_line():
    assert by_index(sample_session())[8] == "#8 ↳ result of #7: The file src/x.py has been updated."


def test_subagent_is_a_nested_section():
    t = by_index(sample_session())
    assert t[10] == "#10 SUBAGENT (agent a1b2: check docs) spawned by #9 ┐"
    assert t[11] == "  #11 AGENT TASK: look at the docs"
    assert t[12] == '  #12 Grep "def f" in src'
    assert t[13] == "  #13 ↳ result of #12: src/x.py:1\n└ end subagent #10"
    assert render_events(sample_session())[2].depth == 0
    assert {r.depth for r in render_events(sample_session()) if 11 <= r.index <= 13} == {1}


def test_markers_and_thinking():
    t = by_index(sample_session())
    assert t[2] == "#2 THINKING: Let me look at the test first."
    assert t[15].startswith("#15 ── CONTEXT COMPACTED (trigger=auto, preTokens=150000) ── summary:")
    assert t[16] == "#16 API ERROR (status=529): Overloaded"
    assert t[17].startswith("#17 ⚠ INTERRUPTED BY USER")
    assert t[18] == "#18 NOTIFICATION: background shell finished"


def test_result_line():
    from scorer.models import Event

    s = Session(session_id="x", source=SourceKind.STREAM_JSON, events=[
        Event(index=1, kind=EventKind.RESULT, text="Done.", meta={"subtype": "success", "num_turns": 7}),
    ])  # fmt: skip
    assert by_index(s)[1] == "#1 RESULT (ok, subtype=success, num_turns=7): Done."


def test_header_has_task_and_facts():
    header = render_header(sample_session())
    lines = header.splitlines()
    assert lines[:2] == ["TASK:", "Fix the failing test in src/x.py"]
    assert lines[2] == (
        "SESSION: source claude-code · project demo · branch main · models claude-sonnet-4-5"
        " · duration 12m 30s · tokens in 1,000 / out 50 (cache hit 90%) · 22 events"
    )
    explicit = sample_session().model_copy(update={"task": "Explicit task"})
    assert render_header(explicit).splitlines()[1] == "Explicit task"


def test_timeline_is_deterministic_and_contains_everything():
    a, b = render_timeline(sample_session()), render_timeline(sample_session())
    assert a == b
    assert a.startswith("TASK:\n") and a.count("\n#") >= 19


def test_cut_middle_keeps_short_text_and_cuts_long():
    assert cut_middle("short", 10) == "short"
    cut = cut_middle("a" * 1000, 100)
    assert cut.startswith("a" * 60) and cut.endswith("a" * 40)
    assert "[… 900 chars / 0 lines cut …]" in cut


def test_real_big_session_renders_with_refs_and_subagent():
    from scorer.sources.claude_code import ClaudeCodeSource

    session = ClaudeCodeSource(require(BIG_SESSION)).load()
    rendered = render_events(session)
    assert len(rendered) == session.n_events
    text = render_timeline(session)
    assert "SUBAGENT (agent aac57f5" in text and "└ end subagent" in text
    assert "CONTEXT COMPACTED" in text
    assert max(len(r.text) for r in rendered) < 10_000
