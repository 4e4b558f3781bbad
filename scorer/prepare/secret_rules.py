"""The secret formats `redact` knows: one `SecretRule` per format, most specific first.

Token formats with a fixed prefix (npm, PyPI, SendGrid, Twilio, DigitalOcean, Shopify,
Databricks, age, Vault, Telegram) follow the rules of gitleaks' default config
(github.com/gitleaks/gitleaks, MIT licence), rewritten for Python's `re` with our token
boundaries. Each rule lists literal triggers: the rule runs only on texts that contain
one of them (`redact.py` finds them all in one pass).

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
_PORT_PATH = re.compile(r"^\d{1,5}(?:/|$)")
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.")

# Spelled out in lower, Capitalized and UPPER case instead of (?i): 5x faster on big
# texts. Names in other mixed cases (`PassWord`) are not recognised.
_KEYWORD = (
    r"(?:secret|Secret|SECRET|token|Token|TOKEN|passw(?:or)?d|Passw(?:or)?d|PASSW(?:OR)?D"
    r"|api[_-]?key|apiKey|Api[_-]?Key|API[_-]?KEY)"
)
_NAME_TAIL = r"s?(?:[_.-][A-Za-z0-9_.-]*)?"
SECRET_NAME = re.compile(
    r"(?i)^(?:auth|authorization|credentials?|"
    r"[A-Za-z0-9_.-]*(?:secret|token|passw(?:or)?d|(?:api|private|access|account)[_-]?key)"
    rf"{_NAME_TAIL})$"
)
"""A dict key whose string value is a secret (`{"auth": "..."}` in a Docker config)."""
# A command-line value: quoted (also JSON-escaped quotes) or a bare word.
_ARG = r"(?P<q>\\*[\"'])?(?P<value>(?(q)[^\"'\\\r\n]{1,256}|[^\s\"'\\;&|)]{1,256}))"
_BASIC = r"\\*[\"']?\s*[:=]\s*\\*[\"']?(?:Basic|basic|BASIC)\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})"
# Line separators inside a PEM block, also with `cat -n` / Read-tool line numbers.
_PEM_SEP = r"(?:\s|\\+[nrt])+(?:\d{1,7}(?:[ \t:|→]|\\+t|\\u2192)+)?"


def not_a_value(value: str, *, quoted: bool, name: str) -> bool:
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
    return not_a_value(m.group("value"), quoted=quoted, name=name)


def _keep_url_password(m: re.Match[str]) -> bool:
    value = m.group("value")
    return bool(_PORT_PATH.match(value)) or not_a_value(value, quoted=True, name="")


def _keep_placeholder(m: re.Match[str]) -> bool:
    return not_a_value(m.group("value"), quoted=True, name="")


def _prefixed(kind: str, pattern: str, *triggers: str) -> SecretRule:
    return SecretRule(kind, re.compile(pattern), triggers)


def _valued(
    kind: str,
    pattern: str,
    triggers: tuple[str, ...],
    keep: Callable[[re.Match[str]], bool] | None = _keep_placeholder,
) -> SecretRule:
    return SecretRule(kind, re.compile(pattern), triggers, group="value", keep=keep)


_TOKENS: tuple[SecretRule, ...] = (
    _prefixed("anthropic_key", rf"s{_B}k-ant-[A-Za-z0-9_-]{{20,}}", "sk-ant-"),
    _prefixed("langfuse_key", rf"[ps]{_B}k-lf-[A-Za-z0-9-]{{8,}}", "k-lf-"),
    _prefixed(
        "openai_key", rf"s{_B}k-(?!ant-|lf-)(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{{20,}}{_E}", "sk-"
    ),
    _prefixed("aws_access_key_id", rf"A{_B}(?:KIA|SIA)[A-Z0-9]{{16}}{_E}", "AKIA", "ASIA"),
    _valued(
        "aws_secret_key",
        r"(?:aws|AWS)_?(?:secret|SECRET)(?:_access|_ACCESS)?_?(?:key|KEY)"
        r"\\*[\"']?\s*[:=]\s*\\*[\"']?"
        r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("aws", "AWS"),
        keep=None,
    ),
    _prefixed(
        "github_token",
        rf"g{_B}(?:h[pousr]_[A-Za-z0-9]{{36,}}|ithub_pat_[A-Za-z0-9_]{{22,}})",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    _prefixed("huggingface_token", rf"h{_B}f_[A-Za-z0-9]{{30,}}{_E}", "hf_"),
    _prefixed("gitlab_token", rf"g{_B}l(?:pat|ptt|rt)-[A-Za-z0-9_-]{{20,}}", "glpat-", "glptt-"),
    _prefixed(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
        "hooks.slack.com",
    ),
    _prefixed(
        "slack_token",
        rf"x{_B}(?:ox[baprse]-[A-Za-z0-9-]{{10,}}|app-\d-[A-Za-z0-9-]{{10,}})",
        "xox",
        "xapp-",
    ),
    _prefixed("stripe_key", rf"[srp]{_B}k_(?:live|test)_[A-Za-z0-9]{{16,}}", "k_live_", "k_test_"),
    _prefixed("google_api_key", rf"A{_B}Iza[0-9A-Za-z_-]{{35}}{_E}", "AIza"),
    # gitleaks-derived prefix formats
    _prefixed("npm_token", rf"n{_B}pm_[A-Za-z0-9]{{36}}{_E}", "npm_"),
    _prefixed("pypi_token", rf"p{_B}ypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{{50,}}", "pypi-AgEI"),
    _prefixed(
        "sendgrid_key", rf"S{_B}G\.[A-Za-z0-9_-]{{16,32}}\.[A-Za-z0-9_-]{{16,64}}{_E}", "SG."
    ),
    _prefixed("twilio_key", rf"S{_B}K[0-9a-fA-F]{{32}}{_E}", "SK"),
    _prefixed("digitalocean_token", rf"d{_B}o[por]_v1_[a-f0-9]{{64}}{_E}", "_v1_"),
    _prefixed("shopify_token", rf"s{_B}hp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}", "shp"),
    _prefixed("databricks_token", rf"d{_B}api[a-f0-9]{{32}}(?:-\d)?{_E}", "dapi"),
    _prefixed(
        "age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "AGE-SECRET"
    ),
    _prefixed("vault_token", rf"h{_B}v[sbr]\.[A-Za-z0-9_-]{{24,}}", "hvs.", "hvb.", "hvr."),
    _prefixed("telegram_bot_token", r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{33}" + _E, ":AA"),
)

# Passwords given on a command line, in a connection string or an auth header.
_CREDENTIALS: tuple[SecretRule, ...] = (
    _valued(
        "cli_password",
        r"(?:mysql|mysqldump|mysqladmin|mariadb(?:-dump)?)\b[^\n|;&]{0,200}?[ \t]-p"
        r"(?P<q>\\*[\"'])?(?P<value>(?(q)[^\"'\\\r\n]{1,256}|[^\s\"'\\;&|)-][^\s\"'\\;&|)]{0,255}))",
        ("mysql", "mariadb"),
    ),
    _valued(
        "cli_password",
        rf"(?:sshpass|docker[ \t]+login|podman[ \t]+login)\b[^\n|;&]{{0,200}}?[ \t]-p[ \t]*{_ARG}",
        ("sshpass", "login"),
    ),
    _valued("cli_password", rf"--pass(?:word|wd)?(?:=|[ \t]+){_ARG}", ("--pass",)),
    _valued(
        "basic_auth",
        r"curl\b[^\n|;&]{0,300}?(?:[ \t]-u|--user)(?:=|[ \t]*)\\*[\"']?[^\s:\"'\\]+:"
        r"(?P<value>[^\s\"'\\]{1,256})",
        ("curl",),
    ),
    _valued(  # `u(?<=[Aa]u)`: a literal first character keeps re's fast prefix scan
        "basic_auth",
        rf"u(?<=[Aa]u)thorization{_BASIC}",
        ("uthorization",),
        keep=None,
    ),
    _valued("basic_auth", rf"AUTHORIZATION{_BASIC}", ("AUTHORIZATION",), keep=None),
    _valued(
        "azure_key",
        r"(?:AccountKey|SharedAccessKey|AccessKey|SharedAccessSignature)="
        r"(?P<value>[A-Za-z0-9+/%&=:-]{20,}?={0,2})(?=[;\"'\s\\]|$)",
        ("ccountKey=", "ccessKey=", "ccessSignature="),
        keep=None,
    ),
    _valued(
        "docker_auth",
        r"\\*\"auth\\*\"\s*:\s*\\*\"(?P<value>[A-Za-z0-9+/]{8,}={0,2})\\*\"",
        ('auth"', 'auth\\"'),
        keep=None,
    ),
)

RULES: tuple[SecretRule, ...] = (
    # Order matters: specific formats first, so `OPENAI_API_KEY=sk-...` is counted once as
    # an OpenAI key and the generic assignment rule then sees a marker and leaves it alone.
    SecretRule(
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
            r"(?:[\s\S]{0,20000}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----"
            rf"|(?:{_PEM_SEP}(?:[A-Za-z0-9+/=]{{4,}}|[A-Za-z-]+: [^\n\\]*))*)"
        ),
        ("PRIVATE KEY",),
    ),
    _prefixed(
        "jwt", rf"e{_B}yJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{10,}}", "eyJ"
    ),
    *_TOKENS,
    *_CREDENTIALS,
    _valued(
        "bearer_token",
        r"[Bb]earer\s+(?P<value>(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)",
        ("earer",),
        keep=None,
    ),
    _valued(  # after Bearer and Basic: `Token …`, `Digest …` or a bare credential
        "auth_header",
        r"u(?<=[Aa]u)thorization\\*[\"']?\s*[:=]\s*\\*[\"']?(?:[A-Za-z-]+[ \t]+)?"
        r"(?P<value>[A-Za-z0-9+/._~=-]{8,})",
        ("uthorization",),
    ),
    _valued(
        "url_password",
        r"://[^\s:/@'\"\\]*:(?P<value>[^\s'\"\\]{1,256}?)"
        r"@(?=[A-Za-z0-9.\[\]_-]+(?:[:/?#\s'\"\\),;]|$))",
        ("://",),
        keep=_keep_url_password,
    ),
    _valued(
        "assignment",
        rf"(?P<name>{_KEYWORD}{_NAME_TAIL})"
        r"\\*[\"']?[ \t]*(?::|=(?!=))[ \t]*(?P<q>\\*[\"'])?"
        r"(?P<value>(?(q)[^\s\"'\\][^\"'\\\r\n]{0,255}|[^\s\"'\\,;&)\]}{(\[]{1,256}))",
        (
            "ecret",
            "ECRET",
            "oken",
            "OKEN",
            "assw",
            "ASSW",
            "pi_key",
            "pi-key",
            "pikey",
            "piKey",
            "pi_Key",
            "pi-Key",
            "PI_KEY",
            "PI-KEY",
            "PIKEY",
        ),
        keep=_keep_assignment,
    ),
)
"""Every rule, in the order they are applied."""
