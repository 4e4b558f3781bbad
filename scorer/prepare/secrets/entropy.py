"""The entropy layer: random-looking tokens where something says "secret".

A token is redacted as `high_entropy` when it looks generated and sits in a secret
context; how long it must be depends on how close the context is:

- 20+ characters of base64/base58 (with `-_~.` allowed) or 32+ hex digits that look
  random (Shannon entropy of at least 3.0 bits per character for hex, 3.6 for the rest,
  letters and digits, not a word-like identifier, file name or path) within 160
  characters after a secret-ish word (on its line or the lines below: `Your
  password:\\n\\n<token>`), or anywhere on the line of one (`<token>  # the aws secret`);
- 12+ characters that look generated (upper and lower case and digits, not words:
  `base.looks_generated`) within 48 characters after the word on its line
  (`the admin login is admin / <pw>`, `psk="<pw>"`);
- either, anywhere in the first 4,000 characters of a command's output when the command
  itself names a secret (`op read op://…/password`, `kubectl get secret … | base64 -d`)
  or held one: `redact.py` passes `everywhere=True` then.

"Secret-ish" is a word (`key`, `token`, `secret`, `pass`, `auth`, `login`, `credential`,
`private`, `signature`, `seed`, `cookie`, `psk`, `appid`, …) or a `[REDACTED:…]` marker an
earlier rule left: a random token on the line of a redacted key is its partner
(`grep -r "[REDACTED:aws_access_key_id]\\|<secret key>"`).

A base64 token that decodes to text holding a secret (a PEM private key, `user:password`
after a secret-ish name, anything another rule redacts) is redacted as `encoded_secret`.

Allowed through, so the judge still sees them: UUIDs; git object ids and other hashes
named as such (`commit`, `sha`, `digest`, `checksum`, `integrity`, `etag`, `sha256:` or
`sha512-` in front); paths and URLs; ids of the Anthropic API (`toolu_`, `msg_`, `req_`);
data URIs and blobs longer than 512 characters.

The words are found with one automaton pass and the token regex runs only in the
windows around them, so the layer costs little on sessions without secrets.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections import Counter
from collections.abc import Callable

from ahocorasick_rs import AhoCorasick, BytesAhoCorasick, Implementation

from scorer.prepare.secrets.base import (
    SECRET_PREFIXES,
    SecretRule,
    find_all_hits,
    has_digit,
    has_letter,
    has_mixed_case,
    looks_generated,
    note,
    plain_parts,
    shannon,
)

CONTEXT_WORDS = (
    "key", "Key", "KEY", "token", "Token", "TOKEN", "secret", "Secret", "SECRET", "pass",
    "Pass", "PASS", "password", "Password", "passwd", "auth", "Auth", "AUTH", "credential",
    "Credential", "CREDENTIAL", "priv", "Priv", "PRIV", "signature", "Signature", "seed",
    "Seed", "cookie", "Cookie", "pwd", "PWD", "nsec", "wallet", "Wallet", "login", "Login",
    "LOGIN", "psk", "PSK", "appid", "AppId", "APPID", "appId", "creds", "Creds", "CREDS",
    "[REDACTED:",
)  # fmt: skip
"""Secret-ish words; the layer looks for tokens around each occurrence."""
_WINDOW = 160
_CLOSE = 48
"""How far after a secret-ish word on its line a short (12+) generated token is taken."""
_OUTPUT_SPAN = 4000
"""How much of a command's output `everywhere` covers."""
_TOKEN = re.compile(
    r"(?:(?<![\w+/=.~%\\-])|(?<=\w=)|(?<=\\[ntr]))"
    r"(?P<t>[A-Za-z0-9+/_~.-]{12,600}={0,2})(?![\w+/=.~%-])"
)
_HEX = re.compile(r"[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HASH_CONTEXT = re.compile(
    r"(?i)(?:commit|sha\d*|digest|checksum|integrity|etag|hash|merge|parent|tree|revision"
    r"|\brev\b|object|blob|md5|fingerprint|build[-_ ]?id|image id|layer)[^\n]{0,24}$"
)
_PREFIXED_HASH = re.compile(r"(?:sha\d+[:-]|md5[:-]|@|#)$", re.IGNORECASE)
_HASH_PREFIX = re.compile(r"(?i)(?:sha\d+|md5)[:-]")
_ID_CONTEXT = re.compile(
    r"(?i)(?:request|trace|span|correlation|message|event|run|job|build|commit)[-_ ]?id"
    r"[\\\"']*[ \t]*[:=,]?[ \t]*[\\\"']*$"
)
"""An id a server or tool logs (`x-request-id`, `traceId`): opaque, not a credential."""
_THINKING_SIGNATURE = re.compile(r"\\*\"signature\\*\":[ \t]*\\*\"$")
_API_IDS = ("toolu_", "msg_", "req_", "srvtoolu_", "file_", "batch_", "chatcmpl-")
_MARKER = re.compile(r"\[REDACTED:\w+\]")


def _random_looking(token: str) -> bool:
    """A long token (20+) that looks random (see the module docstring)."""
    if not (has_digit(token) and has_letter(token)):
        return False
    if _HEX.fullmatch(token):
        return len(token) >= 32 and shannon(token) >= 3.0
    if len(token) > 512 or token.startswith(_API_IDS):
        return False
    if len(token) < 20 or plain_parts(token):
        return False
    if token.count("/") >= 3 and "+" not in token and not token.endswith("="):
        return False
    return shannon(token) >= 3.6


def _allowed(text: str, start: int, token: str) -> bool:
    """A token agents legitimately show (see the module docstring)."""
    if _UUID.fullmatch(token) or "[REDACTED" in token or token.startswith(_API_IDS):
        return True
    if _HASH_PREFIX.match(token):  # `sha512-…` (an npm integrity), `sha256:…` (a digest)
        return True
    before = text[max(0, start - 40) : start]
    if _PREFIXED_HASH.search(before) or text[max(0, start - 8) : start].endswith(("://", "data:")):
        return True
    if len(token) >= 200 and _THINKING_SIGNATURE.search(before):
        return True  # the API's signature of a thinking block: opaque, not a credential
    line_start = text.rfind("\n", 0, start) + 1
    if _ID_CONTEXT.search(text[max(line_start, start - 40) : start]):
        return True
    return bool(_HEX.fullmatch(token) and _HASH_CONTEXT.search(text[line_start:start]))


def _context_hits(text: str) -> list[tuple[int, int]]:
    """(start, end) of each secret-ish word or marker in `text` (one automaton pass)."""
    if text.isascii():  # byte offsets are character offsets: the fast automaton
        hits = _CONTEXT_BYTES.find_matches_as_indexes(text.encode(), overlapping=True)
    else:  # lone surrogates (from JSON escapes) cannot be encoded: same length, no word
        hits = find_all_hits(_CONTEXT, text, overlapping=True)
    # a word part, not a word inside another (`Passage`, `keyboard`, `author`, `tiktoken`)
    return sorted(
        {(s, e) for _, s, e in hits if not _continues_word(text, e) and _starts_word(text, s)}
    )


def _starts_word(text: str, start: int) -> bool:
    """The word at `start` is not the tail of a lower-case word, unless that word names
    whose secret it is (`authtoken`, `dbpass`; not `tiktoken`, `bypass`)."""
    if not start or not text[start - 1].islower() or not text[start].islower():
        return True
    first = start - 1
    while first and text[first - 1].isalpha() and start - first < 12:
        first -= 1
    return text[first:start].lower().endswith(SECRET_PREFIXES)


def _continues_word(text: str, end: int) -> bool:
    nxt = text[end : end + 1]
    return nxt.islower() and nxt not in "s_"


def _windows(text: str, everywhere: bool) -> list[tuple[int, int, int]]:
    """Merged (start, end, close_end) windows: tokens in [start, end) are in context, and
    short ones starting before `close_end` are close to their word."""
    spans: list[tuple[int, int, int]] = []
    for s, e in _context_hits(text):
        line_start = text.rfind("\n", 0, s) + 1
        line_end = text.find("\n", e)
        line_end = len(text) if line_end == -1 else line_end
        close = min(line_end, e + _CLOSE)
        spans.append(
            (max(line_start, s - _WINDOW), max(e + _WINDOW, min(line_end, e + 400)), close)
        )
    if everywhere:
        spans.append((0, _OUTPUT_SPAN, _OUTPUT_SPAN))
    spans.sort()
    merged: list[tuple[int, int, int]] = []
    for start, end, close in spans:
        if merged and start <= merged[-1][1]:
            p_start, p_end, p_close = merged[-1]
            merged[-1] = (p_start, max(p_end, end), max(p_close, close))
        else:
            merged.append((start, end, close))
    return merged


def _flag(text: str, m: re.Match[str], close: bool) -> str | None:
    """The kind to redact the token of `m` as, or None."""
    token = m.group("t")
    if _random_looking(token) or (close and looks_generated(token)):
        kind = "high_entropy"
    elif len(token) >= 16 and decodes_to_secret(token, named=close):
        kind = "encoded_secret"
    else:
        return None
    return None if _allowed(text, m.start("t"), token) else kind


def _redact_entropy(text: str, counts: Counter[str], everywhere: bool = False) -> str:
    """Replace every token the layer flags (see the module docstring)."""
    spans: list[tuple[int, int, str]] = []
    for start, end, close_end in _windows(text, everywhere):
        end = min(end, len(text))
        for m in _TOKEN.finditer(text, start, end):
            if m.end() == end < len(text) and text[end] not in _TOKEN_ENDS:
                continue  # a token cut by the window's end: not judged on a part
            kind = _flag(text, m, close=m.start() < close_end)
            if kind:
                spans.append((m.start("t"), m.end("t"), kind))
    return _replace(text, spans, counts)


_TOKEN_ENDS = frozenset(" \t\n\"'`),;]}<>|&")


def _replace(text: str, spans: list[tuple[int, int, str]], counts: Counter[str]) -> str:
    if not spans:
        return text
    out, done = [], 0
    for start, end, kind in sorted(set(spans)):
        if start < done:
            continue
        out += [text[done:start], f"[REDACTED:{kind}]"]
        note(counts, kind, text[start:end])
        done = end
    return "".join(out) + text[done:]


def redact_in_context(text: str, counts: Counter[str]) -> str:
    """The layer for a command's output when the command names or held a secret."""
    return _redact_entropy(text, counts, everywhere=True)


# -- a lone generated token: what a password manager or a token generator prints --------

_LONE = re.compile(r"[ \t]*(?P<t>[A-Za-z0-9+/_~.=!@#$%^&*-]{16,200})[ \t]*(?:\n|$)")


def lone_token(text: str, counts: Counter[str], hex_ok: bool = False) -> str:
    """Redact the first line of `text` when it is one generated token and nothing else
    (`op read`, `pass show`, `security find-generic-password -w`, `openssl rand`,
    `secrets.token_urlsafe()`). Hex only with `hex_ok` (a command that names a secret):
    alone, a hex line is more often a commit or a container id."""
    m = _LONE.match(text, len(text) - len(text.lstrip("\n")))
    if m is None:
        return text
    token = m.group("t")
    if _HEX.fullmatch(token) and not hex_ok:
        return text
    if _UUID.fullmatch(token) or token.startswith(_API_IDS) or not looks_generated(token, 16):
        return text
    return _replace(text, [(m.start("t"), m.end("t"), "high_entropy")], counts)


# -- base64-wrapped secrets -------------------------------------------------------------

_B64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{16,}={0,2}")
_USER_PASS = re.compile(r"[\w.@+-]{1,64}:[^\s:]{4,256}")
Checker = Callable[[str], bool]
_inner: list[Checker] = []
"""The full rule set's "does this text hold a secret" (set by `scan.py`: no cycle)."""


def register_inner_check(check: Checker) -> None:
    """Let `decodes_to_secret` ask the whole rule set about a decoded text."""
    _inner.append(check)


def decodes_to_secret(token: str, named: bool = False) -> bool:
    """True when `token` is base64 of text that holds a secret: a PEM private key, text
    another rule redacts, or (`named`: a secret-ish name before it) `user:password`."""
    if len(token) > 16384 or len(token.rstrip("=")) % 4 == 1 or not has_mixed_case(token):
        return False  # not base64 (a length no encoding has), or not of text (one case)
    if not _B64_TOKEN.fullmatch(token):
        return False
    try:
        urlsafe = "-" in token or "_" in token
        padded = token.rstrip("=") + "=" * (-len(token.rstrip("=")) % 4)
        decoded = base64.b64decode(padded, altchars=b"-_" if urlsafe else None).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    printable = sum(c.isprintable() or c in "\n\r\t" for c in decoded)
    if len(decoded) < 8 or printable < len(decoded) * 0.95:
        return False
    if "PRIVATE KEY" in decoded or (named and _USER_PASS.fullmatch(decoded.strip())):
        return True
    return any(check(decoded) for check in _inner)


def _b64_fragments(word: bytes) -> list[str]:
    """The base64 characters that encode `word` whatever its offset in the encoded data
    (the characters whose six bits all come from `word`), one string per offset."""
    out = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + word + b"\0\0").decode()
        first = -(-offset * 8 // 6)  # the first character with no bit of the padding
        last = (offset + len(word)) * 8 // 6  # one past the last such character
        if last - first >= 6:
            out.append(encoded[first:last])
    return out


_ENCODED_WORDS = (b"PRIVATE KEY", b"-----BEGIN", b"password", b"secret", b"token", b"api_key")
ENCODED_TRIGGERS = tuple(dict.fromkeys(f for w in _ENCODED_WORDS for f in _b64_fragments(w)))


def _redact_encoded(text: str, counts: Counter[str]) -> str:
    """Base64 tokens that contain the encoding of a secret-ish word and decode to a secret."""
    spans = []
    for fragment in ENCODED_TRIGGERS:
        at = text.find(fragment)
        while at != -1:
            start = at
            while start and (text[start - 1].isalnum() or text[start - 1] in "+/_-"):
                start -= 1
            m = _B64_TOKEN.match(text, start)
            if m and decodes_to_secret(m.group(0)):
                spans.append((m.start(), m.end(), "encoded_secret"))
            at = text.find(fragment, max(at + 1, m.end() if m else at + 1))
    return _replace(text, spans, counts)


_CONTEXT = AhoCorasick(list(CONTEXT_WORDS), implementation=Implementation.DFA)
_CONTEXT_BYTES = BytesAhoCorasick(
    [w.encode() for w in CONTEXT_WORDS], implementation=Implementation.DFA
)


ENTROPY_RULE = SecretRule("high_entropy", re.compile(""), CONTEXT_WORDS, rewrite=_redact_entropy)
ENCODED_RULE = SecretRule(
    "encoded_secret", re.compile(""), ENCODED_TRIGGERS, rewrite=_redact_encoded
)
