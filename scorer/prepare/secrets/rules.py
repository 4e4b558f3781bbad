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

from scorer.prepare.secrets.base import (
    NAME_TAIL,
    SECRET_PREFIXES,
    SecretRule,
    keep_url_password,
    name_before,
    not_a_value,
    prefixed,
    valued,
)
from scorer.prepare.secrets.base import B as TOKEN_START
from scorer.prepare.secrets.base import E as TOKEN_END
from scorer.prepare.secrets.entropy import ENCODED_RULE, ENTROPY_RULE
from scorer.prepare.secrets.names import NAME_RULES
from scorer.prepare.secrets.structure import STRUCTURE_RULES
from scorer.prepare.secrets.vendors import VENDOR_RULES

_B, _E = TOKEN_START, TOKEN_END

# Spelled out in lower, Capitalized and UPPER case instead of (?i): 5x faster on big
# texts. Names in other mixed cases (`PassWord`) are not recognised.
_KEYWORD = (
    r"(?:secret|Secret|SECRET|token|Token|TOKEN|passw(?:or)?d|Passw(?:or)?d|PASSW(?:OR)?D"
    r"|api[_-]?key|apiKey|Api[_-]?Key|API[_-]?KEY)"
)
# Issue 25's names: rarer in text, so tried only around their triggers (anchored rule).
_MORE_KEYWORDS = (
    r"(?:pass(?:phrase|code)?(?![a-z])|Pass(?:phrase|code)?(?![a-z])|PASS(?:PHRASE|CODE)?(?![A-Z])"
    r"|_auth(?![A-Za-z])|credentials?|Credentials?|CREDENTIALS?"
    r"|(?:private|access|client|signing|encryption|master|session|preshared|auth)[_-]?(?:key|Key)"
    r"(?![a-z])|(?:Private|Access|Client|Signing|Encryption|Master|Session|Preshared|Auth)[_-]?Key"
    r"(?![a-z])|(?:PRIVATE|ACCESS|CLIENT|SIGNING|ENCRYPTION|MASTER|SESSION|AUTH)[_-]?KEY(?![A-Z])"
    r"|key[_-]data|KeyData|KEY_DATA)"
)
_NAME_TAIL = NAME_TAIL
_ASSIGN = (
    r"\\*[\"']?[ \t]*(?::|=(?!=))[ \t]*(?P<q>\\*[\"'])?"
    r"(?P<value>(?(q)[^\s\"'\\][^\"'\\\r\n]{0,255}|[^\s\"'\\,;&)\]}{(\[]{1,256}))"
)
# A command-line value: quoted (also JSON-escaped quotes) or a bare word.
_ARG = r"(?P<q>\\*[\"'])?(?P<value>(?(q)[^\"'\\\r\n]{1,256}|[^\s\"'\\;&|)]{1,256}))"
_BASIC = r"\\*[\"']?\s*[:=]\s*\\*[\"']?(?:Basic|basic|BASIC)\s+(?P<value>[A-Za-z0-9+/]{6,}={0,2})"
# Line separators inside a PEM block, also with `cat -n` / Read-tool line numbers.
_PEM_SEP = r"(?:\s|\\+[nrt])+(?:\d{1,7}(?:[ \t:|→]|\\+t|\\u2192)+)?"


def _secret_prefix(name: str, m: re.Match[str]) -> bool:
    prefix = name[: len(name) - len(m.group("name"))].lower().lstrip("_-.")
    return prefix.endswith(SECRET_PREFIXES)


def _keep_assignment(m: re.Match[str]) -> bool:
    quoted = bool(m.group("q"))
    following = m.string[m.end() : m.end() + 1]
    if not quoted and following in ("(", "["):  # a call or subscript: code, not a value
        return True
    name = name_before(m)
    if not (name[0].isalpha() or name[0] == "_"):  # `seed=124-tokens=...` is a file name
        return True
    before = m.string[m.start() - 1 : m.start()]
    if before.islower() and m.group("name")[0].islower() and not _secret_prefix(name, m):
        return True  # `tiktoken`, `bypass`; but `authtoken`, `dbpass`, `accessToken`
    return not_a_value(m.group("value"), quoted=quoted, name=name)


_TOKENS: tuple[SecretRule, ...] = (
    prefixed("anthropic_key", rf"s{_B}k-ant-[A-Za-z0-9_-]{{20,}}", "sk-ant-"),
    prefixed("langfuse_key", rf"[ps]{_B}k-lf-[A-Za-z0-9-]{{8,}}", "k-lf-"),
    prefixed("openai_key", rf"s{_B}k-(?!ant-|lf-)(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{{20,}}{_E}", "sk-"),
    prefixed("aws_access_key_id", rf"A{_B}(?:KIA|SIA)[A-Z0-9]{{16}}{_E}", "AKIA", "ASIA"),
    valued(
        "aws_secret_key",
        r"(?:aws|AWS)_?(?:secret|SECRET)(?:_access|_ACCESS)?_?(?:key|KEY)"
        r"\\*[\"']?\s*[:=]\s*\\*[\"']?"
        r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        ("aws", "AWS"),
        keep=None,
    ),
    prefixed(
        "github_token",
        rf"g{_B}(?:h[pousr]_[A-Za-z0-9]{{36,}}|ithub_pat_[A-Za-z0-9_]{{22,}})",
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
        "github_pat_",
    ),
    prefixed("huggingface_token", rf"h{_B}f_[A-Za-z0-9]{{30,}}{_E}", "hf_"),
    prefixed("gitlab_token", rf"g{_B}l(?:pat|ptt|rt)-[A-Za-z0-9_-]{{20,}}", "glpat-", "glptt-"),
    prefixed(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
        "hooks.slack.com",
    ),
    prefixed(
        "slack_token",
        rf"x{_B}(?:ox[baprse]-[A-Za-z0-9-]{{10,}}|app-\d-[A-Za-z0-9-]{{10,}})",
        "xox",
        "xapp-",
    ),
    prefixed("stripe_key", rf"[srp]{_B}k_(?:live|test)_[A-Za-z0-9]{{16,}}", "k_live_", "k_test_"),
    prefixed("google_api_key", rf"A{_B}Iza[0-9A-Za-z_-]{{35}}{_E}", "AIza"),
    # gitleaks-derived prefix formats
    prefixed("npm_token", rf"n{_B}pm_[A-Za-z0-9]{{36}}{_E}", "npm_"),
    prefixed("pypi_token", rf"p{_B}ypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{{50,}}", "pypi-AgEI"),
    prefixed("sendgrid_key", rf"S{_B}G\.[A-Za-z0-9_-]{{16,32}}\.[A-Za-z0-9_-]{{16,64}}{_E}", "SG."),
    prefixed("twilio_key", rf"S{_B}K[0-9a-fA-F]{{32}}{_E}", "SK"),
    prefixed("digitalocean_token", rf"d{_B}o[por]_v1_[a-f0-9]{{64}}{_E}", "_v1_"),
    prefixed("shopify_token", rf"s{_B}hp(?:at|ca|pa|ss)_[a-fA-F0-9]{{32}}{_E}", "shp"),
    prefixed("databricks_token", rf"d{_B}api[a-f0-9]{{32}}(?:-\d)?{_E}", "dapi"),
    prefixed(
        "age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}", "AGE-SECRET"
    ),
    prefixed("vault_token", rf"h{_B}v[sbr]\.[A-Za-z0-9_-]{{24,}}", "hvs.", "hvb.", "hvr."),
    prefixed("telegram_bot_token", r"(?<!\d)\d{8,10}:AA[A-Za-z0-9_-]{33}" + _E, ":AA"),
)

# Passwords given on a command line, in a connection string or an auth header.
_CREDENTIALS: tuple[SecretRule, ...] = (
    valued(
        "cli_password",
        r"(?:mysql|mysqldump|mysqladmin|mariadb(?:-dump)?)\b[^\n|;&]{0,200}?[ \t]-p"
        r"(?P<q>\\*[\"'])?(?P<value>(?(q)[^\"'\\\r\n]{1,256}|[^\s\"'\\;&|)-][^\s\"'\\;&|)]{0,255}))",
        ("mysql", "mariadb"),
    ),
    valued(
        "cli_password",
        rf"(?:sshpass|docker[ \t]+login|podman[ \t]+login)\b[^\n|;&]{{0,200}}?[ \t]-p[ \t]*{_ARG}",
        ("sshpass", "login"),
    ),
    valued("cli_password", rf"--pass(?:word|wd)?(?:=|[ \t]+){_ARG}", ("--pass",)),
    valued(
        "basic_auth",
        r"curl\b[^\n|;&]{0,300}?(?:[ \t]-u|--user)(?:=|[ \t]*)\\*[\"']?[^\s:\"'\\]+:"
        r"(?P<value>[^\s\"'\\]{1,256})",
        ("curl",),
    ),
    valued(  # `u(?<=[Aa]u)`: a literal first character keeps re's fast prefix scan
        "basic_auth",
        rf"u(?<=[Aa]u)thorization{_BASIC}",
        ("uthorization",),
        keep=None,
    ),
    valued("basic_auth", rf"AUTHORIZATION{_BASIC}", ("AUTHORIZATION",), keep=None),
    valued(
        "azure_key",
        r"(?:AccountKey|SharedAccessKey|AccessKey|SharedAccessSignature)="
        r"(?P<value>[A-Za-z0-9+/%&=:-]{20,}?={0,2})(?=[;\"'\s\\]|$)",
        ("ccountKey=", "ccessKey=", "ccessSignature="),
        keep=None,
    ),
    valued(
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
    prefixed(
        "jwt", rf"e{_B}yJ[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{10,}}", "eyJ"
    ),
    *_TOKENS,
    *VENDOR_RULES,
    *_CREDENTIALS,
    *STRUCTURE_RULES,
    valued(
        "bearer_token",
        r"[Bb]earer\s+(?P<value>(?=[A-Za-z._~+/-]*\d)[A-Za-z0-9._~+/-]{20,}=*)",
        ("earer",),
        keep=None,
    ),
    valued(  # after Bearer and Basic: `Token …`, `Digest …` or a bare credential
        "auth_header",
        r"u(?<=[Aa]u)thorization\\*[\"']?\s*[:=]\s*\\*[\"']?(?:[A-Za-z-]+[ \t]+)?"
        r"(?P<value>[A-Za-z0-9+/._~=-]{8,})",
        ("uthorization",),
    ),
    valued(
        "url_password",
        r"://[^\s:/@'\"\\]*:(?P<value>[^\s'\"\\]{1,256}?)"
        r"@(?=[A-Za-z0-9.\[\]_-]+(?:[:/?#\s'\"\\),;]|$))",
        ("://",),
        keep=keep_url_password,
    ),
    valued(
        "assignment",
        rf"(?P<name>{_KEYWORD}{_NAME_TAIL}){_ASSIGN}",
        (
            *("ecret", "ECRET", "oken", "OKEN", "assw", "ASSW", "pi_key", "pi-key", "pikey"),
            *("piKey", "pi_Key", "pi-Key", "PI_KEY", "PI-KEY", "PIKEY"),
        ),
        keep=_keep_assignment,
    ),
    valued(
        "assignment",
        rf"(?P<name>{_MORE_KEYWORDS}{_NAME_TAIL}){_ASSIGN}",
        (
            *("pass", "Pass", "PASS", "_auth", "redential", "REDENTIAL", "Key", "key", "KEY"),
            *("_data", "Data", "_DATA"),
        ),
        keep=_keep_assignment,
        back=12,
    ),
    *NAME_RULES,  # the syntaxes the assignment rules do not read
    ENCODED_RULE,
    ENTROPY_RULE,  # last: what no format or name caught
)
"""Every rule, in the order they are applied."""
