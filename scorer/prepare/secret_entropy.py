"""The entropy layer: long random-looking tokens near words that say "secret".

A token is redacted as `high_entropy` when all of these hold:

- it is long: 20+ characters of base64/base58 (with `-_~.` allowed), or 32+ hex digits;
- it looks random: Shannon entropy of at least 3.0 bits per character for hex, 3.6 for
  the rest, with both letters and digits, and not a word-like identifier or path;
- a secret-ish word (`key`, `token`, `secret`, `pass`, `auth`, `credential`, `private`,
  `signature`, `seed`, `cookie`, …) occurs at most 160 characters before it: on its line
  or in the line or two above (`Your password:\\n\\n<token>`);
- it is none of what agents legitimately show, so the judge still sees it: a UUID; a git
  object id or other hash named as one (`commit`, `sha`, `digest`, `checksum`, `integrity`,
  `etag`, `sha256:` or `sha512-` in front); a path or URL; an id of the Anthropic API
  (`toolu_`, `msg_`, `req_`); a data URI or a blob longer than 512 characters.

The trigger words are few and the regexes run only in a window after each of them, so
the layer costs little on sessions without secrets.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from scorer.prepare.secret_base import SecretRule

CONTEXT_WORDS = (
    "key", "Key", "KEY", "token", "Token", "TOKEN", "secret", "Secret", "SECRET", "pass",
    "Pass", "PASS", "password", "Password", "passwd", "auth", "Auth", "AUTH", "credential",
    "Credential", "CREDENTIAL", "priv",
    "Priv", "PRIV", "signature", "Signature", "seed", "Seed", "cookie", "Cookie", "pwd",
    "PWD", "nsec", "wallet", "Wallet",
)  # fmt: skip
"""Secret-ish words; the layer looks for tokens after each occurrence."""
_WINDOW = 160
_TOKEN = re.compile(r"(?<![\w+/=.~%\\-])(?P<t>[A-Za-z0-9+/_~.-]{20,600}={0,2})(?![\w+/=.~%-])")
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH_CONTEXT = re.compile(
    r"(?i)(?:commit|sha\d*|digest|checksum|integrity|etag|hash|merge|parent|tree|revision"
    r"|\brev\b|object|blob|md5|fingerprint|build[-_ ]?id|image id|layer)[^\n]{0,24}$"
)
_PREFIXED_HASH = re.compile(r"(?:sha\d+[:-]|md5[:-]|@|#)$", re.IGNORECASE)
_SEPARATORS = re.compile(r"[/._~-]+")
_PLAIN_PART = re.compile(
    r"[a-z]+\d{0,3}|\d+[a-z]?|[A-Z][a-z]+\d{0,3}|[A-Z]{1,4}\d{0,3}|[a-z]{1,3}\d+[a-z]{0,3}"
)
_API_IDS = ("toolu_", "msg_", "req_", "srvtoolu_", "file_", "batch_", "chatcmpl-")


def shannon(text: str) -> float:
    """Bits per character of `text` (0 for an empty string)."""
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values()) if n else 0.0


def _random_looking(token: str) -> bool:
    has_digit = any(c.isdigit() for c in token)
    has_alpha = any(c.isalpha() for c in token)
    if not (has_digit and has_alpha):
        return False
    if _HEX.fullmatch(token):
        return len(token) >= 32 and shannon(token) >= 3.0
    if len(token) > 512 or token.startswith(_API_IDS):
        return False
    # file names, package versions, model ids, paths: several parts, mostly plain words
    # or numbers (`numpy-1.26.4-cp311-manylinux_x86_64.whl`, `Qwen2.5-1.5B-Instruct`); the
    # parts of a random token mix cases and digits
    parts = [p for p in _SEPARATORS.split(token) if p]
    plain = sum(bool(_PLAIN_PART.fullmatch(p)) for p in parts)
    if len(parts) >= 3 and plain * 5 >= len(parts) * 3:
        return False
    if token.count("/") >= 3 and "+" not in token and not token.endswith("="):
        return False
    return shannon(token) >= 3.6


def _allowed(text: str, start: int, token: str) -> bool:
    """A token agents legitimately show (see the module docstring)."""
    if _UUID.fullmatch(token) or "[REDACTED" in token:
        return True
    before = text[max(0, start - 40) : start]
    if _PREFIXED_HASH.search(before) or text[max(0, start - 8) : start].endswith(("://", "data:")):
        return True
    line_start = text.rfind("\n", 0, start) + 1
    return bool(_HEX.fullmatch(token) and _HASH_CONTEXT.search(text[line_start:start]))


def _context_ends(text: str) -> list[int]:
    """Where each secret-ish word in `text` ends (one automaton pass)."""
    if text.isascii():  # byte offsets are character offsets: the fast automaton
        hits = _CONTEXT_BYTES.find_matches_as_indexes(text.encode(), overlapping=True)
    else:
        hits = _CONTEXT.find_matches_as_indexes(text, overlapping=True)
    # a word part, not a word inside another (`Passage`, `keyboard`, `author`)
    return sorted({end for _, _, end in hits if not _continues_word(text, end)})


def _continues_word(text: str, end: int) -> bool:
    nxt = text[end : end + 1]
    return nxt.islower() and nxt not in "s_"


def _redact_entropy(text: str, counts: Counter[str]) -> str:
    """Replace every token the layer flags (see the module docstring)."""
    spans: list[tuple[int, int]] = []
    scanned = 0  # windows overlap: each token is judged once
    for at in _context_ends(text):
        end = min(len(text), at + _WINDOW)
        for m in _TOKEN.finditer(text, max(at, scanned), end):
            token = m.group("t")
            if m.end() < end and _random_looking(token) and not _allowed(text, m.start(), token):
                spans.append(m.span())
        scanned = max(scanned, end - 620)  # a token cut by the window's end is seen again
    if not spans:
        return text
    out, done = [], 0
    for start, end in sorted(set(spans)):
        if start < done:
            continue
        out += [text[done:start], "[REDACTED:high_entropy]"]
        counts["high_entropy"] += 1
        done = end
    return "".join(out) + text[done:]


_CONTEXT = AhoCorasick(list(CONTEXT_WORDS), implementation=Implementation.DFA)
_CONTEXT_BYTES = BytesAhoCorasick(
    [w.encode() for w in CONTEXT_WORDS], implementation=Implementation.DFA
)


ENTROPY_RULE = SecretRule("high_entropy", re.compile(""), CONTEXT_WORDS, rewrite=_redact_entropy)
