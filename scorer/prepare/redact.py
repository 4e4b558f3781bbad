"""Remove secrets from sessions before anything (judge, store, output) sees them.

Pure: strings in, strings out; the input session is never mutated. Every secret found is replaced by `[REDACTED:<kind>]` and
counted by kind. The formats live in `secret_rules.py`; each has literal triggers, and one
combined regex finds which triggers occur in a text in a single pass, so a 27 MB
transcript is scanned only by the rules whose trigger text actually occurs.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any

import ahocorasick
from pydantic import BaseModel, Field

from scorer.models import Event, Session
from scorer.prepare.secret_rules import RULES, SECRET_NAME, SecretRule, not_a_value

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


def _build_prefilter() -> tuple[ahocorasick.Automaton, dict[str, frozenset[int]]]:
    """One Aho-Corasick automaton over every rule's triggers, and trigger → rules it enables."""
    automaton = ahocorasick.Automaton()
    enables: dict[str, set[int]] = {}
    for i, rule in enumerate(RULES):
        for trigger in rule.triggers:
            enables.setdefault(trigger, set()).add(i)
    for trigger in enables:
        automaton.add_word(trigger, trigger)
    automaton.make_automaton()
    return automaton, {t: frozenset(rules) for t, rules in enables.items()}


_PREFILTER, _ENABLES = _build_prefilter()


def _triggers_in(text: str) -> frozenset[str]:
    """Every trigger that occurs in `text`, found in one pass (overlaps included)."""
    return frozenset(trigger for _, trigger in _PREFILTER.iter(text))


@lru_cache(maxsize=4096)
def _rules_for(found: frozenset[str]) -> tuple[SecretRule, ...]:
    wanted: set[int] = set()
    for trigger in found:
        wanted |= _ENABLES[trigger]
    return tuple(rule for i, rule in enumerate(RULES) if i in wanted)


def _apply(rule: SecretRule, text: str, counts: Counter[str]) -> str:
    repl_text = marker(rule.kind)

    def repl(m: re.Match[str]) -> str:
        if "[REDACTED" in m.group(0) or (rule.keep and rule.keep(m)):
            return m.group(0)  # already redacted (by an earlier rule), or not a secret
        counts[rule.kind] += 1
        if rule.group is None:
            return repl_text
        start, end = m.span(rule.group)
        whole = m.group(0)
        return whole[: start - m.start()] + repl_text + whole[end - m.start() :]

    return rule.pattern.sub(repl, text)


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
    # The triggers are found in the original text: markers add none that matters.
    for rule in _rules_for(_triggers_in(text)):
        text = _apply(rule, text, counts)
    return text, counts


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


def _walk(obj: Any, counts: Counter[str], key: str | None = None) -> Any:
    if isinstance(obj, str):
        text, found = redact_text(obj)
        counts.update(found)
        secret_key = bool(key and is_secret_name(key))
        if not found and secret_key and not not_a_value(obj, quoted=True, name=key or ""):
            counts["assignment"] += 1
            return marker("assignment")
        return text
    if isinstance(obj, dict):
        return {k: _walk(v, counts, k if isinstance(k, str) else None) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_walk(v, counts) for v in obj]
    return obj


_SESSION_FIELDS = ("origin", "title", "task", "cwd", "project", "extra")
_EVENT_FIELDS = ("text", "tool_input", "meta")


def _redact_fields(model: Event | Session, fields: tuple[str, ...], counts: Counter[str]) -> dict:
    """New values for the model's free-text fields (fresh containers, secrets replaced)."""
    out: dict[str, Any] = {}
    for field in fields:
        value = getattr(model, field)
        if value is not None:
            out[field] = _walk(value, counts)
    return out


def _redact_events(events: list[Event], counts: Counter[str]) -> list[Event]:
    # `model_copy(update=)` skips validation: the events were validated when the source
    # built them, and redaction only swaps strings for strings.
    return [
        event.model_copy(
            update={
                **_redact_fields(event, _EVENT_FIELDS, counts),
                "children": _redact_events(event.children, counts),
            }
        )
        for event in events
    ]


def redact_session(session: Session) -> tuple[Session, RedactionReport]:
    """Redact a whole session: event texts, tool inputs, meta, subagent children, task,
    title, origin and `extra`.

    Returns:
        A new Session (the input is left untouched) and the RedactionReport.
    """
    counts: Counter[str] = Counter()
    update = _redact_fields(session, _SESSION_FIELDS, counts)
    update["events"] = _redact_events(session.events, counts)
    update["git_branches"] = list(session.git_branches)
    update["models"] = list(session.models)
    update["usage"] = session.usage.model_copy()
    return session.model_copy(update=update), RedactionReport.from_counts(counts)
