"""`redact_session`'s fast path (one trigger scan over every string of the event tree, events
without a hit kept as they are) redacts exactly what redacting every string would."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare.redact import redact_session, redact_value
from tests.secret_corpus import CORPUS, leaked

A36 = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"
GH = "ghp" + "_" + A36


def _reference(events: list[Event], counts: Counter[str]) -> list[dict[str, Any]]:
    """Every event's fields passed through `redact_value`, no fast path."""
    out = []
    for event in events:
        fields = {}
        for name in ("text", "tool_input", "meta"):
            value, found = redact_value(getattr(event, name))
            counts.update(found)
            fields[name] = value
        fields["children"] = _reference(event.children, counts)
        out.append(fields)
    return out


def _fields(events: list[Event]) -> list[dict[str, Any]]:
    return [
        {
            "text": e.text,
            "tool_input": e.tool_input,
            "meta": e.meta,
            "children": _fields(e.children),
        }
        for e in events
    ]


def _session(events: list[Event]) -> Session:
    return Session(session_id="s", source=SourceKind.CLAUDE_CODE, events=events)


def _placed(text: str, where: int, index: int) -> Event:
    """`text` in one of the places a string can sit in an event (with non-ASCII before it,
    so character offsets differ from byte offsets)."""
    noise = "héllo → wörld ✅ " * (index % 3)
    kind = EventKind.TOOL_CALL
    match where:
        case 0:
            return Event(index=index, kind=EventKind.TOOL_RESULT, text=noise + text)
        case 1:
            return Event(index=index, kind=kind, tool_input={"command": noise + text})
        case 2:
            nested = {"a": [1, None, {"b": ["x", noise + text]}], "c": "plain"}
            return Event(index=index, kind=kind, text=noise, tool_input=nested)
        case 3:
            return Event(index=index, kind=EventKind.API_ERROR, meta={"detail": (noise, text)})
        case _:
            child = Event(index=index + 1, kind=EventKind.TOOL_RESULT, text=noise + text)
            return Event(index=index, kind=EventKind.SUBAGENT, children=[child])


@pytest.mark.parametrize("where", range(5))
def test_every_corpus_secret_is_redacted_wherever_it_sits(where: int) -> None:
    plain = Event(index=0, kind=EventKind.ASSISTANT, text="nothing to see ✅")
    events = [plain]
    for i, case in enumerate(CORPUS):
        events += [_placed(case.text, where, 10 * i + 1), plain]
    session = _session(events)
    before = session.model_dump_json()
    clean, report = redact_session(session)
    expected_counts: Counter[str] = Counter()
    assert _fields(clean.events) == _reference(session.events, expected_counts)
    assert report.by_kind == dict(sorted(expected_counts.items()))
    dumped = clean.model_dump_json()
    for case in CORPUS:
        assert not leaked(case, dumped), case.name
    assert session.model_dump_json() == before


def test_secret_named_key_without_any_trigger_is_redacted_whole() -> None:
    # `access_key` and `auth` contain no trigger: only the key names them secret
    child = Event(index=2, kind=EventKind.TOOL_RESULT, meta={"auth": "Zx81kPq0Lm2N"})
    session = _session(
        [
            Event(index=1, kind=EventKind.SUBAGENT, children=[child]),
            Event(index=3, kind=EventKind.TOOL_CALL, tool_input={"env": {"access_key": "q7Zr2"}}),
        ]
    )
    clean, report = redact_session(session)
    assert clean.events[0].children[0].meta == {"auth": "[REDACTED:assignment]"}
    assert clean.events[1].tool_input == {"env": {"access_key": "[REDACTED:assignment]"}}
    assert report.by_kind == {"assignment": 2}
    assert session.events[0].children[0].meta == {"auth": "Zx81kPq0Lm2N"}


def test_secrets_at_string_and_event_boundaries_are_found() -> None:
    # the first and the last string of neighbouring events, and a one-string event
    events = [
        Event(index=1, kind=EventKind.TOOL_CALL, text=GH, tool_input={"a": "x", "b": GH}),
        Event(index=2, kind=EventKind.TOOL_RESULT, text=GH),
        Event(index=3, kind=EventKind.TOOL_RESULT, text=""),
        Event(index=4, kind=EventKind.TOOL_CALL, tool_input={"a": GH}, meta={"m": GH}),
    ]
    clean, report = redact_session(_session(events))
    assert GH not in clean.model_dump_json()
    assert report.by_kind == {"github_token": 5}


def test_untouched_events_are_shared_and_changed_ones_copied() -> None:
    quiet = Event(index=1, kind=EventKind.ASSISTANT, text="see https://example.com/x")
    child = Event(index=3, kind=EventKind.TOOL_RESULT, text="token " + GH)
    calm_child = Event(index=4, kind=EventKind.TOOL_RESULT, text="ok")
    agent = Event(index=2, kind=EventKind.SUBAGENT, children=[child, calm_child])
    session = _session([quiet, agent])
    clean, _ = redact_session(session)
    assert clean.events is not session.events
    assert clean.events[0] is quiet  # a trigger (`://`) but nothing redacted
    assert clean.events[1] is not agent and clean.events[1].children is not agent.children
    assert clean.events[1].children[0].text == "token [REDACTED:github_token]"
    assert clean.events[1].children[1] is calm_child
    assert child.text == "token " + GH


def test_lone_surrogates_do_not_break_the_scan() -> None:
    # `json.loads('"\\ud800"')` gives a lone surrogate, which strict UTF-8 cannot encode
    text = "bad \ud800 char then " + GH
    session = _session([Event(index=1, kind=EventKind.TOOL_RESULT, text=text)])
    clean, report = redact_session(session)
    assert clean.events[0].text == "bad \ud800 char then [REDACTED:github_token]"
    assert report.by_kind == {"github_token": 1}
