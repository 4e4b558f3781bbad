"""Remove secrets from sessions before anything (judge, store, output) sees them.

Pure: strings in, strings out; the input session is never mutated. Every secret found is replaced by `[REDACTED:<kind>]` and
counted by kind. The formats live in `secret_rules.py`; each has literal triggers, and one
Aho-Corasick automaton finds which triggers occur in a text in a single pass, so a 27 MB
transcript is scanned only by the rules whose trigger text actually occurs. A session's
strings are all scanned at once, and only the events holding a trigger are redacted.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from itertools import accumulate
from typing import Any

from ahocorasick_rs import BytesAhoCorasick, Implementation
from pydantic import BaseModel, Field

from scorer.models import Event, EventKind, Session
from scorer.prepare.secret_base import SecretRule, not_a_value
from scorer.prepare.secret_rules import RULES, SECRET_NAME

__all__ = ["RedactionReport", "redact_session", "redact_text", "redact_value"]


class RedactionReport(BaseModel):
    """How many secrets were redacted, in total and per kind."""

    total: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_counts(cls, counts: Counter[str]) -> RedactionReport:
        return cls(total=sum(counts.values()), by_kind=dict(sorted(counts.items())))


def marker(kind: str) -> str:
    """The replacement text for one secret of `kind`."""
    return f"[REDACTED:{kind}]"


def _build_prefilter() -> tuple[BytesAhoCorasick, tuple[frozenset[int], ...]]:
    """One Aho-Corasick automaton over every rule's triggers, and per trigger the rules it
    enables. It scans UTF-8: every trigger is ASCII, and no byte of a multi-byte
    character is, so a byte match is a character match."""
    enables: dict[str, set[int]] = {}
    for i, rule in enumerate(RULES):
        for trigger in rule.triggers:
            enables.setdefault(trigger, set()).add(i)
    assert all(t.isascii() and _SEP not in t for t in enables)
    automaton = BytesAhoCorasick([t.encode() for t in enables], implementation=Implementation.DFA)
    return automaton, tuple(frozenset(rules) for rules in enables.values())


_NO_TRIGGERS: frozenset[int] = frozenset()
_SEP = "\x00"  # joins a session's strings for one scan: no trigger contains it
_PREFILTER, _ENABLES = _build_prefilter()
_TRIGGER_TEXT = tuple(dict.fromkeys(t for rule in RULES for t in rule.triggers))
"""Trigger ids (as the automaton numbers them) to their text."""


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates come from JSON escapes


def _hits(data: bytes) -> list[tuple[int, int, int]]:
    """(trigger, start, end) of every trigger occurrence in `data`, overlaps included."""
    return _PREFILTER.find_matches_as_indexes(data, overlapping=True)


def _triggers_in(text: str) -> frozenset[int]:
    """Every trigger that occurs in `text`, found in one pass."""
    return frozenset(trigger for trigger, _, _ in _hits(_utf8(text)))


@lru_cache(maxsize=4096)
def _rules_for(found: frozenset[int]) -> tuple[SecretRule, ...]:
    wanted: set[int] = set()
    for trigger in found:
        wanted |= _ENABLES[trigger]
    return tuple(rule for i, rule in enumerate(RULES) if i in wanted)


def _apply(
    rule: SecretRule, text: str, counts: Counter[str], present: frozenset[str] | None = None
) -> str:
    if rule.rewrite is not None:
        return rule.rewrite(text, counts)
    repl_text = marker(rule.kind)

    def repl(m: re.Match[str]) -> str:
        if "[REDACTED" in m.group(0) or (rule.keep and rule.keep(m)):
            return m.group(0)  # already redacted (by an earlier rule), or not a secret
        if rule.replace is not None:
            return rule.replace(m, counts)
        counts[rule.kind] += 1
        if rule.group is None:
            return repl_text
        start, end = m.span(rule.group)
        whole = m.group(0)
        return whole[: start - m.start()] + repl_text + whole[end - m.start() :]

    if rule.back is None:
        return rule.pattern.sub(repl, text)
    triggers = rule.triggers if present is None else [t for t in rule.triggers if t in present]
    return _apply_anchored(rule, text, repl, triggers)


def _apply_anchored(
    rule: SecretRule,
    text: str,
    repl: Callable[[re.Match[str]], str],
    triggers: Sequence[str],
) -> str:
    """`pattern.sub(repl, text)` for matches that start near the rule's triggers.

    A match of an anchored rule starts at its trigger or at most `back` characters before
    it, walking back over name characters only (`[\\w.-]`, `?`, `&`, and for line rules
    spaces: `SecretRule.anchor`). Each such start is tried with `pattern.match`: a few
    attempts per trigger instead of a scan of the whole text.
    """
    assert rule.back is not None
    chars = _ANCHOR_CHARS | rule.anchor
    starts = sorted({i for t in triggers for i in _find_all(text, t)})
    parts: list[str] = []
    done = 0  # text[:done] is decided
    for at in starts:
        if at < done:
            continue
        first = at
        while first > done and at - first < rule.back and text[first - 1] in chars:
            first -= 1
        if rule.line_start:  # the match starts where the line does, or nowhere
            if first and text[first - 1] != "\n":
                continue
            at = first
        for i in range(first, at + 1):
            m = rule.pattern.match(text, i)
            if m is not None:
                parts += [text[done : m.start()], repl(m)]
                done = max(m.end(), m.start() + 1)
                break
    return "".join(parts) + text[done:] if parts else text


_ANCHOR_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-?&")


def _find_all(text: str, needle: str) -> Iterator[int]:
    at = text.find(needle)
    while at != -1:
        yield at
        at = text.find(needle, at + 1)


def redact_text(text: str) -> tuple[str, Counter[str]]:
    """Redact every secret in `text`.

    Args:
        text: Any text (a tool output, a prompt, a raw JSONL transcript).

    Returns:
        The redacted text and a Counter of redactions by kind (e.g. `{"github_token": 2}`).
    """
    counts: Counter[str] = Counter()
    if not text:
        return text, counts
    return _redact_str(text, counts, _triggers_in(text)), counts


def _redact_str(text: str, counts: Counter[str], triggers: frozenset[int]) -> str:
    # The triggers are found in the original text: markers add none that matters.
    present = _present(triggers)
    for rule in _rules_for(triggers):
        text = _apply(rule, text, counts, present)
    return text


@lru_cache(maxsize=4096)
def _present(triggers: frozenset[int]) -> frozenset[str]:
    return frozenset(_TRIGGER_TEXT[i] for i in triggers)


def is_secret_name(name: str) -> bool:
    """True when a key/variable name says its value is a secret (`GITHUB_TOKEN`, `apiKey`)."""
    return bool(SECRET_NAME.match(name))


def redact_value(obj: Any) -> tuple[Any, Counter[str]]:
    """Redact a JSON-ish value (dicts, lists, strings, scalars) into a new object.

    Strings are passed through `redact_text`; a string under a dict key that names a
    secret (`{"api_key": "..."}`) is redacted whole unless it is an obvious non-secret.
    Dict keys themselves are kept. The input is never mutated.
    """
    counts: Counter[str] = Counter()
    return _walk(obj, counts), counts


_Triggers = Callable[[str], frozenset[int]]
"""Which triggers occur in a string (`_triggers_in`, or what a scan already found)."""


def _walk(
    obj: Any, counts: Counter[str], key: str | None = None, triggers: _Triggers = _triggers_in
) -> Any:
    if isinstance(obj, str):
        if not obj:
            return obj
        if not (key and _secret_name(key)):
            return _redact_str(obj, counts, triggers(obj))
        found: Counter[str] = Counter()
        text = _redact_str(obj, found, triggers(obj))
        counts.update(found)
        if not found and not not_a_value(obj, quoted=True, name=key):
            counts["assignment"] += 1
            return marker("assignment")
        return text
    if isinstance(obj, dict):
        return {
            k: _walk(v, counts, k if isinstance(k, str) else None, triggers) for k, v in obj.items()
        }
    if isinstance(obj, list | tuple):
        return [_walk(v, counts, None, triggers) for v in obj]
    return obj


@lru_cache(maxsize=4096)
def _secret_name(key: str) -> bool:
    return is_secret_name(key)


_SESSION_FIELDS = ("origin", "title", "task", "cwd", "project", "extra")
_EVENT_FIELDS = ("text", "tool_input", "meta")


def _redact_fields(
    model: Event | Session,
    fields: tuple[str, ...],
    counts: Counter[str],
    triggers: _Triggers = _triggers_in,
) -> dict:
    """New values for the model's free-text fields (fresh containers, secrets replaced)."""
    out: dict[str, Any] = {}
    for field in fields:
        value = getattr(model, field)
        if value is not None:
            out[field] = _walk(value, counts, None, triggers)
    return out


_CONTAINERS = (dict, list, tuple)


def _collect(obj: dict | list | tuple, out: list[str]) -> bool:
    """Append every string inside `obj` to `out` (in `_walk`'s order).

    Returns True when a string sits under a dict key that names a secret: `_walk` may then
    redact it whole, trigger or not.
    """
    flagged = False
    if isinstance(obj, dict):
        for key, value in obj.items():
            if isinstance(value, str):
                out.append(value)
                flagged = flagged or (isinstance(key, str) and bool(key) and _secret_name(key))
            elif isinstance(value, _CONTAINERS):
                flagged = _collect(value, out) or flagged
        return flagged
    for value in obj:
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, _CONTAINERS):
            flagged = _collect(value, out) or flagged
    return flagged


def _depth_first(events: list[Event]) -> Iterator[Event]:
    for event in events:
        yield event
        if event.children:
            yield from _depth_first(event.children)


def _scan(events: list[Event]) -> tuple[set[int], _Triggers]:
    """Scan every string of the event tree in one pass.

    Returns:
        The ids of the events `_walk` could change (a trigger occurs in one of their
        strings, or a secret-named key holds a string), and the triggers of each string.
    """
    strings: list[str] = []
    owners: list[int] = []  # owners[i]: id of the event that holds strings[i]
    suspects: set[int] = set()
    for event in _depth_first(events):
        start = len(strings)
        strings.append(event.text)
        flagged = False
        if event.tool_input:
            flagged = _collect(event.tool_input, strings)
        if event.meta:
            flagged = _collect(event.meta, strings) or flagged
        if flagged:
            suspects.add(id(event))
        owners.extend([id(event)] * (len(strings) - start))
    encoded = [_utf8(s) for s in strings]
    starts = list(accumulate((len(b) + 1 for b in encoded), initial=0))
    found: dict[int, set[int]] = {}
    for trigger, start, _ in _hits(_SEP.encode().join(encoded)):
        i = bisect_right(starts, start) - 1
        found.setdefault(i, set()).add(trigger)
        suspects.add(owners[i])
    # by object id: the strings stay alive (the session holds them) while redaction runs
    known = {id(strings[i]): frozenset(triggers) for i, triggers in found.items()}
    scanned = set(map(id, strings))

    def triggers(text: str) -> frozenset[int]:
        hit = known.get(id(text))
        if hit is not None:
            return hit
        return _NO_TRIGGERS if id(text) in scanned else _triggers_in(text)

    return suspects, triggers


def _redact_events(
    events: list[Event], suspects: set[int], triggers: _Triggers, counts: Counter[str]
) -> tuple[list[Event], bool]:
    """The events with secrets replaced, and whether any changed.

    An event nothing was redacted from is kept as it is (shared with the input session;
    nothing downstream mutates events). A changed one is a copy with fresh containers:
    `model_copy(update=)` skips validation, as redaction only swaps strings for strings.
    """
    out: list[Event] = []
    changed = False
    for event in events:
        if not event.children and id(event) not in suspects:
            out.append(event)  # the common case
            continue
        update: dict[str, Any] = {}
        if id(event) in suspects or _wrapped(event):
            found: Counter[str] = Counter()
            fields = _redact_fields(_unwrapped(event), _EVENT_FIELDS, found, triggers)
            if found:  # nothing counted means every string came back unchanged
                counts.update(found)
                update = fields
        if event.children:
            children, children_changed = _redact_events(event.children, suspects, triggers, counts)
            if children_changed:
                update["children"] = children
        if update:
            event = event.model_copy(update=update)
            changed = True
        out.append(event)
    return out, changed


_MIN_WRAP = 60
"""Panes narrower than this are not unwrapped (a short line is rarely a cut one)."""


def _wrap_width(text: str) -> int:
    """The width a pane capture wraps at: its longest line, when some line is cut there."""
    if text.count("\n") < 1:
        return 0
    width = max(map(len, text.split("\n")[:-1]))
    return width if width >= _MIN_WRAP else 0


def _wrapped(event: Event) -> bool:
    return event.kind == EventKind.TERMINAL and _wrap_width(event.text) > 0


def _unwrapped(event: Event) -> Event:
    """A terminal event with each line cut at the pane's width joined to the next, so a
    secret wrapped over two lines is seen (and redacted) whole. Other events as they are.
    Only used for redaction: an event nothing is redacted from keeps its text."""
    if not _wrapped(event):
        return event
    width = _wrap_width(event.text)
    lines = event.text.split("\n")
    joined = "".join(line + ("" if len(line) == width else "\n") for line in lines[:-1])
    return event.model_copy(update={"text": joined + lines[-1]})


def redact_session(session: Session) -> tuple[Session, RedactionReport]:
    """Redact a whole session: event texts, tool inputs, meta, subagent children, task,
    title, origin and `extra`.

    Returns:
        A new Session (the input is left untouched; events with nothing to redact are
        shared with it) and the RedactionReport.
    """
    counts: Counter[str] = Counter()
    update = _redact_fields(session, _SESSION_FIELDS, counts)
    suspects, triggers = _scan(session.events)
    update["events"], _ = _redact_events(session.events, suspects, triggers, counts)
    update["git_branches"] = list(session.git_branches)
    update["models"] = list(session.models)
    update["usage"] = session.usage.model_copy()
    return session.model_copy(update=update), RedactionReport.from_counts(counts)
