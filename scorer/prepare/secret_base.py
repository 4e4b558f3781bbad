"""The parts every secret rule is made of: `SecretRule`, token boundaries, and the test
for values that are obviously not secrets (placeholders, numbers, code identifiers).

See `secret_rules.py` for the rules themselves and the reasons behind the guards.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretRule:
    """One secret format."""

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    """Literal substrings (case-sensitive) of which one must occur for the pattern to be tried."""
    group: str | None = None
    """Redact only this named group (keep the rest of the match, e.g. the URL's user)."""
    keep: Callable[[re.Match[str]], bool] | None = None
    """Returns True when the match is not a secret after all."""
    rewrite: Callable[[str, Counter[str]], str] | None = None
    """Redacts a whole text itself (counting what it redacted) instead of `pattern`: for
    rules that need more than one regex (the lines of a block)."""
    replace: Callable[[re.Match[str], Counter[str]], str] | None = None
    """The replacement of one match (counting what it redacted), instead of a marker."""
    back: int | None = None
    """Anchored rule: a match starts at most `back` characters before one of the
    triggers, so the pattern is tried only around trigger occurrences (a pattern that
    starts with an alternation is slow to scan a whole 27 MB session with)."""
    line_start: bool = False
    """Anchored rule: a match starts at the start of a line (only that start is tried)."""
    anchor: frozenset[str] = frozenset()
    """Anchored rule: characters besides `[\\w.?&-]` a match may start behind (spaces for
    rules that match from the start of a line)."""


# A secret starts a token: the character before it is no key character. The check sits
# *after* the first literal character (`s{B}k-ant-`), because a pattern that starts with
# a lookbehind or `\b` loses re's fast literal-prefix scan (25x slower on 27 MB).
B = r"(?<![A-Za-z0-9_-].)"
E = r"(?![A-Za-z0-9_-])"  # end of a token

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
_RELATIVE_PATH = re.compile(r"^(?:\.{1,2}/|\.[a-z]+$)")
_PORT_PATH = re.compile(r"^\d{1,5}(?:/|$)")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")


def not_a_value(value: str, *, quoted: bool, name: str) -> bool:
    """True when an assignment's value is obviously not a secret (see `secret_rules`)."""
    v = value.strip().strip("`")
    if not v or "[REDACTED" in v or v.lower() in _WORDS:
        return True
    if _NUMERIC.match(v) or _PLACEHOLDER.match(v) or _PUNCTUATION.match(v):
        return True
    if not quoted and _RELATIVE_PATH.match(v):  # `credentials: .env`, `token=./token.txt`
        return True
    return not quoted and bool(_IDENT.match(v)) and not name.isupper()


def name_before(m: re.Match[str], group: str = "name") -> str:
    """The full variable name: the match starts at the keyword, so walk back over the prefix."""
    text, i = m.string, m.start(group)
    while i > 0 and text[i - 1] in _NAME_CHARS and m.start(group) - i < 80:
        i -= 1
    name = text[i : m.start(group)] + m.group(group)
    if i > 0 and text[i - 1] == "\\":  # `\nPASSWORD=` inside JSON: drop the escape's letters
        name = _ESCAPE.sub("", name)
    return name


def keep_placeholder(m: re.Match[str]) -> bool:
    return not_a_value(m.group("value"), quoted=True, name="")


def keep_url_password(m: re.Match[str]) -> bool:
    value = m.group("value")
    return bool(_PORT_PATH.match(value)) or not_a_value(value, quoted=True, name="")


def prefixed(kind: str, pattern: str, *triggers: str) -> SecretRule:
    """A token with a fixed prefix: the whole match is the secret."""
    return SecretRule(kind, re.compile(pattern), triggers)


def valued(
    kind: str,
    pattern: str,
    triggers: tuple[str, ...],
    keep: Callable[[re.Match[str]], bool] | None = keep_placeholder,
    back: int | None = None,
) -> SecretRule:
    """A secret in the `value` group of a match (the name or flag before it is kept)."""
    return SecretRule(kind, re.compile(pattern), triggers, group="value", keep=keep, back=back)
