"""Remove secrets from sessions before anything (judge, store, output) sees them.

Pure: strings in, strings out; the input session is never mutated. The rules and the
engine that applies them to a text live in `secrets/` (one module per layer); here a
whole session is redacted: its strings are all scanned at once (only the events holding a
trigger are redacted), a command's output is read knowing its command, pane lines cut at
the terminal's width are joined, and every distinctive value found anywhere is then
redacted everywhere in the session (`secrets/spread.py`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterator
from itertools import accumulate
from typing import Any

from pydantic import BaseModel, Field

from scorer.models import Event, EventKind, Session
from scorer.prepare.secrets.base import Found
from scorer.prepare.secrets.entropy import lone_token, redact_in_context
from scorer.prepare.secrets.scan import (
    EVENT_FIELDS,
    NO_TRIGGERS,
    SEP,
    SESSION_FIELDS,
    Triggers,
    is_secret_name,
    marker,
    merge_found,
    redact_fields,
    redact_text,
    redact_value,
    secret_name_cached,
    trigger_hits,
    triggers_in,
    utf8,
)
from scorer.prepare.secrets.spread import Spreader

__all__ = [
    "RedactionReport",
    "is_secret_name",
    "marker",
    "redact_session",
    "redact_text",
    "redact_value",
]


class RedactionReport(BaseModel):
    """How many secrets were redacted, in total and per kind."""

    total: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)

    @classmethod
    def from_counts(cls, counts: Counter[str]) -> RedactionReport:
        return cls(total=sum(counts.values()), by_kind=dict(sorted(counts.items())))


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
                flagged = flagged or (
                    isinstance(key, str) and bool(key) and secret_name_cached(key)
                )
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


def _scan(events: list[Event]) -> tuple[set[int], Triggers]:
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
    encoded = [utf8(s) for s in strings]
    starts = list(accumulate((len(b) + 1 for b in encoded), initial=0))
    found: dict[int, set[int]] = {}
    for trigger, start, _ in trigger_hits(SEP.encode().join(encoded)):
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
        return NO_TRIGGERS if id(text) in scanned else triggers_in(text)

    return suspects, triggers


def _redact_events(
    events: list[Event],
    suspects: set[int],
    triggers: Triggers,
    counts: Found,
    secret_calls: set[str],
) -> tuple[list[Event], bool]:
    """The events with secrets replaced, and whether any changed.

    An event nothing was redacted from is kept as it is (shared with the input session;
    nothing downstream mutates events). A changed one is a copy with fresh containers:
    `model_copy(update=)` skips validation, as redaction only swaps strings for strings.
    `secret_calls` collects the ids of the tool calls whose command reads a secret; their
    results are read as a secret's output (`_redact_output`).
    """
    out: list[Event] = []
    changed = False
    for event in events:
        if event.kind == EventKind.TOOL_CALL and event.tool_use_id and _reads_secret(event):
            secret_calls.add(event.tool_use_id)
        output = event.kind == EventKind.TOOL_RESULT and bool(event.text)
        if not event.children and id(event) not in suspects and not output:
            out.append(event)  # the common case
            continue
        update: dict[str, Any] = {}
        if id(event) in suspects or _wrapped(event):
            found = Found()
            fields = redact_fields(_unwrapped(event), EVENT_FIELDS, found, triggers)
            if found:  # nothing counted means every string came back unchanged
                merge_found(counts, found)
                update = fields
        if output:
            text = _redact_output(update.get("text", event.text), event, secret_calls, counts)
            if text is not None:
                update["text"] = text
        if event.children:
            children, children_changed = _redact_events(
                event.children, suspects, triggers, counts, secret_calls
            )
            if children_changed:
                update["children"] = children
        if update:
            event = event.model_copy(update=update)
            changed = True
        out.append(event)
    return out, changed


_SECRET_READER = re.compile(
    r"(?i)\b(?:cat|less|more|head|tail|bat|type|Get-Content)\b[^\n|;&]{0,200}?"
    r"(?:\.env\b|\.netrc|\.pgpass|\.npmrc|\.pypirc|credentials|secrets?\b|passw|token|"
    r"\.pem\b|\.key\b|id_(?:rsa|ed25519|ecdsa)\b|kubeconfig|\.kube/config|\.docker/config)"
    r"|\b(?:printenv|op[ \t]+(?:read|item[ \t]+get)|pass[ \t]+show|gopass[ \t]+show"
    r"|vault[ \t]+(?:kv[ \t]+get|read)|get-secret-value|secrets[ \t]+versions[ \t]+access"
    r"|keyvault[ \t]+secret[ \t]+show|get[ \t]+secrets?\b|find-(?:generic|internet)-password"
    r"|print-(?:access|identity)-token|get-login-password|get-session-token|auth[ \t:]+token"
    r"|--show-token|--with-decryption|base64[ \t]+(?:-d|-D|--decode)|openssl[ \t]+rand"
    r"|pwgen|token_(?:urlsafe|hex|bytes)|secrets[ \t]+get|gpg[ \t]+(?:-d|--decrypt))"
    r"|\becho[ \t]+[\"']?\$\{?\w*(?:TOKEN|SECRET|PASSW|PASS|KEY|PWD)\w*"
)
"""A command whose output is a secret or a file of them (`op read`, `cat .env`,
`kubectl get secret … -o yaml | base64 -d`, `echo $GITHUB_TOKEN`)."""


_READER_WORDS = (
    *("cat", "less", "more", "head", "tail", "bat", "type", "printenv", "op "),
    *("pass", "vault", "secret", "password", "token", "auth", "base64", "openssl", "pwgen"),
    *("gpg", "echo", "get-", "find-", "print-", "decrypt"),
    "get-content",
)
"""A literal of each branch of `_SECRET_READER`: most commands hold none (a fast test)."""


def _reads_secret(event: Event) -> bool:
    command = (event.tool_input or {}).get("command")
    if not isinstance(command, str):
        return False
    low = command.lower()
    if not any(w in low for w in _READER_WORDS):
        return False
    return bool(_SECRET_READER.search(command))


def _redact_output(text: str, event: Event, secret_calls: set[str], counts: Found) -> str | None:
    """A tool result's text with the secrets its command tells us about redacted, or None
    when nothing changed: a lone generated token on its first line (what a password
    manager or token generator prints), and, after a command that reads secrets, every
    random-looking token in its first lines whatever the name before it."""
    found = Found()
    secret = event.tool_use_id in secret_calls
    out = lone_token(text, found, hex_ok=secret)
    if secret:
        out = redact_in_context(out, found)
    if not found:
        return None
    merge_found(counts, found)
    return out


def _spread(events: list[Event], spreader: Spreader, counts: Found) -> tuple[list[Event], bool]:
    """Every other occurrence of a value redacted somewhere in the session, redacted."""
    out: list[Event] = []
    changed = False
    for event in events:
        found = Found()
        update = _spread_fields(event, EVENT_FIELDS, spreader, found)
        if event.children:
            children, children_changed = _spread(event.children, spreader, counts)
            if children_changed:
                update["children"] = children
        if update:
            merge_found(counts, found)
            event = event.model_copy(update=update)
            changed = True
        out.append(event)
    return out, changed


def _spread_fields(
    model: Event | Session, fields: tuple[str, ...], spreader: Spreader, found: Found
) -> dict[str, Any]:
    update: dict[str, Any] = {}
    for field in fields:
        value = getattr(model, field)
        if value:
            new = _spread_value(value, spreader, found)
            if found and new != value:
                update[field] = new
    return update


def _spread_value(value: Any, spreader: Spreader, found: Found) -> Any:
    if isinstance(value, str):
        return spreader.redact(value, found)
    if isinstance(value, dict):
        return {k: _spread_value(v, spreader, found) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_spread_value(v, spreader, found) for v in value]
    return value


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
    counts = Found()
    update = redact_fields(session, SESSION_FIELDS, counts)
    suspects, triggers = _scan(session.events)
    update["events"], _ = _redact_events(session.events, suspects, triggers, counts, set())
    spreader = Spreader(counts.secrets)
    if spreader:  # a value found in one place is redacted wherever else it occurs
        found = Found()
        update["events"], _ = _spread(update["events"], spreader, found)
        clean = session.model_copy(update=update)
        update.update(_spread_fields(clean, SESSION_FIELDS, spreader, found))
        merge_found(counts, found)
    update["git_branches"] = list(session.git_branches)
    update["models"] = list(session.models)
    update["usage"] = session.usage.model_copy()
    return session.model_copy(update=update), RedactionReport.from_counts(counts)
