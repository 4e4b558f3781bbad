"""Remove secrets from sessions before anything (judge, store, output) sees them.

Pure: strings in, strings out. Every secret found is replaced by `[REDACTED:<kind>]` and
counted by kind. Patterns are compiled once; each has a cheap literal pre-check so a
27 MB transcript is scanned only by the patterns whose trigger text actually occurs.

Decisions worth knowing (false-positive guards for the generic `NAME=value` rule):

- Numeric values of up to 12 digits are not secrets (`max_tokens=4096`, `"input_tokens": 12`).
- Empty values, `${VAR}` / `$VAR` references, `<placeholder>`, `{{template}}`, `***`, `...`,
  `your_api_key`-style placeholders and `true/false/null/none` are left alone.
- Unquoted values that are plain identifiers without digits (`api_key=api_key`,
  `password: str`, `token = os.environ`) are code, not secrets, unless the name is an
  upper-case env var (`PASSWORD=hunter`), where shells put real values.
- Names must contain SECRET, TOKEN, PASSWORD, PASSWD or API_KEY as a word part: `tokenizer`
  or `secretary` do not count, `max_tokens`, `GITHUB_TOKEN`, `apiKey` do.
- Markers left by a data publisher (`[REDACTED_EMAIL]`) and our own markers are never
  re-redacted.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from scorer.models import Session

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


@dataclass(frozen=True)
class _Rule:
    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    """Literal substrings (case-sensitive) of which one must occur for the pattern to be tried."""
    group: str | None = None
    """Redact only this named group (keep the rest of the match, e.g. the URL's user)."""
    keep: Callable[[re.Match[str]], bool] | None = None
    """Returns True when the match is not a secret after all."""


# A secret starts a token: the character before it is no key character. The check sits
# *after* the first literal character (`s{_B}k-ant-`), because a pattern that starts with
# a lookbehind or `\b` loses re's fast literal-prefix scan (25x slower on 27 MB).
_B = r"(?<![A-Za-z0-9_-].)"
_E = r"(?![A-Za-z0-9_-])"  # end of a token

_PLACEHOLDER = re.compile(
    r"""^(?:\$|<|\{\{|%\(|\*{3,}|x{3,}$|\.{3}|\[REDACTED|
    (?:your|my)[_-]|.*placeholder|.*example|changeme$|dummy$|redacted$)""",
    re.IGNORECASE | re.VERBOSE,
)
_WORDS = {"true", "false", "null", "none", "nil", "undefined", "required", "optional"}
_NUMERIC = re.compile(r"^[+-]?\d{1,12}(?:\.\d+)?$")
_PUNCTUATION = re.compile(r"^[\W_]+$")
_ESCAPE = re.compile(r"^(?:u[0-9a-fA-F]{4}|[ntr])")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z_.]*$")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")

# Spelled out in lower, Capitalized and UPPER case instead of (?i): 5x faster on big
# texts. Names in other mixed cases (`PassWord`) are not recognised.
_KEYWORD = (
    r"(?:secret|Secret|SECRET|token|Token|TOKEN|passw(?:or)?d|Passw(?:or)?d|PASSW(?:OR)?D"
    r"|api[_-]?key|apiKey|Api[_-]?Key|API[_-]?KEY)"
)
_NAME_TAIL = r"s?(?:[_.-][A-Za-z0-9_.-]*)?"
_SECRET_NAME = re.compile(
    rf"(?i)^[A-Za-z0-9_.-]*(?:secret|token|passw(?:or)?d|api[_-]?key){_NAME_TAIL}$"
)


def _not_a_value(value: str, *, quoted: bool, name: str) -> bool:
    """True when an assignment's value is obviously not a secret (see module docstring)."""
    v = value.strip().strip("`")
    if not v or "[REDACTED" in v or v.lower() in _WORDS:
        return True
    if _NUMERIC.match(v) or _PLACEHOLDER.match(v) or _PUNCTUATION.match(v):
        return True
    return not quoted and bool(_IDENT.match(v)) and not name.isupper()


def _name_before(m: re.Match[str]) -> str:
    """The full variable name: the match starts at the keyword, so walk back over the prefix."""
    text, i = m.string, m.start()
    while i > 0 and text[i - 1] in _NAME_CHARS and m.start() - i < 80:
        i -= 1
    name = text[i : m.start()] + m.group("name")
    if i > 0 and text[i - 1] == "\\":  # `\nPASSWORD=` inside JSON: drop the escape's letters
        name = _ESCAPE.sub("", name)
    return name


def _keep_assignment(m: re.Match[str]) -> bool:
    quoted = bool(m.group("q"))
    following = m.string[m.end() : m.end() + 1]
    if not quoted and following in ("(", "["):  # a call or subscript: code, not a value
        return True
    name = _name_before(m)
    if not (name[0].isalpha() or name[0] == "_"):  # `seed=124-tokens=...` is a file name
        return True
    before = m.string[m.start() - 1 : m.start()]
    if before.islower() and m.group("name")[0].islower():  # `tiktoken`, not `accessToken`
        return True
    return _not_a_value(m.group("value"), quoted=quoted, name=name)


def _keep_url_password(m: re.Match[str]) -> bool:
    return _not_a_value(m.group("value"), quoted=True, name="")


# Order matters: specific formats first, so `OPENAI_API_KEY=sk-...` is counted once as an
# OpenAI key and the generic assignment rule then sees a marker and leaves it alone.
_RULES: tuple[_Rule, ...] = (
    _Rule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
            r"|(?:(?:\s|\\[nr])*[A-Za-z0-9+/=]{20,})*)"
        ),
        ("PRIVATE KEY",),
    ),
    _Rule(
        "jwt",
        re.compile(rf"e{_B}yJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{10,}}"),
        ("eyJ",),
    ),
    _Rule("anthropic_key", re.compile(rf"s{_B}k-ant-[A-Za-z0-9_-]{{20,}}"), ("sk-ant-",)),
    _Rule("langfuse_key", re.compile(rf"[ps]{_B}k-lf-[A-Za-z0-9-]{{8,}}"), ("k-lf-",)),
    _Rule(
        "openai_key",
        re.compile(rf"s{_B}k-(?!ant-|lf-)(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{{20,}}{_E}"),
        ("sk-",),
    ),
    _Rule(
        "aws_access_key_id", re.compile(rf"A{_B}(?:KIA|SIA)[A-Z0-9]{{16}}{_E}"), ("AKIA", "ASIA")
    ),
    _Rule(
        "aws_secret_key",
        re.compile(
            r"(?:aws|AWS)_?(?:secret|SECRET)(?:_access|_ACCESS)?_?(?:key|KEY)"
            r"\\*[\"']?\s*[:=]\s*\\*[\"']?"
            r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])"
        ),
        ("aws", "AWS"),
        group="value",
    ),
    _Rule(
        "github_token",
        re.compile(rf"g{_B}(?:h[pousr]_[A-Za-z0-9]{{36,}}|ithub_pat_[A-Za-z0-9_]{{22,}})"),
        ("gh", "github_pat_"),
    ),
    _Rule("huggingface_token", re.compile(rf"h{_B}f_[A-Za-z0-9]{{30,}}{_E}"), ("hf_",)),
    _Rule("gitlab_token", re.compile(rf"g{_B}lpat-[A-Za-z0-9_-]{{20,}}"), ("glpat-",)),
    _Rule(
        "slack_webhook",
        re.compile(r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+"),
        ("hooks.slack.com",),
    ),
    _Rule(
        "slack_token",
        re.compile(rf"x{_B}(?:ox[baprs]-[A-Za-z0-9-]{{10,}}|app-\d-[A-Za-z0-9-]{{10,}})"),
        ("xox", "xapp-"),
    ),
    _Rule(
        "stripe_key",
        re.compile(rf"[srp]{_B}k_(?:live|test)_[A-Za-z0-9]{{16,}}"),
        ("k_live_", "k_test_"),
    ),
    _Rule("google_api_key", re.compile(rf"A{_B}Iza[0-9A-Za-z_-]{{35}}{_E}"), ("AIza",)),
    _Rule(
        "bearer_token",
        re.compile(r"[Bb]earer\s+(?P<value>(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)"),
        ("earer",),
        group="value",
    ),
    _Rule(
        "url_password",
        re.compile(r"://[^\s:/@'\"\\]+:(?P<value>[^\s@/'\"\\]+)@"),
        ("://",),
        group="value",
        keep=_keep_url_password,
    ),
    _Rule(
        "assignment",
        re.compile(
            rf"(?P<name>{_KEYWORD}{_NAME_TAIL})"
            r"\\*[\"']?[ \t]*(?::|=(?!=))[ \t]*(?P<q>\\*[\"'])?"
            r"(?P<value>(?(q)[^\s\"'\\][^\"'\\\r\n]{0,255}|[^\s\"'\\,;&)\]}{(\[]{1,256}))"
        ),
        ("ecret", "ECRET", "oken", "OKEN", "assw", "ASSW", "pi", "PI"),
        group="value",
        keep=_keep_assignment,
    ),
)


def _apply(rule: _Rule, text: str, counts: Counter[str]) -> str:
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
    for rule in _RULES:
        # The triggers are checked on the original text: markers add none that matters.
        if any(t in text for t in rule.triggers):
            text = _apply(rule, text, counts)
    return text, counts


def is_secret_name(name: str) -> bool:
    """True when a key/variable name says its value is a secret (`GITHUB_TOKEN`, `apiKey`)."""
    return bool(_SECRET_NAME.match(name))


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
        if not found and secret_key and not _not_a_value(obj, quoted=True, name=key or ""):
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


def _redact_events(events: list[dict[str, Any]], counts: Counter[str]) -> None:
    for event in events:
        for field in _EVENT_FIELDS:
            if event.get(field) is not None:
                event[field] = _walk(event[field], counts)
        _redact_events(event.get("children") or [], counts)


def redact_session(session: Session) -> tuple[Session, RedactionReport]:
    """Redact a whole session: event texts, tool inputs, meta, subagent children, task,
    title, origin and `extra`.

    Returns:
        A new Session (the input is left untouched) and the RedactionReport.
    """
    counts: Counter[str] = Counter()
    data = session.model_dump()  # a deep copy as plain data; the input is never touched
    for field in _SESSION_FIELDS:
        if data.get(field) is not None:
            data[field] = _walk(data[field], counts)
    _redact_events(data["events"], counts)
    return Session.model_validate(data), RedactionReport.from_counts(counts)
