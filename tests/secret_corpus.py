"""A corpus of secret formats as coding agents really print them, one per transcript.

Each entry says where the secret shows up (the user's prompt, a Bash command line, or a
tool's output: config files, env dumps, `cat -n`, the Read tool's `N→` lines, `curl -v`)
and which strings must never reach the judge, the renderer, the store or Langfuse.
Fake secrets are assembled from pieces so this file does not trip secret scanners.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

A36 = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"  # 36 mixed alnum
H32 = "9f86d081884c7d659a2feaa0c55ad015"  # 32 hex
H64 = H32 + "a3bf4f1b2b0b822cd15d6c15b0f00a08"
B64_40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYZq8Lm4Np2K"
SESSION_ID = "5e5e5e5e-0000-4000-8000-00000000c0de"


@dataclass(frozen=True)
class Case:
    """One secret format: where it appears, the text around it, and what must vanish."""

    kind: str
    where: str
    """`prompt`, `command` (a Bash tool call) or `output` (the tool's result)."""
    text: str
    secrets: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.where}-{zlib.crc32(self.text.encode()) % 10_000:04d}"


def _c(kind: str, where: str, text: str, *secrets: str) -> Case:
    return Case(kind, where, text, secrets)


_PEM = "PRIVATE" + " KEY"
_RSA_1 = "MIIEpAIBAAKCAQEA7bq98zR2x0Qe1KxV4nV3Q9kLm"
_RSA_2 = "Qk9aXcVbNm2LpQrStUvWxYz0123456789ABCDEFgh"
_AGE = ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:58]
_TG = "123456789:AA" + "Fq3xYz" + A36[:27]

CORPUS: list[Case] = [
    _c(
        "anthropic_key",
        "output",
        "HOME=/root\nANTHROPIC_API_KEY=sk-" + "ant-api03-" + A36 + "-Qz9_x\nPATH=/usr/bin",
        "api03-" + A36,
    ),
    _c(
        "openai_key",
        "output",
        "     1\tDEBUG=1\n     2\tOPENAI_API_KEY=sk-" + "proj-" + A36 + "T3Blbk\n     3\tPORT=80",
        "proj-" + A36,
    ),
    _c(
        "openai_key",
        "prompt",
        'my code does client = OpenAI(api_key="sk-' + A36 + 'Zx81kPq0Lm2N") and fails',
        A36 + "Zx81kPq0Lm2N",
    ),
    _c(
        "langfuse_key",
        "command",
        "export LANGFUSE_SECRET_KEY=sk-"
        + "lf-1c2b3a4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d && python app.py",
        "1c2b3a4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
    ),
    _c(
        "aws_access_key_id",
        "output",
        "[default]\naws_access_key_id = AKIA" + "Q7ZR2XW5NB4KJ8LD\nregion = eu-west-1",
        "Q7ZR2XW5NB4KJ8LD",
    ),
    _c(
        "aws_secret_key",
        "output",
        "[default]\nregion = eu-west-1\naws_secret_access_key = " + B64_40 + "\n",
        B64_40,
    ),
    _c(
        "github_token",
        "output",
        "origin\thttps://ghp" + "_" + A36 + "@github.com/o/r.git (fetch)",
        A36,
    ),
    _c(
        "github_token",
        "command",
        "echo github" + "_pat_11ABCDEFG0" + A36 + "_" + A36 + " | gh auth login --with-token",
        "11ABCDEFG0" + A36,
    ),
    _c(
        "github_token",
        "output",
        "github.com:\n    oauth_token: gho" + "_" + A36 + "\n    user: bob",
        A36,
    ),
    _c(
        "gitlab_token",
        "command",
        'curl --header "PRIVATE-TOKEN: glpat'
        + '-xY9-kL2mN4pQ6rS8tU0v" https://gitlab.com/api/v4/projects',
        "xY9-kL2mN4pQ6rS8tU0v",
    ),
    _c(
        "slack_token",
        "output",
        "SLACK_BOT=xoxb" + "-1234567890-0987654321-" + A36[:24] + "\nTERM=xterm",
        A36[:24],
    ),
    _c(
        "slack_token",
        "prompt",
        "the socket mode app token is xapp" + "-1-A0B1C2D3E4-5566778899-" + A36[:20],
        A36[:20],
    ),
    _c(
        "slack_webhook",
        "command",
        'curl -X POST -d \'{"text":"hi"}\' https://hooks.' + "slack.com/services/T0ABC1DEF/"
        "B0GHI2JKL/" + A36[:24],
        "T0ABC1DEF/B0GHI2JKL/" + A36[:24],
    ),
    _c(
        "stripe_key",
        "output",
        "    11→import stripe\n    12→stripe.api_key = 'sk" + "_live_51H" + A36[:24] + "'\n",
        "51H" + A36[:24],
    ),
    _c("stripe_key", "output", "restricted: rk" + "_live_51J" + A36[:21], "51J" + A36[:21]),
    _c(
        "google_api_key",
        "command",
        'curl "https://maps.googleapis.com/maps/api/geocode/json?address=x&key=AI'
        + "za"
        + "SyD"
        + A36[:32]
        + '"',
        "SyD" + A36[:32],
    ),
    _c(
        "jwt",
        "output",
        "< HTTP/1.1 200 OK\n< set-cookie: session=ey"
        + "JhbGciOiJIUzI1NiJ9.ey"
        + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U; Path=/",
        "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    ),
    _c(
        "private_key",
        "output",
        "-----BEGIN OPENSSH "
        + _PEM
        + "-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
        "c2gtZWQyNTUxOQAAACBf8Q2w\n-----END OPENSSH " + _PEM + "-----\n",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
        "c2gtZWQyNTUxOQAAACBf8Q2w",
    ),
    _c(  # `cat -n key.pem | head -3`: line numbers, no END line
        "private_key",
        "output",
        f"     1\t-----BEGIN RSA {_PEM}-----\n     2\t{_RSA_1}\n     3\t{_RSA_2}\n",
        _RSA_1,
        _RSA_2,
    ),
    _c(  # the Read tool with a limit: `N→` line numbers, no END line
        "private_key",
        "output",
        f"     1→-----BEGIN {_PEM}-----\n     2→{_RSA_2}\n     3→{_RSA_1}",
        _RSA_1,
        _RSA_2,
    ),
    _c(  # a service-account JSON file: the key is a JSON string with \n escapes
        "private_key",
        "output",
        '{"type": "service_account", "private_key_id": "4f1b", "private_key": '
        f'"-----BEGIN {_PEM}-----\\n{_RSA_1}\\n{_RSA_2}\\n-----END {_PEM}-----\\n", '
        '"client_email": "bot@p.iam.gserviceaccount.com"}',
        _RSA_1,
        _RSA_2,
    ),
    _c(
        "url_password",
        "output",
        "DATABASE_URL=postgres://app:pa/ss9w0rd" + "@db.internal:5432/app\nDEBUG=0",
        "pa/ss9w0rd",
        "ss9w0rd",
    ),
    _c(
        "url_password",
        "command",
        "redis-cli -u redis://:p@ssW0rd" + "42@cache:6379 ping",
        "p@ssW0rd42",
        "ssW0rd42",
    ),
    _c(
        "url_password",
        "prompt",
        "connect with mongodb+srv://admin:Mongo5ecret" + "99@cluster0.abcd.mongodb.net/test",
        "Mongo5ecret99",
    ),
    _c(
        "url_password",
        "output",
        "$ cat ~/.git-credentials\nhttps://bob:gh5ecretPassw0rd" + "@git.example.com\n",
        "gh5ecretPassw0rd",
    ),
    _c(
        "cli_password",
        "command",
        "mysql -u root -pS3cr3t" + "Pw! -h 127.0.0.1 app -e 'select 1'",
        "S3cr3tPw!",
    ),
    _c(
        "cli_password",
        "command",
        "mysqldump --user=root --password=hunter" + "Two app > dump.sql",
        "hunterTwo",
    ),
    _c(
        "cli_password",
        "command",
        "sshpass -p 'Sup3r-S3cret" + "' ssh deploy@10.0.0.5 uptime",
        "Sup3r-S3cret",
    ),
    _c(
        "cli_password",
        "command",
        "docker login -u bob -p Dkr9" + "passWord registry.example.com",
        "Dkr9passWord",
    ),
    _c(
        "basic_auth",
        "command",
        "curl -sf -u admin:Adm1n" + "Pass! https://api.example.com/health",
        "Adm1nPass!",
    ),
    _c(
        "basic_auth",
        "output",
        "> GET / HTTP/1.1\n> Host: api\n> Authorization: Basic YWRtaW46QWRt"
        + "MW5QYXNzIQ==\n> Accept: */*",
        "YWRtaW46QWRtMW5QYXNzIQ==",
    ),
    _c(
        "azure_key",
        "output",
        "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;AccountName=acct;"
        "AccountKey=" + B64_40 + "Zm9vYmFyYmF6==;EndpointSuffix=core.windows.net",
        B64_40,
    ),
    _c(
        "docker_auth",
        "output",
        '{\n  "auths": {\n    "ghcr.io": {\n      "auth": "Ym9iOmdocF9zZWNy'
        + 'ZXQxMjM0NTY="\n    }\n  }\n}',
        "Ym9iOmdocF9zZWNyZXQxMjM0NTY=",
    ),
    _c(
        "telegram_bot_token",
        "command",
        "curl -s https://api.telegram.org/bot" + _TG + "/sendMessage -d chat_id=42 -d text=hi",
        _TG.split(":")[1],
    ),
    _c(
        "bearer_token",
        "command",
        'curl -H "Authorization: Bear' + "er tok_" + A36 + '" https://api.example.com/v1/me',
        "tok_" + A36,
    ),
    _c("huggingface_token", "output", "HF_TOKEN=hf" + "_" + A36[:34] + "\nUSER=bob", A36[:34]),
    _c(
        "npm_token",
        "output",
        "$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken=npm" + "_" + A36 + "\n",
        A36,
    ),
    _c(
        "pypi_token",
        "output",
        "[pypi]\n  username = __token__\n  password = pypi"
        + "-AgEIcHlwaS5vcmc"
        + A36
        + "CJDlkNzA1ZmEtZGQx",
        A36 + "CJDlkNzA1ZmEtZGQx",
    ),
    _c(
        "sendgrid_key",
        "output",
        "SENDGRID_API_KEY=SG"
        + ".ngeVfQFYQlKU0ufo8x5d1A."
        + "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
        "TwL2iGABf9DHoTf-09kqeF8tAmbihYzrnopKc-1s5cr",
    ),
    _c("twilio_key", "output", "twilio api key: SK" + H32 + " (sid)", H32),
    _c("digitalocean_token", "command", "doctl auth init -t dop" + "_v1_" + H64, H64),
    _c(
        "shopify_token",
        "command",
        "curl -H 'X-Shopify-Access-Token: shpat" + "_" + H32 + "' https://shop.myshopify.com",
        H32,
    ),
    _c(
        "databricks_token",
        "output",
        "host = https://x.cloud.databricks.com\ntoken = dapi" + H32,
        H32,
    ),
    _c(
        "age_secret_key",
        "output",
        "# created: 2026-11-20\n# public key: age1ql3z7hjy54pw3hyww5ay\nAGE-SECRET-KEY-1" + _AGE,
        _AGE,
    ),
    _c("vault_token", "command", "export VAULT_ADDR=https://v:8200 VAULT_TOKEN=hvs." + A36, A36),
    _c(
        "assignment",
        "output",
        'database:\n  host: db\n  password: "Yaml5ecret' + 'Value"\n  port: 5432',
        "Yaml5ecretValue",
    ),
    _c(
        "assignment",
        "output",
        "    22→SECRET_KEY = 'django-insecure-8f7e6d5c4b3a2918" + "'\n    23→DEBUG = True",
        "django-insecure-8f7e6d5c4b3a2918",
    ),
    _c(
        "assignment",
        "output",
        "$ env | sort\nDB_PASS" + "WORD=hunter2xK9\nHOME=/root",
        "hunter2xK9",
    ),
    _c(
        "assignment",
        "output",
        '{"client_id": "app", "client_sec' + 'ret": "cs_9Qm2Lx7Vb4Np", "scopes": []}',
        "cs_9Qm2Lx7Vb4Np",
    ),
]


def transcript_lines(case: Case) -> list[dict]:
    """A small native Claude Code transcript with the case's text in its place."""
    base = {"sessionId": SESSION_ID, "cwd": "/home/dev/app", "version": "2.1.39"}
    prompt = "Please deploy the app and check it works."
    command = "cat config/settings.txt"
    output = "ok"
    if case.where == "prompt":
        prompt += "\n" + case.text
    elif case.where == "command":
        command = case.text
    else:
        output = case.text
    return [
        {**base, "type": "user", "uuid": "u1", "timestamp": "2026-11-20T09:00:00Z",
         "message": {"role": "user", "content": prompt}},
        {**base, "type": "assistant", "uuid": "a1", "timestamp": "2026-11-20T09:00:05Z",
         "message": {"id": "msg_1", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                  "input": {"command": command}}],
                     "usage": {"input_tokens": 10, "output_tokens": 5}}},
        {**base, "type": "user", "uuid": "u2", "timestamp": "2026-11-20T09:00:09Z",
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "toolu_1", "content": output}]}},
        {**base, "type": "assistant", "uuid": "a2", "timestamp": "2026-11-20T09:00:12Z",
         "message": {"id": "msg_2", "role": "assistant", "model": "claude-sonnet-4-5",
                     "content": [{"type": "text", "text": "Deployed and checked."}],
                     "usage": {"input_tokens": 20, "output_tokens": 5}}},
    ]  # fmt: skip


def write_transcript(case: Case, folder: Path) -> Path:
    path = folder / f"{SESSION_ID}.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in transcript_lines(case)) + "\n")
    return path


def leaked(case: Case, blob: str) -> list[str]:
    """The secrets of `case` (also JSON-escaped) that occur in `blob`."""
    found = []
    for secret in case.secrets:
        if secret in blob or json.dumps(secret)[1:-1] in blob:
            found.append(secret)
    return found


CORPUS += [
    _c(
        "auth_header",
        "output",
        "> GET /api/items/ HTTP/1.1\n> Authorization: Token 9944b09199c62bcf9418ad846dd0e4bb"
        + "dfc6ee4b\n> Accept: application/json",
        "9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b",
    ),
]


# ---- issue 25: the families an independent adversary found leaking (tuning set) ----------
# Written from the list; the rules were written from these. Held-out cases whose
# misses were used to change a rule are moved here too (see docs/security.md).
_R = "q7Zx2Lm9Kp4Vt8Nw3Hy6Rb1Jc5Gd0Fs"  # 32 mixed
_H40 = H32 + "0a1b2c3d"
_ETH = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
_B64_44 = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
_WORDS = "legal winner thank year wave sausage worth useful legal winner thank yellow"
_PPK_1 = "AAAAIFT3n9uWvX1z0kq2Lrj8Yc4Hh5Pz6Tq0VmNa3Bc9"
_PPK_2 = "AAAAEGx1Y2t5X3N0cmluZ19oZXJlAAAAIQDv3wHk"

CORPUS += [
    _c("mailgun_key", "output", "MAILGUN_DOMAIN=mg.acme.io\nMG_KEY=key-" + H32 + "\n", H32),
    _c("discord_token", "command",
       "curl -H 'Authorization: Bot MTE5NzM0" + "NzY5ODk5ODk1NzE4OA.GhJkLm.abcDEF1234_ghiJKL5678-mnoPQRstuVWxyz'"
       " https://discord.com/api/v10/users/@me", "GhJkLm.abcDEF1234_ghiJKL5678"),
    _c("discord_webhook", "output",
       "WEBHOOK=https://discord.com/api/" + "webhooks/1197347698998957188/" + A36 + "_xY",
       A36),
    _c("doppler_token", "command", "doppler run --token dp.st." + "prd." + A36 + "Abcd -- ./app",
       A36),
    _c("google_oauth_token", "output", "$ gcloud auth print-access-token\nya29." + "a0AfB_" + A36 + A36[:20],
       A36 + A36[:20]),
    _c("heroku_key", "output", "HEROKU_API_KEY=HRKU-" + "AA" + A36 + "_" + A36[:20], A36),
    _c("linear_key", "command",
       "curl -H 'Authorization: lin_api_" + A36 + "Qw12' https://api.linear.app/graphql", A36),
    _c("notion_token", "output", "NOTION=ntn_" + "12345678901" + A36[:35], A36[:35]),
    _c("stripe_webhook_secret", "output", "> Ready! Your webhook signing secret is whsec_" + A36 + " (^C to quit)", A36),
    _c("postman_key", "command", "newman run c.json --postman-api-key PMAK-" + H32[:24] + "-" + H64[:34],
       H64[:34]),
    _c("sentry_token", "output", "SENTRY_AUTH=sntrys_" + "eyJpYXQiOjE3MDAwMDAwMDAuMH0" + A36, A36),
    _c("atlassian_token", "command",
       "curl -u bob@acme.io:ATATT3xFfGF0" + A36 + A36 + "=0A1B2C3D https://acme.atlassian.net/rest/api/3/myself",
       A36),
    _c("auth_header", "command",
       "curl -H 'X-Auth-Email: bob@acme.io' -H 'X-Auth-Key: " + H32 + "abcde' https://api.cloudflare.com/client/v4/zones",
       H32),
    _c("zapier_webhook", "command", "curl -X POST https://hooks." + "zapier.com/hooks/catch/1234567/ab" + "c9xyz/ -d x=1",
       "1234567/abc9xyz"),
    _c("url_signature", "output",
       "https://acct.blob.core.windows.net/c/f.txt?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-01&sig=" + B64_40.replace("/", "%2F") + "%3D",
       B64_40[:20].replace("/", "%2F")),
    _c("url_signature", "output",
       "https://bkt.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIA"
       "Q7ZR2XW5NB4KJ8LD%2F20261125%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261125T000000Z"
       "&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature=" + H64, H64),
    _c("putty_key", "output",
       "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n"
       "AAAAC3NzaC1lZDI1NTE5AAAAIKx\nAAAAB3Nz\nPrivate-Lines: 2\n" + _PPK_1 + "\n" + _PPK_2
       + "\nPrivate-MAC: " + H64, _PPK_1, _PPK_2, H64),
    _c("assignment", "output",
       "[Interface]\nAddress = 10.0.0.2/32\nPrivateKey = " + _B64_44 + "\nDNS = 1.1.1.1\n", _B64_44),
    _c("assignment", "output",
       "users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n"
       "    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB" + A36 + "\n",
       "LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQpNSUlFcEFJQkFBS0NBUUVB"),
    _c("crypto_private_key", "prompt", "deploy with the wallet private key 0x" + _ETH + " on sepolia", _ETH),
    _c("mnemonic", "output", "Your recovery phrase (write it down):\n" + _WORDS + "\n", _WORDS),
    _c("assignment", "output",
       "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
       "  username: YWRtaW4=\n  dbhost: ZGIuaW50ZXJuYWw=\n  pw: " + "UzNjcjN0LVBhc3N3MHJkIQ==\n",
       "UzNjcjN0LVBhc3N3MHJkIQ=="),
    _c("assignment", "output", "$ cat .npmrc\nregistry=https://npm.acme.io/\n_auth=" + "Ym9iOlMzY3IzdFBhc3M=\nalways-auth=true",
       "Ym9iOlMzY3IzdFBhc3M="),
    _c("assignment", "output",
       '{\n    "Credentials": {\n        "AccessKeyId": "ASIAQ7ZR2XW5NB4KJ8LD",\n        "SecretAccessKey": "'
       + B64_40 + '",\n        "SessionToken": "FwoGZXIvYXdzE' + A36 + '"\n    }\n}', B64_40, A36),
    _c("assignment", "command",
       "isql -v -k 'DRIVER={ODBC Driver 18};SERVER=db;UID=sa;PWD=" + "Odbc5ecretPw;DATABASE=app'",
       "Odbc5ecretPw"),
    _c("assignment", "output", "[mysql]\ndbuser = app\ndbpass = " + "My5qlPassw0rdX\n", "My5qlPassw0rdX"),
    _c("assignment", "command",
       "curl 'https://api.acme.io/v1/export?format=csv&access_key=" + H32 + "&limit=10'", H32),
    _c("cookie", "output",
       "< HTTP/2 302\n< set-cookie: sessionid=" + _R + "q7Zx2Lm9; expires=Thu, 26 Nov 2026; HttpOnly; Path=/",
       _R),
    _c("assignment", "output", "version: \"2\"\nauthtoken: " + "2Ab" + A36 + "_4Cd\nregion: eu", A36),
    _c("assignment", "output",
       "$ cat ~/.netrc\nmachine api.heroku.com\n  login bob@acme.io\n  password " + _R + "\n", _R),
    _c("cli_password", "command", "redis-cli -h cache -a " + "R3dis5ecretPw --no-auth-warning ping", "R3dis5ecretPw"),
    _c("cli_password", "command",
       "keytool -importkeystore -srckeystore a.p12 -srcstorepass " + "Src5torePw1 -destkeystore b.jks "
       "-deststorepass " + "Dst5torePw2", "Src5torePw1", "Dst5torePw2"),
    _c("cli_password", "command", "openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:" + "Pkcs12Pw9x",
       "Pkcs12Pw9x"),
    _c("cli_password", "command", "htpasswd -b -c /etc/nginx/.htpasswd admin " + "Htp4sswdPw", "Htp4sswdPw"),
    _c("pgpass", "output", "$ cat ~/.pgpass\ndb.internal:5432:app:app_user:" + "Pgp4ssSecret7\n", "Pgp4ssSecret7"),
    _c("positional_credential", "output",
       "    7→client = Client(account_sid, '" + H32 + "')\n    8→client.messages.create(to=n)", H32),
    _c("positional_credential", "output",
       "    server = smtplib.SMTP_SSL('smtp.gmail.com', 465)\n    server.login(user, \"" + "Smtp5ecretPw\")",
       "Smtp5ecretPw"),
]  # fmt: skip
