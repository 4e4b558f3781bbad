"""The redaction engine: which rules a text needs, applying them, and walking JSON values.

Every secret found is replaced by `[REDACTED:<kind>]` and counted by kind. The formats
live in `rules.py`; each has literal triggers, and one Aho-Corasick automaton finds
which triggers occur in a text in a single pass, so a 27 MB transcript is scanned only by
the rules whose trigger text actually occurs. `redact.py` applies this to whole sessions.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache
from typing import Any

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from scorer.models import Event, Session
from scorer.prepare.secrets.base import (
    SECRET_NAME,
    Found,
    SecretRule,
    find_all_hits,
    not_a_value,
    note,
)
from scorer.prepare.secrets.entropy import ENTROPY_RULE, redact_in_context, register_inner_check
from scorer.prepare.secrets.rules import RULES
from scorer.prepare.secrets.spread import spread_within


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
    assert all(t.isascii() and SEP not in t for t in enables)
    automaton = BytesAhoCorasick([t.encode() for t in enables], implementation=Implementation.DFA)
    return automaton, tuple(frozenset(rules) for rules in enables.values())


NO_TRIGGERS: frozenset[int] = frozenset()
SEP = "\x00"  # joins a session's strings for one scan: no trigger contains it
_PREFILTER, _ENABLES = _build_prefilter()
_TRIGGER_TEXT = tuple(dict.fromkeys(t for rule in RULES for t in rule.triggers))
"""Trigger ids (as the automaton numbers them) to their text."""


def utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # lone surrogates come from JSON escapes


def trigger_hits(data: bytes) -> list[tuple[int, int, int]]:
    """(trigger, start, end) of every trigger occurrence in `data`, overlaps included."""
    return _PREFILTER.find_matches_as_indexes(data, overlapping=True)


def triggers_in(text: str) -> frozenset[int]:
    """Every trigger that occurs in `text`, found in one pass."""
    return frozenset(trigger for trigger, _, _ in trigger_hits(utf8(text)))


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
        note(counts, rule.kind, m.group(rule.group or 0))
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
    starts = _trigger_starts(rule, text, triggers)
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
            if rule.word_start and i and (text[i - 1].isalnum() or text[i - 1] in "_-"):
                continue
            m = rule.pattern.match(text, i)
            if m is not None:
                parts += [text[done : m.start()], repl(m)]
                done = max(m.end(), m.start() + 1)
                break
    return "".join(parts) + text[done:] if parts else text


_BIG = 200_000
"""From this length on, a rule's triggers are found in one automaton pass, not one
`str.find` pass each."""
_RULE_AUTOMATA: dict[tuple[str, ...], AhoCorasick] = {}


def _trigger_starts(rule: SecretRule, text: str, triggers: Sequence[str]) -> list[int]:
    """Where `triggers` occur in `text`, sorted."""
    if len(text) < _BIG or len(triggers) < 3:
        return sorted({i for t in triggers for i in _find_all(text, t)})
    automaton = _RULE_AUTOMATA.get(rule.triggers)
    if automaton is None:
        automaton = AhoCorasick(list(rule.triggers), implementation=Implementation.DFA)
        _RULE_AUTOMATA[rule.triggers] = automaton
    wanted = {rule.triggers.index(t) for t in triggers}
    hits = find_all_hits(automaton, text, overlapping=True)
    return sorted({start for i, start, _ in hits if i in wanted})


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
    counts = Found()
    if not text:
        return text, counts
    return redact_str(text, counts, triggers_in(text)), counts


def redact_str(
    text: str, counts: Counter[str], triggers: frozenset[int], context: bool = False
) -> str:
    """Every rule enabled by `triggers` (found in the original text: markers add none that
    matters), then the entropy layer once more when a rule redacted something (a random
    token beside a redacted one is its partner) or the text is a secret command's output
    (`context`), then every other occurrence of what was found."""
    if not triggers and not context:
        return text  # no rule can match (the common case: skip the bookkeeping)
    found = Found()
    present = _present(triggers)
    rules = _rules_for(triggers)
    for rule in rules:
        text = _apply(rule, text, found, present)
    if context:
        text = redact_in_context(text, found)
    elif found and ENTROPY_RULE not in rules:
        text = _apply(ENTROPY_RULE, text, found)
    if found.secrets:
        text = spread_within(text, found.secrets, found)
    merge_found(counts, found)
    return text


def merge_found(counts: Counter[str], found: Found) -> None:
    counts.update(found)
    if isinstance(counts, Found):
        for value, kind in found.secrets.items():
            counts.secrets.setdefault(value, kind)


def _has_secret(text: str) -> bool:
    """Whether any rule redacts something in `text` (the entropy layer's decode check)."""
    return bool(redact_text(text)[1])


register_inner_check(_has_secret)


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
    counts = Found()
    return _walk(obj, counts), counts


Triggers = Callable[[str], frozenset[int]]
"""Which triggers occur in a string (`triggers_in`, or what a scan already found)."""


def _walk(
    obj: Any, counts: Counter[str], key: str | None = None, triggers: Triggers = triggers_in
) -> Any:
    if isinstance(obj, str):
        if not obj:
            return obj
        if not (key and secret_name_cached(key)):
            return redact_str(obj, counts, triggers(obj))
        found = Found()
        text = redact_str(obj, found, triggers(obj))
        merge_found(counts, found)
        if not found and not not_a_value(obj, quoted=True, name=key):
            note(counts, "assignment", obj)
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
def secret_name_cached(key: str) -> bool:
    return is_secret_name(key)


SESSION_FIELDS = ("origin", "title", "task", "cwd", "project", "extra")
EVENT_FIELDS = ("text", "tool_input", "meta")


def redact_fields(
    model: Event | Session,
    fields: tuple[str, ...],
    counts: Counter[str],
    triggers: Triggers = triggers_in,
) -> dict:
    """New values for the model's free-text fields (fresh containers, secrets replaced)."""
    out: dict[str, Any] = {}
    for field in fields:
        value = getattr(model, field)
        if value is not None:
            out[field] = _walk(value, counts, None, triggers)
    return out
