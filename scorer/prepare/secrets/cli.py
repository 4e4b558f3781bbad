"""Passwords given to command-line tools, from their manuals: the flag that takes a
password, per program, and the commands that read one from their arguments.

Written from the tools' documentation after the held-out set v1 showed short flags
(`sqlcmd -P`, `ldapsearch -w`, `mongosh -p`, …) get past the generic `--password` rule
(docs/security.md says which held-out cases moved to the tuning set because of it).
"""

from __future__ import annotations

from scorer.prepare.secrets.base import SecretRule, valued

_VALUE = r"(?P<q>[\"'])?(?P<value>(?(q)[^\"'\r\n]{1,1024}|[^\s\"'\\;&|)]{1,256}))"

# (program regex, its password flag regex, literal triggers). Flags ending in `/`, `,`
# or `=`, and empty ones, take the value glued on; the others after a space or `=`.
_PROGRAMS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (r"sqlcmd|bcp|osql|isql", "-P", ("sqlcmd", "bcp", "osql", "isql")),
    (r"mongo(?:sh|dump|restore|export|import|stat|top|files)?", r"-p|--password", ("mongo",)),
    (r"ldap(?:search|modify|add|delete|passwd|compare|whoami|exop)", r"-w", ("ldap",)),
    (r"zip|unzip|zipcloak", r"-P", ("zip",)),
    (r"ssh-keygen", r"-[NP]", ("ssh-keygen",)),
    (r"az", r"-p|--password", ("az ",)),
    (r"lftp", r"-u[ \t]+[^\s,]+,", ("lftp",)),  # -u user,password
    (r"svn", r"--password", ("svn",)),
    (r"sqlplus|sqlcl", r"[\w.-]+/", ("sqlplus", "sqlcl")),  # sqlplus user/password@db
    (
        r"rabbitmqctl[ \t]+(?:add_user|change_password|authenticate_user)[ \t]+\S+",
        "",
        ("rabbitmqctl",),
    ),
    (r"7z|7za|7zr|rar|unrar", "-p", ("7z", "rar ")),  # glued: 7z -pSECRET
)


def _program_rule(program: str, flag: str, triggers: tuple[str, ...]) -> SecretRule:
    glued = not flag or (flag == "-p" and "7z" in program) or flag.endswith(("/", ",", "="))
    sep = "" if glued else r"(?:=|[ \t]+)"
    pattern = rf"(?<![\w.-])(?:{program})\b[^\n|;&]{{0,200}}?[ \t](?:{flag}){sep}{_VALUE}"
    return valued("cli_password", pattern, triggers, back=2)


CLI_RULES: tuple[SecretRule, ...] = (
    *(_program_rule(*program) for program in _PROGRAMS),
    # smbclient -U 'DOMAIN\user%password'
    valued(
        "cli_password",
        r"smbclient\b[^\n|;&]{0,200}?[ \t]-U[ \t]*[\"']?[^\s%\"']+%(?P<q>)(?P<value>[^\s\"']{1,256})",
        ("smbclient",),
    ),
    # echo 'password' | sudo -S …
    valued(
        "cli_password",
        r"echo[ \t]+(?P<q>[\"'])?(?P<value>(?(q)[^\"'\n]{1,256}|[^\s|;&]{1,256}))(?(q)[\"'])"
        r"[ \t]*\|[ \t]*sudo\b[^\n|;&]*?[ \t]-\w*S",
        ("sudo",),
    ),
    # redis-cli's prompt: `127.0.0.1:6379> AUTH [user] password`
    valued(
        "cli_password",
        r"(?im)>[ \t]*AUTH[ \t]+(?:\S+[ \t]+)?(?P<q>[\"'])?(?P<value>[^\s\"']{1,256})(?(q)[\"'])[ \t]*$",
        ("AUTH", "auth"),
    ),
)
"""Program-specific password flags (see the module docstring)."""
