"""The parts every secret rule is made of: `SecretRule`, token boundaries, the record of
what was redacted (`Found`), the test for values that are obviously not secrets
(placeholders, numbers, code identifiers) and the test for values that look generated.

See `rules.py` for the rules themselves and the reasons behind the guards.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class Found(Counter[str]):
    """Redactions counted by kind, and each redacted value with its kind (so a value found
    in one place can be redacted wherever else it occurs: `spread.py`)."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: dict[str, str] = {}


def note(counts: Counter[str], kind: str, value: str) -> None:
    """Count one redaction of `value` as `kind` (and keep the value when `counts` does)."""
    counts[kind] += 1
    if isinstance(counts, Found) and value:
        counts.secrets.setdefault(value, kind)


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
    word_start: bool = False
    """Anchored rule: a match starts where a word does (the pattern begins with
    `(?<![\\w-])`), so only those starts are tried."""
    anchor: frozenset[str] = frozenset()
    """Anchored rule: characters besides `[\\w.?&-]` a match may start behind (spaces for
    rules that match from the start of a line)."""


# A secret starts a token: the character before it is no key character. The check sits
# *after* the first literal character (`s{B}k-ant-`), because a pattern that starts with
# a lookbehind or `\b` loses re's fast literal-prefix scan (25x slower on 27 MB).
B = r"(?<![A-Za-z0-9_-].)"
E = r"(?![A-Za-z0-9_-])"  # end of a token

# The rest of the name: a separator, or a camelCase word (`SecretAccessKey`), never more
# lower-case letters (`tokenizer`, `passage` are not secrets).
NAME_TAIL = r"s?(?:(?:[_.-]|(?<=[a-z])(?=[A-Z]))[A-Za-z0-9_.-]*)?"
SECRET_NAME = re.compile(
    r"(?i)^(?:_?auth|authorization|credentials?|authtoken|"
    r"[A-Za-z0-9_.-]*(?:secret|token|passw(?:or)?d|passphrase|(?:api|private|access|account"
    r"|client|signing|encryption|master|preshared)[_-]?key|key[_-]?data)"
    rf"{NAME_TAIL})$"
)
"""A dict key whose string value is a secret (`{"auth": "..."}` in a Docker config)."""


# Words that make `<word>token` / `<word>pass` (no separator) a secret's name
# (`authtoken`, `dbpass`), unlike other words run into them (`tiktoken`, `bypass`).
SECRET_PREFIXES = (
    "auth", "access", "refresh", "api", "bearer", "session", "csrf", "xsrf", "bot", "user",
    "app", "oauth", "client", "personal", "deploy", "service", "runner", "db", "root",
    "admin", "smtp", "mail", "redis", "mysql", "pg", "mongo", "ldap", "ftp", "vpn", "wifi",
    "master", "id", "sudo", "login", "keystore", "store", "key",
)  # fmt: skip

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
    """True when an assignment's value is obviously not a secret (see `rules`)."""
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


_HEX_ONLY = re.compile(r"(?:0x)?[0-9a-fA-F]+")
_RUN = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+|[^A-Za-z\d]+")
_VOWELS = frozenset("aeiouyAEIOUY")
_SEPARATORS = re.compile(r"[/._~:+-]+")
_PLAIN_PART = re.compile(
    r"[a-z]+\d{0,3}|\d+[a-z]?|[A-Z][a-z]+\d{0,3}|[A-Z]{1,4}\d{0,3}|[a-z]{1,3}\d+[a-z]{0,3}"
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """`text` with lone surrogates (from JSON escapes) replaced by U+FFFD: the same length,
    so offsets hold, and safe for the automata, which take only encodable text."""
    return _SURROGATE.sub("\ufffd", text) if not text.isascii() else text


def find_all_hits(automaton: Any, text: str, **kwargs: bool) -> list[tuple[int, int, int]]:
    """`automaton.find_matches_as_indexes(text)`, also for a text with lone surrogates
    (rare: they are replaced only when the automaton refuses the text)."""
    try:
        return automaton.find_matches_as_indexes(text, **kwargs)
    except UnicodeEncodeError:
        return automaton.find_matches_as_indexes(encodable(text), **kwargs)


_DIGITS = frozenset("0123456789")
_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def has_digit(token: str) -> bool:
    """An ASCII digit in `token` (a set test: faster than a loop over the characters)."""
    return not _DIGITS.isdisjoint(token)


def has_letter(token: str) -> bool:
    """An ASCII letter in `token`."""
    return not (_LOWER.isdisjoint(token) and _UPPER.isdisjoint(token))


def has_mixed_case(token: str) -> bool:
    """Both an ASCII lower-case and an upper-case letter in `token`."""
    return not (_LOWER.isdisjoint(token) or _UPPER.isdisjoint(token))


def shannon(text: str) -> float:
    """Bits per character of `text` (0 for an empty string)."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def plain_parts(token: str) -> bool:
    """A name made of words and numbers (`numpy-1.26.4-cp311-manylinux_x86_64.whl`,
    `Qwen2.5-1.5B-Instruct`, `utf8mb4_general_ci`): the parts of a random token mix cases
    and digits instead."""
    parts = [p for p in _SEPARATORS.split(token) if p]
    plain = sum(bool(_PLAIN_PART.fullmatch(p)) for p in parts)
    return len(parts) >= 2 and plain * 5 >= len(parts) * 3


def wordy(token: str) -> bool:
    """Half or more of `token` is pronounceable words (`password4321seal`, `VisualSTS`)."""
    runs = _RUN.findall(token)
    words = sum(len(r) for r in runs if len(r) >= 4 and r.isalpha() and _VOWELS & set(r))
    return words * 2 >= len(token)


def looks_generated(token: str, min_len: int = 12) -> bool:
    """True when `token` looks machine-generated (a password from a generator, an API key)
    rather than written by a person or a program (a word, an identifier, a file name, a
    version). Hex counts when it has letters and digits; hex-vs-hash is decided by the
    caller's context. Below 20 characters a token needs upper, lower case and digits."""
    n = len(token)
    if not min_len <= n <= 600 or token.isdigit():
        return False
    digit = has_digit(token)
    if _HEX_ONLY.fullmatch(token):
        return not token.startswith("0x") and digit and n >= 16 and not token.isdigit()
    lower = not _LOWER.isdisjoint(token)
    upper = not _UPPER.isdisjoint(token)
    if n < 20 and not (lower and upper and digit):
        return False
    if not digit and not (lower and upper):
        return False
    if wordy(token) or plain_parts(token):
        return False
    return shannon(token) >= (3.0 if n < 20 else 3.5)
