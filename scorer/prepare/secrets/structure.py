"""Secrets found by where they sit, not by what they look like.

A value is secret when its name says so, in whatever syntax it is written: `NAME=value`
and `name: value` (the generic assignment rule in `rules.py`), a name and a value
separated by spaces at the start of a config line (`.netrc`'s `password X`, `redis.conf`'s
`requirepass X`), a command-line flag and its argument (`--api-key X`, `-deststorepass X`,
`-passout pass:X`), a line of a credentials file (`.pgpass`, PuTTY `.ppk`, the `data:` of
a Kubernetes Secret), a cookie, an ODBC `PWD=`, or a string literal passed to a login or
client call (`server.login(user, "pw")`). The rules are written from the documented
formats of those files and tools, not from individual secrets.
"""

from __future__ import annotations

import re
from collections import Counter

from scorer.prepare.secrets.base import SecretRule, not_a_value, prefixed, valued
from scorer.prepare.secrets.cli import CLI_RULES

# The words that make a name secret, as a regex fragment (no capture groups).
SECRET_WORDS = (
    r"(?:secret|token|passw(?:or)?d|pass(?:phrase|wd|code)?|pwd|api[_-]?key|apikey"
    r"|(?:access|auth|private|client|signing|encryption|master|session|preshared|license)"
    r"[_-]?key|key[_-]?data|credentials?|auth)"
)
_VALUE = r"(?P<q>[\"'])?(?P<value>(?(q)[^\"'\r\n]{1,1024}|[^\s\"'\\;&|)]{1,256}))"


def _keep_spaced(m: re.Match[str]) -> bool:
    """`password is required`, `token  count`: prose and tables of words, not secrets;
    nor a package listing (`google-auth  conda-forge/noarch::google-auth-2.35.0`)."""
    value = m.group("value")
    if not m.group("q") and ("::" in value or (value.count("/") >= 1 and "+" not in value)):
        return True
    return not_a_value(value, quoted=bool(m.group("q")), name=m.group("name").lower())


_SPACED_NAME = re.compile(
    rf"(?im)^[ \t]*(?P<name>[\w.-]*{SECRET_WORDS}[\w.-]*)[ \t]+{_VALUE}[ \t]*$"
)
# `.netrc` written on one line: `machine HOST login USER password VALUE`
_NETRC = re.compile(rf"(?i)\blogin[ \t]+\S+[ \t]+(?P<name>password|passwd)[ \t]+{_VALUE}")


def _keep_netrc(m: re.Match[str]) -> bool:
    """Prose (`password is`, `password for the user`) and placeholders are not values."""
    value = m.group("value").rstrip(":,.;!?")
    return not_a_value(value, quoted=bool(m.group("q")), name="") or value.lower() in _PROSE


_PROSE = {"for", "of", "to", "and", "or", "is", "was", "the", "a", "an", "in", "on", "with"}


def _keep_flag(m: re.Match[str]) -> bool:
    return not_a_value(m.group("value"), quoted=bool(m.group("q")), name="") or m.group(
        "value"
    ).startswith("-")


# `--password X`, `--api-key=X`, `-storepass X`, `-passout pass:X`, `--token "X"`
_FLAG = re.compile(
    rf"(?i)(?<![\w-])--?(?P<name>[\w-]*{SECRET_WORDS}[\w-]*|(?:src|dest)?(?:store|key)pass"
    rf"|pass(?:in|out))(?:=|[ \t]+)(?:pass:|env:|file:|stdin)?{_VALUE}"
)


_PGPASS = (
    r"(?m)(?:^|(?<=\\n))[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.*@-]+:"
    r"(?P<value>[^\s:\\][^\s\\]*)(?=$|\\[nr])"
)
_ODBC_PWD = r"(?i)(?<![\w-])PWD=(?P<value>[^;'\"\s}/~$.][^;'\"\s}]{0,255})"  # not a path
_COOKIE_LINE = re.compile(
    r"(?i)(?:set-cookie|cookie)[\"']?[ \t]*:[ \t]*(?P<pairs>[^\n]*)"
    r"|(?:(?<=[ \t])-b|--cookie)[ \t]+(?P<q>[\"'])(?P<qpairs>[^\"'\n]*)(?P=q)"
)
_COOKIE_PAIR = re.compile(r"(?P<name>[\w.%-]+)=(?P<value>[^;,\s\"'\\]{12,})")
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "samesite", "priority"}


def _cookies(m: re.Match[str], counts: Counter[str]) -> str:
    """Values of `Cookie:` / `Set-Cookie:` headers and `curl -b '...'`: session cookies."""

    def pair(pm: re.Match[str]) -> str:
        if pm.group("name").lower() in _COOKIE_ATTRIBUTES or not_a_value(
            pm.group("value"), quoted=True, name=""
        ):
            return pm.group(0)
        counts["cookie"] += 1
        return f"{pm.group('name')}=[REDACTED:cookie]"

    group = "pairs" if m.group("pairs") is not None else "qpairs"
    start, end = m.start(group) - m.start(), m.end(group) - m.start()
    whole = m.group(0)
    return whole[:start] + _COOKIE_PAIR.sub(pair, whole[start:end]) + whole[end:]


_CALL = re.compile(
    r"(?:\.login|\.auth\w*|\blogin|[A-Z]\w*Client|\bClient|\bconnect|\bauthenticate"
    r"|\bauth\s*=\s*|\w*BasicAuth)\s*\("
    r"(?P<args>[^()\n]{0,300})\)"
)
_LITERAL = re.compile(r"(?P<q>\\?[\"'])(?P<value>[^\"'\s\\]{6,200})(?P=q)")


def _positional(m: re.Match[str], counts: Counter[str]) -> str:
    """String literals after the first argument of a login/auth/client call."""
    args = m.group("args")
    first = args.find(",")
    if first == -1:
        return m.group(0)

    def literal(lm: re.Match[str]) -> str:
        value = lm.group("value")
        if not_a_value(value, quoted=True, name="") or _looks_public(value):
            return lm.group(0)
        counts["positional_credential"] += 1
        return f"{lm.group('q')}[REDACTED:positional_credential]{lm.group('q')}"

    rest = _LITERAL.sub(literal, args[first:])
    return m.group(0)[: m.start("args") - m.start()] + args[:first] + rest + ")"


def _looks_public(value: str) -> bool:
    """Host names, URLs, paths, e-mail addresses and plain words are not credentials."""
    return (
        "/" in value
        or "@" in value
        or value.count(".") >= 2
        or value.isalpha()
        or value.isdigit()
        or value.endswith((".com", ".io", ".org", ".net", ".local", ".internal"))
    )


_K8S_DATA = re.compile(
    r"(?m)^(?P<indent>[ \t]*)(?:data|stringData):[ \t]*\n"
    r"(?P<body>(?:(?P=indent)[ \t]+[^\n]*(?:\n|$))+)"
)
_K8S_VALUE = re.compile(r"(?m)^(?P<key>[ \t]+[\w.-]+:[ \t]*)(?P<value>[^\s#][^\n]*)$")


def _k8s_secret(text: str, counts: Counter[str]) -> str:
    """Every value under `data:` / `stringData:` of a manifest that says `kind: Secret`
    (also inside a JSON string, where its lines are joined by `\\n` escapes)."""
    if "\\nkind: Secret" in text:  # a raw JSONL line: unescape its line breaks, and back
        return "\n".join(
            _k8s_secret(line.replace("\\n", "\n"), counts).replace("\n", "\\n")
            if "\\nkind: Secret" in line
            else line
            for line in text.split("\n")
        )
    if not re.search(r"(?m)^[ \t]*kind:[ \t]*Secret\b|\"kind\":\s*\"Secret\"", text):
        return text

    def block(m: re.Match[str]) -> str:
        def value(vm: re.Match[str]) -> str:
            if not_a_value(vm.group("value"), quoted=True, name=""):
                return vm.group(0)
            counts["assignment"] += 1
            return vm.group("key") + "[REDACTED:assignment]"

        return m.group(0)[: m.start("body") - m.start()] + _K8S_VALUE.sub(value, m.group("body"))

    return _K8S_DATA.sub(block, text)


_PPK_BLOCK = re.compile(
    r"(?P<head>Private-Lines:[ \t]*\d+[ \t]*(?:\r?\n|\\n))"
    r"(?P<body>(?:[A-Za-z0-9+/=]+(?:\r?\n|\\n|$))+)"
)


def _putty_key(text: str, counts: Counter[str]) -> str:
    """The base64 lines after a `.ppk` file's `Private-Lines: N`."""

    def block(m: re.Match[str]) -> str:
        counts["putty_key"] += 1
        body = m.group("body")
        end = "\\n" if body.endswith("\\n") else "\n" if body.endswith("\n") else ""
        return m.group("head") + "[REDACTED:putty_key]" + end

    return _PPK_BLOCK.sub(block, text)


def _rewrite(kind: str, fn: object, *triggers: str) -> SecretRule:
    return SecretRule(kind, re.compile(""), triggers, rewrite=fn)  # type: ignore[arg-type]


_HEADER = (
    r"(?<![\w-])(?P<name>[A-Za-z][\w-]*-(?:[Kk]ey|KEY|[Tt]oken|TOKEN|[Ss]ecret|SECRET|[Ss]ignature))"
    r"[ \t]*:[ \t]*(?P<value>[^\s'\"\\]{8,})"
)
_MNEMONIC = (
    r"(?i)(?:mnemonic|phrase|words)[^\n]{0,60}?(?:[:=\n]|\\n)[\s\"']*"
    r"(?P<value>(?:[a-z]{3,8}[ \t]+){11,23}[a-z]{3,8})"
)
_HEX_KEY = (
    r"(?i)(?:priv|secret|wallet|signer)[^\n]{0,40}?(?<![0-9a-f:@])(?:0x)?"
    r"(?P<value>[0-9a-f]{64})(?![0-9a-f])"
)

_FLAG_TRIGGERS = (
    *("-pass", "-PASS", "-Pass", "-secret", "-SECRET", "-token", "-TOKEN", "-key", "-KEY"),
    *("-api", "-API", "-auth", "-AUTH", "-cred", "storepass", "keypass", "-pwd", "-sess"),
)
_HEADER_TRIGGERS = (
    *("-Key", "-key", "-KEY", "-Token", "-token", "-TOKEN", "-Secret", "-secret", "-SECRET"),
    "ignature",
)
_SPACED_TRIGGERS = (
    *("pass", "Pass", "PASS", "ecret", "ECRET", "oken", "OKEN", "key", "Key", "KEY", "pwd"),
    *("PWD", "redential", "REDENTIAL", "_auth", "auth ", "AUTH "),
)

# SQL: `IDENTIFIED BY 'x'`, `WITH [ENCRYPTED] PASSWORD 'x'`; prose: `password "x"`
_SQL_PASSWORD = (
    r"(?i)(?:identified[ \t]+(?:with[ \t]+\w+[ \t]+)?by(?:[ \t]+password)?|password)[ \t]+"
    r"(?P<q>['\"])(?P<value>[^'\"\n]{1,256})(?P=q)"
)
# a tool printing a fresh credential: `New value: x`, `Generated password: x`
_NEW_VALUE = (
    r"(?i)(?:new|generated|temporary|initial|random)[ \t]+(?:value|password|secret|token|key)"
    r"[ \t]*[:=][ \t]*(?P<q>)(?P<value>\S{6,256})"
)


# Bitcoin WIF private keys (base58check: 51 characters from `5`, 52 from `K`/`L`)
_WIF = r"(?<![1-9A-HJ-NP-Za-km-z])(?:5[1-9A-HJ-NP-Za-km-z]{50}|[KL][1-9A-HJ-NP-Za-km-z]{51})(?![1-9A-HJ-NP-Za-km-z])"

# Anchored rules (`back=`) are tried only around their triggers (see `SecretRule.back`).
STRUCTURE_RULES: tuple[SecretRule, ...] = (
    *CLI_RULES,
    valued(
        "assignment",
        _SQL_PASSWORD,
        ("IDENTIFIED", "identified", "PASSWORD", "password", "Password"),
        back=12,
    ),
    valued(
        "assignment",
        _NEW_VALUE,
        ("New ", "new ", "NEW ", "enerated", "ENERATED", "emporary", "nitial", "andom"),
        back=2,
    ),
    valued(
        "url_signature", r"[?&]code=(?P<value>[A-Za-z0-9_%=-]{30,})", ("code=",), keep=None, back=2
    ),
    prefixed("crypto_private_key", _WIF, "dumpprivkey", "WIF", "wif", "privkey", "private key"),
    valued("auth_header", _HEADER, _HEADER_TRIGGERS, back=60),
    valued("mnemonic", _MNEMONIC, ("nemonic", "NEMONIC", "hrase", "HRASE", "words"), back=20),
    valued(
        "crypto_private_key",
        _HEX_KEY,
        ("priv", "PRIV", "Priv", "ecret", "ECRET", "allet", "ALLET", "igner"),
        keep=None,
        back=4,
    ),
    _rewrite("putty_key", _putty_key, "Private-Lines"),
    valued(
        "putty_key", r"Private-MAC:[ \t]*(?P<value>[0-9a-fA-F]{20,})", ("Private-MAC",), keep=None
    ),
    _rewrite("assignment", _k8s_secret, "kind: Secret", '"Secret"'),
    valued("pgpass", _PGPASS, (":5432:", ":*:", ":3306:"), back=120),
    valued("assignment", _ODBC_PWD, ("PWD=", "pwd=", "Pwd="), back=1),
    SecretRule(
        "cookie", _COOKIE_LINE, ("ookie", "OOKIE", "-b ", "--cookie"), replace=_cookies, back=8
    ),
    valued(
        "url_signature",
        r"[?&](?:sig|[Ss]ignature|X-Amz-Signature|X-Amz-Security-Token|X-Goog-Signature)"
        r"=(?P<value>[^&\s'\"#<>]{16,})",
        ("sig=", "ignature=", "Security-Token="),
        keep=None,
        back=20,
    ),
    SecretRule("cli_password", _FLAG, _FLAG_TRIGGERS, group="value", keep=_keep_flag, back=12),
    valued("cli_password", r"redis-cli\b[^\n|;&]{0,200}?[ \t]-a[ \t]+" + _VALUE, ("redis-cli",)),
    valued(
        "cli_password",
        r"htpasswd\b(?=[^\n|;&]*[ \t]-\w*b)(?:[ \t]+-\w+)*(?:[ \t]+[^\s-]\S*){2}[ \t]+" + _VALUE,
        ("htpasswd",),
    ),
    SecretRule(
        "assignment",
        _SPACED_NAME,
        _SPACED_TRIGGERS,
        group="value",
        keep=_keep_spaced,
        back=80,
        anchor=frozenset(" \t"),
        line_start=True,
    ),
    SecretRule("assignment", _NETRC, ("login", "LOGIN"), group="value", keep=_keep_netrc),
    SecretRule(
        "positional_credential",
        _CALL,
        ("login", "Client", "auth", "connect", "BasicAuth"),
        replace=_positional,
        back=40,
    ),
)
