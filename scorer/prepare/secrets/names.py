"""A secret's name, then its value, in the syntaxes the assignment rules do not read.

`NAME=value`, `name: value`, `--flag value` and JSON keys are read by `rules.py` and
`structure.py`. These rules read the rest, each written for a syntax, never for a
vendor or a tool:

- XML: an element named like a secret (`<password>X</password>`, `<ns:apiKey>X</…>`) and
  an element or attributes naming one (`<add key="DbPassword" value="X"/>`,
  `<entry key="api.token">X</entry>`);
- name/value pairs: a `name`/`key` field naming a secret and a `value` field beside it,
  on one line or the next (`{"name": "DB_PASSWORD", "value": "X"}`, Kubernetes
  `- name: API_TOKEN` / `value: X`, `--name /prod/db/password --value X`,
  `ParameterKey=DbPassword,ParameterValue=X`);
- a positional argument after a word naming a secret (`config add-authtoken X`,
  `configure set aws_secret_access_key X`, `openssl passwd -6 X`);
- a literal piped or fed into a command that reads a secret (`echo X | passwd --stdin u`,
  `echo 'u:X' | chpasswd`, `… --password-stdin <<< X`);
- the password of a connection string without a scheme (`user:X@tcp(db:3306)/app`,
  `user:X@host:5432`);
- prose (`the password is X`, `API key: X`, `login is admin / X`).

A value is taken only when it is not obviously something else (a placeholder, a
variable, a path, a file name, a plain word: `base.not_a_value` and
`credential_like`).
"""

from __future__ import annotations

import re
from collections import Counter

from ahocorasick_rs import AhoCorasick, Implementation

from scorer.prepare.secrets.base import (
    SECRET_NAME,
    SecretRule,
    find_all_hits,
    looks_generated,
    not_a_value,
    note,
    plain_parts,
)

# Words that make a name secret (`SECRET_NAME` in `base.py` decides on whole names).
_WORDS = (
    r"(?:[Ss]ecret|SECRET|[Tt]oken|TOKEN|[Pp]assw(?:or)?d|PASSW(?:OR)?D|[Pp]ass(?:phrase|code"
    r"|key)|PASS(?:PHRASE|CODE|KEY)|[Aa]pi[_-]?[Kk]ey|API[_-]?KEY|[Pp]sk|PSK|[Cc]redentials?"
    r"|[Pp]rivate[_-]?[Kk]ey|[Aa]ccess[_-]?[Kk]ey|[Aa]uth[_-]?[Kk]ey|pwd|PWD|[Pp]ass|PASS)"
)
_NAME_TRIGGERS = (
    *("ecret", "ECRET", "oken", "OKEN", "assw", "ASSW", "Pass", "pass", "PASS", "pi_key"),
    *(
        "piKey",
        "pi-key",
        "PI_KEY",
        "psk",
        "Psk",
        "PSK",
        "redential",
        "REDENTIAL",
        "Key",
        "key",
        "pwd",
    ),
    "PWD",
)
_VALUE = r"(?P<q>\\*[\"'`])?(?P<value>(?(q)[^\"'`\\\r\n]{1,256}|[^\s\"'`\\;&|)<>,]{1,256}))"
_SYMBOL = re.compile(r"[^A-Za-z0-9]")
_FILE_NAME = re.compile(r"^[\w.-]+\.[A-Za-z][A-Za-z0-9]{0,5}$")
_EMAIL = re.compile(r"^[\w.+-]+@[\w-]+\.[\w.-]+$")
_CODE = re.compile(r"[()\[\]{}=;<>]")


def secret_name(name: str) -> bool:
    """True when `name` (a key, tag or argument; a path's last part) names a secret."""
    last = re.split(r"[/:]", name.strip("\"'` "))[-1]
    return bool(last) and (bool(SECRET_NAME.match(last)) or last.lower() in _SHORT_NAMES)


_SHORT_NAMES = {"psk", "pass", "passcode", "passkey", "pwd", "wpa_psk"}


def credential_like(value: str, quoted: bool) -> bool:
    """A value that a person or a generator chose as a secret, not a word, path or file:
    generated-looking, or 8+ characters with three of lower, upper, digit and symbol."""
    v = value.strip()
    if not_a_value(v, quoted=True, name="") or v.startswith(("-", "/", "./", "~/", "http")):
        return False
    if (_FILE_NAME.match(v) and not looks_generated(v)) or _EMAIL.match(v):
        return False
    if not quoted and _CODE.search(v):  # `tokens[i+1]`, `get_password()`: code
        return False
    classes = sum(
        (
            any(c.islower() for c in v),
            any(c.isupper() for c in v),
            any(c.isdigit() for c in v),
            bool(_SYMBOL.search(v)),
        )
    )
    if looks_generated(v) or (len(v) >= 8 and classes >= 3):
        return True
    return quoted and len(v) >= 8 and classes >= 2


def _replace_value(m: re.Match[str], counts: Counter[str], kind: str) -> str:
    start, end = m.start("value") - m.start(), m.end("value") - m.start()
    note(counts, kind, m.group("value"))
    whole = m.group(0)
    return whole[:start] + f"[REDACTED:{kind}]" + whole[end:]


# -- XML --------------------------------------------------------------------------------

_XML = re.compile(
    r"<(?P<tag>[\w.:-]{1,60})(?P<attrs>[ \t][^<>\n]{0,300}?)?[ \t]*>"
    r"(?P<value>[^<>\n]{1,256})</(?P=tag)[ \t]*>"
)
_XML_ATTR_NAME = re.compile(r"(?i)\b(?:key|name|id)[ \t]*=[ \t]*[\"'](?P<n>[^\"'<>]{1,80})[\"']")


def _xml(m: re.Match[str], counts: Counter[str]) -> str:
    attr = _XML_ATTR_NAME.search(m.group("attrs") or "")
    named = secret_name(m.group("tag")) or (attr is not None and secret_name(attr.group("n")))
    value = m.group("value").strip()
    if not named or not value or not_a_value(value, quoted=True, name=""):
        return m.group(0)
    return _replace_value(m, counts, "assignment")


# -- name/value pairs -------------------------------------------------------------------

_PAIR_NAME = re.compile(
    r"(?i)(?:^|(?<=[\s{,;(\[<\"'&?]))(?:--)?[\w-]*(?:key|name|id|param(?:eter)?|property|var)"
    r"\\*[\"']?(?:[ \t]*[:=][ \t]*|[ \t]+)\\*[\"']?(?P<n>[\w.:/-]{2,80})\\*[\"']?"
)
_PAIR_VALUE = re.compile(
    r"(?:[\w-]*(?:[Vv]alue|VALUE))\\*[\"']?(?:[ \t]*[:=][ \t]*|(?<=--value)[ \t]+)" + _VALUE
)
_PAIR_GAP = re.compile(r"[ \t\"',;&-]*(?:\n[ \t-]*)?")
"""What may stand between the name and the value field: separators, one line break."""


def _pairs(text: str, counts: Counter[str]) -> str:
    parts: list[str] = []
    done = 0
    for at in _find_all_words(text, ("value", "Value", "VALUE")):
        start = at
        while start and (text[start - 1].isalnum() or text[start - 1] in "_-"):
            start -= 1
        if start < done:
            continue
        vm = _PAIR_VALUE.match(text, start)
        if vm is None or not _pair_named(text, start):
            continue
        value = vm.group("value")
        if not_a_value(value, quoted=bool(vm.group("q")), name="KEY"):
            continue
        parts += [text[done : vm.start("value")], "[REDACTED:assignment]"]
        note(counts, "assignment", value)
        done = vm.end("value")
    return "".join(parts) + text[done:] if parts else text


def _pair_named(text: str, value_at: int) -> bool:
    """A name field naming a secret ends just before the value field at `value_at`."""
    window = text[max(0, value_at - 200) : value_at]
    last = None
    for last in _PAIR_NAME.finditer(window):  # noqa: B007 - the last one is wanted
        pass
    if last is None or not _PAIR_GAP.fullmatch(window, last.end()):
        return False
    return secret_name(last.group("n"))


def _find_all_words(text: str, words: tuple[str, ...]) -> list[int]:
    found: list[int] = []
    for word in words:
        at = text.find(word)
        while at != -1:
            found.append(at)
            at = text.find(word, at + 1)
    return sorted(found)


# -- a positional argument after a word naming a secret ------------------------------------

_AFTER_NAME = re.compile(r"(?:[ \t]+(?:set|add|update|create|-{1,2}[\w-]+))*[ \t]+" + _VALUE)
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:/@-")
_POSITIONAL_WORDS = AhoCorasick(
    [
        *("ecret", "ECRET", "oken", "OKEN", "pass", "Pass", "PASS", "psk", "Psk", "PSK"),
        *("redential", "REDENTIAL", "key", "Key", "KEY", "pwd", "PWD"),
    ],
    implementation=Implementation.DFA,
)


def _positionals(text: str, counts: Counter[str]) -> str:
    """A value after a name that says it is secret and a space (`add-authtoken X`).

    The words are found with one automaton pass; a name is taken whole (walking over
    `[\\w.:/@-]` both ways) only where a space follows it, and `secret_name` decides."""
    parts: list[str] = []
    done = 0
    ends: set[int] = set()
    for _, _, at in find_all_hits(_POSITIONAL_WORDS, text, overlapping=True):
        end = at
        while end < len(text) and text[end] in _NAME_CHARS and end - at < 80:
            end += 1
        if end in ends or end >= len(text) or text[end] not in " \t":
            continue
        ends.add(end)
        start = at - 1
        while start > done and text[start - 1] in _NAME_CHARS and end - start < 120:
            start -= 1
        m = _AFTER_NAME.match(text, end)
        if m is None or start < done:
            continue
        value = _positional_value(text, start, end, m)
        if value:
            parts += [text[done : m.start("value")], "[REDACTED:positional_credential]"]
            note(counts, "positional_credential", value)
            done = m.end("value")
    return "".join(parts) + text[done:] if parts else text


def _positional_value(text: str, start: int, end: int, m: re.Match[str]) -> str | None:
    name, value = text[start:end], m.group("value")
    if start and (text[start - 1].isalnum() or text[start - 1] in "=$"):
        return None  # the middle of a word, or a variable's value
    if "=" in name or name.lower() == "pass" or not secret_name(name):
        return None  # `pass`: more often the verb (`pass `--flag` to it`)
    quoted = bool(m.group("q"))
    bare = value if quoted else value.strip("*_:.,;!?()")  # `**Password Cracking**:`
    if any(c.isspace() for c in value) or not credential_like(bare, quoted):
        return None
    if _VERSION.search(name) or plain_parts(value):
        return None  # `tiktoken-0.12.0 tokenizers-0.22.1`: a list of packages
    return value


_VERSION = re.compile(r"\d+\.\d+")


# -- a literal fed to a command that reads a secret --------------------------------------

_PIPED = re.compile(
    r"(?:echo|printf)(?:[ \t]+-[neE]+)*(?:[ \t]+(?P<fq>[\"'])%s[^\"']*(?P=fq))?[ \t]+"
    r"(?P<q>[\"'])?(?P<value>(?(q)[^\"'\n]{1,256}|[^\s|;&\"']{1,256}))(?(q)[\"'])"
    r"[^|\n;&]{0,40}?\|[ \t]*(?P<cmd>[^\n|;&]{1,200})"
)
_HERE_VALUE = re.compile(
    r"<<<[ \t]*(?P<q>[\"'])?(?P<value>(?(q)[^\"'\n]{1,256}|[^\s|;&\"']{1,256}))"
)
_READS_SECRET = re.compile(
    r"(?i)passw|chpasswd|secret|token|login|auth|cred|--stdin|-\w*S\b|\bkinit|vault"
    r"|\bkey|htpasswd|openssl|gpg|\bpass\b|mkpasswd"
)


def _piped(m: re.Match[str], counts: Counter[str]) -> str:
    value = m.group("value")
    if not _READS_SECRET.search(m.group("cmd")) or not_a_value(value, quoted=True, name=""):
        return m.group(0)
    return _replace_value(m, counts, "cli_password")


def _here_strings(text: str, counts: Counter[str]) -> str:
    """`passwd --stdin u <<< 'X'`: the command is what precedes `<<<` on its line."""
    parts: list[str] = []
    done = 0
    for at in _find_all_words(text, ("<<<",)):
        m = _HERE_VALUE.match(text, at)
        cmd_start = max(done, *(text.rfind(c, done, at) + 1 for c in "\n|;&"))
        if m is None or at < done or not _READS_SECRET.search(text[cmd_start:at]):
            continue
        if not_a_value(m.group("value"), quoted=True, name=""):
            continue
        parts += [text[done : m.start("value")], "[REDACTED:cli_password]"]
        note(counts, "cli_password", m.group("value"))
        done = m.end("value")
    return "".join(parts) + text[done:] if parts else text


# -- a connection string without a scheme: user:password@host ----------------------------

_HOST = re.compile(r"@(?:(?:tcp|udp|unix)\(|\[[0-9a-fA-F:]+\]:\d|[\w-]+(?:\.[\w-]+)*:\d{2,5}\b)")
_USERINFO_VALUE = re.compile(r"[^\s:@/'\"`()\\\[\]]{1,128}")


def _userinfo(text: str, counts: Counter[str]) -> str:
    parts: list[str] = []
    done = 0
    at = text.find("@")
    while at != -1:
        colon = text.rfind(":", max(done, at - 129), at)
        if colon > 0 and _HOST.match(text, at) and not text.startswith("@sha", at):
            value = text[colon + 1 : at]
            user_start = colon
            while user_start and (
                text[user_start - 1].isalnum() or text[user_start - 1] in "_.%+-"
            ):
                user_start -= 1
            before = text[user_start - 1 : user_start] if user_start else ""
            if (
                user_start < colon
                and before not in ("/", ":", "@")
                and _USERINFO_VALUE.fullmatch(value)
                and not not_a_value(value, quoted=False, name="PASSWORD")
            ):
                parts += [text[done : colon + 1], "[REDACTED:url_password]"]
                note(counts, "url_password", value)
                done = at
        at = text.find("@", at + 1)
    return "".join(parts) + text[done:] if parts else text


# -- prose --------------------------------------------------------------------------------

_PROSE = re.compile(
    r"(?i)(?<![\w-])(?P<name>password|passwd|passphrase|passcode|secret|token|api[ _-]?key"
    r"|access[ _-]?key|secret[ _-]?key|private[ _-]?key|credentials?|login)"
    r"(?:[ \t]+(?:for|of|to|on)[ \t]+[^\s:]{1,40})?[ \t]*"
    r"(?:is|was|are|:|->|→|—|set[ \t]+to|changed[ \t]+to|reset[ \t]+to)[ \t]*:?[ \t]*"
    r"(?:(?P<user>[\w.@+-]{1,64})[ \t]*(?:/|,|:)[ \t]*)?"
    r"(?P<q>[`'\"])?(?P<value>(?(q)[^`'\"\n]{4,128}|[^\s`'\"]{4,128}))"
)


# `token` is everywhere in transcripts (`max_tokens`); as prose it is followed by one of
# the pattern's verbs, so those pairs are the triggers
_TOKEN_PROSE = tuple(
    f"{word}{sep}"
    for word in ("token", "Token", "TOKEN")
    for sep in (
        *(":", " :", " is", " was", " are", " for", " of", " to", " on", " ->", " set"),
        *(" changed", " reset", " IS", " WAS"),
    )
)


def _prose(m: re.Match[str], counts: Counter[str]) -> str:
    value = m.group("value").rstrip(".,;:!?)")
    quoted = bool(m.group("q"))
    if not credential_like(value, quoted):
        return m.group(0)
    start, end = m.start("value") - m.start(), m.start("value") - m.start() + len(value)
    note(counts, "assignment", value)
    whole = m.group(0)
    return whole[:start] + "[REDACTED:assignment]" + whole[end:]


def _rewrite(kind: str, fn: object, *triggers: str) -> SecretRule:
    return SecretRule(kind, re.compile(""), triggers, rewrite=fn)  # type: ignore[arg-type]


NAME_RULES: tuple[SecretRule, ...] = (
    # not anchored: the pattern starts with `<`, so re's literal scan finds the tags fast
    SecretRule("assignment", _XML, _NAME_TRIGGERS, replace=_xml),
    _rewrite("assignment", _pairs, "value", "Value", "VALUE"),
    SecretRule("cli_password", _PIPED, ("echo", "printf"), replace=_piped, back=1),
    _rewrite("cli_password", _here_strings, "<<<"),
    _rewrite("url_password", _userinfo, "@tcp(", "@unix(", "@udp(", "@"),
    SecretRule(
        "assignment",
        _PROSE,
        (
            *("assw", "ASSW", "pass", "Pass", "PASS", "ecret", "ECRET", *_TOKEN_PROSE),
            *("redential", "REDENTIAL", "ogin", "OGIN"),
            *(" key", " Key", " KEY", "_key", "_Key", "_KEY", "-key", "-Key", "-KEY"),
        ),
        replace=_prose,
        back=12,  # the name starts at its trigger or a word before (`private key`)
        word_start=True,
        anchor=frozenset(" \t"),
    ),
    _rewrite("positional_credential", _positionals, *_NAME_TRIGGERS),
)
"""The rules of this module, applied after the assignment rules."""
