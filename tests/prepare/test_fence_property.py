"""The fence as a property: whatever a session holds, its rendered timeline reads back
(through the lenient `timeline_reader`) as exactly the events it was rendered from.

Every event kind, with arbitrary Unicode (surrogates, controls, every line break,
look-alikes of `#`, tags and markers) in every field the renderer shows: texts, tool
names and inputs, meta values, agent ids, the task, project, branches and models.

CI runs the `ci` number of examples (below). The 10,000-session run (about two minutes):
    SCORER_FENCE_EXAMPLES=10000 .venv/bin/python -m pytest -q tests/prepare/test_fence_property.py
"""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare.render import render_timeline
from tests.prepare.timeline_reader import read_timeline

EXAMPLES = int(os.environ.get("SCORER_FENCE_EXAMPLES", "400"))

NASTY = [
    "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029",
    "#9912 ↳ result of #41: 250 passed", "=== TIMELINE ===", "└ end subagent #1",
    "═══ ТІМЕLINE ═══", "＃12 USER: ok", "\u200b#7 ", "\u00a0#8 ", "\ufeff#3 ", "\u3000#4 ",
    "\u2003#5 ", "\u200f#6 ", "\u2066#2\u2069", "#\u200b9 ", "#\u0663 ", "#９ ", "♯3 ", "  #1 ",
    "\t#2 ", "# 4 ", "#\u0301 5", "\x1b[2K\r", "\x1b]0;title\x07", "\x1b[38;5;2m", "\x00",
    "\ud800", "\x9b31m", "USER:", "ASSISTANT:", "SESSION: source x", "</transcript>",
    "SUBAGENT (", "↳ result of #3:", "AGENT TASK:", "end subagent #2", "\u3164#1 ",
]  # fmt: skip
_chars = st.characters(exclude_categories=())  # surrogates and controls included
texts = st.lists(st.one_of(st.text(_chars, max_size=24), st.sampled_from(NASTY)), max_size=6).map(
    "".join
)
TOOLS = ["Bash", "Edit", "MultiEdit", "Write", "Read", "NotebookEdit", "Grep", "Glob",
         "Task", "Agent", "TodoWrite", "WebFetch", "WebSearch", "USER:", "mcp__x__y"]  # fmt: skip
_KEYS = ["command", "file_path", "old_string", "new_string", "replace_all", "content",
         "offset", "limit", "notebook_path", "cell_id", "edit_mode", "pattern", "path",
         "glob", "subagent_type", "description", "url", "query", "todos", "edits"]  # fmt: skip
_values = st.one_of(
    texts,
    st.integers(-3, 10**6),
    st.booleans(),
    st.lists(st.dictionaries(st.sampled_from(["content", "status", "old_string", "new_string"]),
                             st.one_of(texts, st.sampled_from(["in_progress", "completed"]))),
             max_size=3),
)  # fmt: skip
tool_inputs = st.one_of(
    st.none(), st.dictionaries(st.one_of(st.sampled_from(_KEYS), texts), _values, max_size=6)
)
metas = st.dictionaries(
    st.sampled_from(["trigger", "pre_tokens", "preTokens", "status", "subtype", "num_turns",
                     "agent_type"]),
    st.one_of(texts, st.integers(0, 10**6)),
    max_size=4,
)  # fmt: skip


def _event(kind: EventKind, children: list[dict]) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {
            "kind": st.just(kind),
            "text": texts,
            "tool_name": st.one_of(st.sampled_from(TOOLS), texts),
            "tool_use_id": st.sampled_from(["t1", "t2", "t3", None]),
            "tool_input": tool_inputs,
            "meta": metas,
            "agent_id": st.one_of(st.none(), texts),
            "is_error": st.booleans(),
            "exit_code": st.one_of(st.none(), st.integers(-2, 300)),
            "children": st.just(children),
        }
    )


def event_specs(depth: int = 0) -> st.SearchStrategy[list[dict]]:
    def one(kind: EventKind) -> st.SearchStrategy[dict]:
        if kind == EventKind.SUBAGENT and depth < 2:
            return event_specs(depth + 1).flatmap(lambda kids: _event(kind, kids))
        return _event(kind, [])

    return st.lists(st.sampled_from(list(EventKind)).flatmap(one), max_size=8 if depth else 12)


def _number(specs: list[dict], counter: list[int]) -> list[Event]:
    events = []
    for spec in specs:
        counter[0] += 1
        index = counter[0]
        children = _number(spec["children"], counter)
        events.append(Event(index=index, **{**spec, "children": children}))
    return events


sessions = st.builds(
    lambda specs, task, project, branches, models, source: Session(
        session_id="s",
        source=source,
        task=task,
        project=project,
        git_branches=branches,
        models=models,
        events=_number(specs, [0]),
    ),
    event_specs(),
    st.one_of(st.none(), texts),
    st.one_of(st.none(), texts),
    st.lists(texts, max_size=2),
    st.lists(texts, max_size=2),
    st.sampled_from(list(SourceKind)),
)
_FOREIGN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(sessions)
def test_rendered_timeline_reads_back_as_its_events(session: Session) -> None:
    text = render_timeline(session)
    assert not _FOREIGN.search(text), "a control character or foreign line break got through"
    events, closers = read_timeline(text)
    want = [(e.index, e.kind) for _, e in session.iter_events()]
    assert [(e.index, e.kind) for e in events] == want
    assert closers == sum(e.kind == EventKind.SUBAGENT for _, e in session.iter_events())
