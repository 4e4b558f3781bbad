"""HELD-OUT secret set, third batch (v3): written blind, by an adversary who has not read the
redaction rules, their docs, the tuning corpus, or the cases of v1/v2 (only `HeldOut`,
`Tokens`, `pane_text`, `leaked` and the v1/v2 module headers).

Same protocol as `tests/secret_heldout.py`: every case imitates what a real tool, config file
or agent prints (formats taken from the vendors' public docs, man pages and API references;
see each case's `source`), planted where a coding agent sees it: in the user's prompt, on a
Bash command line, in a tool's output, or in a tmux pane capture whose long lines wrap at 80
columns (`pane_text`). Never tuned on: a miss used to change a rule moves the case to the
tuning set and stops counting here.

`V3_NEGATIVES` are the other side: (line as printed, string that must SURVIVE redaction),
strings the judge needs and which look like secrets to a careless rule (git SHAs, UUIDs,
content hashes, integrity strings, digests, public keys, base64 of non-secret data, paths).

Every fake value is generated from a fixed seed with the real prefix, length and charset, so
no literal secret sits in this file. `_self_check()` (run at import) asserts that every
secret occurs in its case's text exactly as `leaked` looks for it, and that every negative
occurs in its line.
"""

from __future__ import annotations

import base64
import json
import string
import struct
import zlib

from tests.secret_heldout import HeldOut, Tokens, leaked, pane_text

_ALNUM = string.ascii_letters + string.digits
_LOWER_ALNUM = string.ascii_lowercase + string.digits
_UPPER_ALNUM = string.ascii_uppercase + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_B32 = string.ascii_uppercase + "234567"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_NIX32 = "0123456789abcdfghijklmnpqrsvwxyz"

_T = Tokens(25_2028)
_r, _mixed, _rng = _T.r, _T.mixed, _T.rng


def _h(kind: str, where: str, source: str, text: str, *secrets: str) -> HeldOut:
    return HeldOut(kind, where, text, secrets, source)


V3: list[HeldOut] = []
_add = lambda *a: V3.append(_h(*a))  # noqa: E731


# --- generators ---------------------------------------------------------------------------
def _bytes(n: int) -> bytes:
    return bytes(_rng.randrange(256) for _ in range(n))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _pw(n: int, symbols: str = "!#%+=@^_-~") -> str:
    """A password with upper, lower, digit and at least one symbol (shell-, JSON-, XML-safe)."""
    while True:
        s = _r(n, _ALNUM + symbols)
        if (
            any(c in symbols for c in s)
            and any(c.isdigit() for c in s)
            and any(c.isupper() for c in s)
            and any(c.islower() for c in s)
            and s[0] not in "-~=#@"
        ):
            return s


def _upw(n: int) -> str:
    """A password safe in URL userinfo without percent-encoding."""
    return _pw(n, "-_~.")


def _uuid() -> str:
    h = _r(32, _HEX)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[_rng.randrange(4)]}{h[17:20]}-{h[20:]}"


def _jwt(header: dict, payload: dict, sig_bytes: int = 256) -> str:
    enc = lambda d: _b64u(json.dumps(d, separators=(",", ":")).encode())  # noqa: E731
    return enc(header) + "." + enc(payload) + "." + _b64u(_bytes(sig_bytes))


def _lines(s: str, width: int) -> list[str]:
    return [s[i : i + width] for i in range(0, len(s), width)]


def _pem(label: str, der: bytes) -> tuple[str, list[str]]:
    body = _lines(_b64(der), 64)
    return f"-----BEGIN {label}-----\n" + "\n".join(body) + f"\n-----END {label}-----", body


def _ssh_string(b: bytes) -> bytes:
    return struct.pack(">I", len(b)) + b


def _openssh_ed25519(comment: bytes) -> tuple[str, list[str]]:
    pub = _bytes(32)
    pub_blob = _ssh_string(b"ssh-ed25519") + _ssh_string(pub)
    check = _bytes(4)
    priv = (
        check
        + check
        + _ssh_string(b"ssh-ed25519")
        + _ssh_string(pub)
        + _ssh_string(_bytes(32) + pub)
        + _ssh_string(comment)
    )
    priv += bytes(range(1, 1 + (-len(priv)) % 8))
    blob = (
        b"openssh-key-v1\0"
        + _ssh_string(b"none")
        + _ssh_string(b"none")
        + _ssh_string(b"")
        + struct.pack(">I", 1)
        + _ssh_string(pub_blob)
        + _ssh_string(priv)
    )
    body = _lines(_b64(blob), 70)
    text = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        + "\n".join(body)
        + "\n-----END OPENSSH PRIVATE KEY-----"
    )
    return text, body


def _ec_p256_der() -> bytes:
    return (
        bytes.fromhex("307702010104 20".replace(" ", ""))
        + _bytes(32)
        + bytes.fromhex("a00a06082a8648ce3d030107a144034200 04".replace(" ", ""))
        + _bytes(64)
    )


def _png_b64(w: int = 4, h: int = 4) -> str:
    def chunk(t: bytes, d: bytes) -> bytes:
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))

    raw = b"".join(b"\0" + bytes([0x80 + 8 * x + y for x in range(w)]) for y in range(h))
    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )
    return _b64(png)


_BIP39 = [
    "abandon",
    "ability",
    "absorb",
    "acoustic",
    "adapt",
    "advice",
    "afford",
    "agent",
    "airport",
    "alarm",
    "album",
    "alley",
    "amateur",
    "anchor",
    "ankle",
    "antique",
    "april",
    "arena",
    "armor",
    "arrow",
    "artist",
    "asthma",
    "atom",
    "auction",
    "august",
    "autumn",
    "avocado",
    "awkward",
    "axis",
    "canyon",
    "dragon",
    "galaxy",
    "harvest",
    "lemon",
    "orbit",
    "puzzle",
    "rocket",
    "sunset",
    "tiger",
    "timber",
    "umbrella",
    "velvet",
    "walnut",
    "window",
    "wrong",
    "zebra",
]


# ========================================================================================
# PROMPT: what the user types or pastes into the agent
# ========================================================================================
p = _pw(19)
_add(
    "prose_db_password",
    "prompt",
    "user prose (Postgres connection details in a request)",
    "The staging Postgres is at pg-staging.internal:5432, database `orders`, user "
    f"`orders_rw`, and the password is {p}. Can you wire it into docker-compose.override.yml "
    "so I can run the migration tests locally?",
    p,
)

k = "sk-ant-api03-" + _r(93, _URLSAFE) + "AA"
_add(
    "anthropic_key_prose",
    "prompt",
    "Anthropic Console API key (sk-ant-api03-…AA) pasted in prose",
    f"Use my Anthropic key for the integration tests: {k} . Put it in .env.test and make "
    "sure .env.test is gitignored.",
    k,
)

ref = _r(20, string.ascii_lowercase)
anon = _jwt(
    {"alg": "HS256", "typ": "JWT"},
    {"iss": "supabase", "ref": ref, "role": "anon", "iat": 1740000000, "exp": 2055576000},
    32,
)
svc = _jwt(
    {"alg": "HS256", "typ": "JWT"},
    {"iss": "supabase", "ref": ref, "role": "service_role", "iat": 1740000000, "exp": 2055576000},
    32,
)
dbp = _upw(22)
_add(
    "supabase_env_paste",
    "prompt",
    "Supabase project API settings (.env.local: anon key is public, service_role key is secret)",
    "here's my .env.local, the seed script fails with 401:\n\n"
    f"NEXT_PUBLIC_SUPABASE_URL=https://{ref}.supabase.co\n"
    f"NEXT_PUBLIC_SUPABASE_ANON_KEY={anon}\n"
    f"SUPABASE_SERVICE_ROLE_KEY={svc}\n"
    f"DATABASE_URL=postgresql://postgres.{ref}:{dbp}@aws-0-eu-central-1.pooler.supabase.com:6543/postgres\n",
    svc.split(".")[2],
    svc.split(".")[1][-40:],
    dbp,
)

key, body = _openssh_ed25519(b"deploy@build-02")
_add(
    "openssh_key_pasted",
    "prompt",
    "ssh-keygen -t ed25519 private key file (OpenSSH format) pasted by the user",
    "Here's the deploy key for the build box, add it as DEPLOY_KEY in the repo secrets and "
    f"use it in the release workflow:\n\n{key}\n",
    body[3],
    body[4][:20],
)

words = " ".join(_rng.choice(_BIP39) for _ in range(12))
_add(
    "bip39_seed_phrase",
    "prompt",
    "BIP-39 12-word mnemonic (wallet recovery phrase)",
    "For the Sepolia faucet bot, the test wallet seed phrase is:\n"
    f"{words}\nDerive the first account (m/44'/60'/0'/0/0) and print its address.",
    words,
)

tok = _r(24, _ALNUM)
hook = f"https://hooks.slack.com/services/T0{_r(8, _UPPER_ALNUM)}/B0{_r(9, _UPPER_ALNUM)}/{tok}"
_add(
    "slack_incoming_webhook_prose",
    "prompt",
    "Slack incoming webhook URL (api.slack.com/messaging/webhooks)",
    f"Post the nightly eval summary to #ml-evals, the incoming webhook is {hook} (don't "
    "commit it).",
    tok,
)

p = "-".join(w.capitalize() for w in _rng.sample(_BIP39, 4)) + "-" + _r(2, string.digits)
_add(
    "ssh_password_passphrase_style",
    "prompt",
    "user prose: SSH password that is a diceware-style passphrase",
    "ssh into the old Jenkins box (deploy@10.20.4.17), the password is "
    f"`{p}`. I know, we'll rotate it after the migration.",
    p,
)

root = "hvs." + _r(24, _ALNUM)
unseal = _b64(_bytes(32))
_add(
    "vault_dev_root_token_unseal_key",
    "prompt",
    "vault server -dev banner (Unseal Key / Root Token) relayed in prose",
    f"Vault dev server is up on :8200. Root token: {root} and the unseal key is {unseal} . "
    "Configure a kv-v2 mount at secret/ for the app and a policy that can only read "
    "secret/data/app/*.",
    root,
    unseal,
)

seed = _r(32, _B32)
_add(
    "totp_otpauth_uri",
    "prompt",
    "Key URI Format (otpauth://totp/…?secret=BASE32), Google Authenticator wiki",
    "Here's the otpauth URI from the QR code of the shared ops account, add it to the 2FA "
    "helper script so CI can log in:\n"
    f"otpauth://totp/ACME%20Ops:ops@acme.example?secret={seed}&issuer=ACME%20Ops&algorithm=SHA1&digits=6&period=30",
    seed,
)

tg = f"{_rng.randrange(10**9, 8 * 10**9)}:AA{_r(33, _URLSAFE)}"
_add(
    "telegram_bot_token_prose",
    "prompt",
    "Telegram Bot API token (core.telegram.org/bots/api: 123456:ABC-DEF1234ghIkl-…)",
    f"BotFather gave me this token for the alerts bot: {tg}\nWire it into alerts/telegram.py "
    "and send a test message to chat -1002211447788.",
    tg,
)

app = " ".join(_r(4, string.ascii_lowercase) for _ in range(4))
_add(
    "google_app_password_spaced",
    "prompt",
    "Google account app password (16 letters shown in 4 groups)",
    "For the SMTP relay use alerts@acme-corp.example with the Google app password "
    f"`{app}` (smtp.gmail.com:587, STARTTLS).",
    app,
)

p = _upw(20)
_add(
    "mongodb_srv_uri_prose",
    "prompt",
    "MongoDB Atlas 'Connect your application' SRV connection string",
    f"Our Atlas cluster string is mongodb+srv://analytics:{p}@cluster0.{_r(5, _LOWER_ALNUM)}"
    ".mongodb.net/?retryWrites=true&w=majority&appName=Cluster0 , please add it to the "
    "notebook config.",
    p,
)

p = _pw(16)
_add(
    "slash_separated_login",
    "prompt",
    "user prose: 'user / password' pair for a web UI",
    f"Grafana login for the staging stack is admin / {p} , dashboards JSON is under "
    "ops/dashboards. Export the 'API latency' one.",
    p,
)

pk = "0x" + _r(64, _HEX)
_add(
    "eth_private_key_prose",
    "prompt",
    "Hardhat/Foundry deployer private key (0x + 64 hex) given in prose",
    "Deploy the contract to Holesky with this deployer key: "
    f"{pk} (testnet only, it holds ~2 ETH). Use forge script with --broadcast.",
    pk,
)

snow = str(_rng.randrange(10**18, 2 * 10**18))
disc = _b64u(snow.encode()) + "." + _r(6, _URLSAFE) + "." + _r(38, _URLSAFE)
_add(
    "discord_bot_token_prose",
    "prompt",
    "Discord bot token (base64 user id . timestamp . HMAC), Developer Portal > Bot > Reset Token",
    f"the discord bot token is {disc} , it needs the MESSAGE_CONTENT intent. Make "
    "bot/main.py read it from DISCORD_TOKEN instead.",
    disc,
)


# ========================================================================================
# COMMAND: what the agent runs (Bash tool input)
# ========================================================================================
lin = "lin_api_" + _r(40, _ALNUM)
_add(
    "linear_key_curl_oauth2_bearer",
    "command",
    "curl --oauth2-bearer (curl man page) with a Linear personal API key",
    f"curl -s --oauth2-bearer {lin} https://api.linear.app/graphql -H 'Content-Type: "
    'application/json\' -d \'{"query":"{ viewer { id name } }"}\'',
    lin,
)

gsk = "gsk_" + _r(52, _ALNUM)
_add(
    "groq_key_httpie_header",
    "command",
    "HTTPie request items (Header:Value) with a Groq API key",
    f'http POST https://api.groq.com/openai/v1/chat/completions Authorization:"Bearer {gsk}" '
    'model=llama-3.1-8b-instant messages:=\'[{"role":"user","content":"ping"}]\'',
    gsk,
)

j = _jwt(
    {"alg": "RS256", "typ": "JWT", "kid": _r(16, _HEX)},
    {
        "sub": "svc-reporting",
        "aud": "users.internal",
        "scope": "users:read",
        "iat": 1772445600,
        "exp": 1772449200,
    },
)
_add(
    "grpcurl_bearer_metadata",
    "command",
    "grpcurl -H 'authorization: Bearer …' (fullstorydev/grpcurl README)",
    f'grpcurl -H "authorization: Bearer {j}" -d \'{{"name":"users/42"}}\' '
    "users.internal:443 acme.users.v1.UserService/GetUser",
    j.split(".")[1],
    j.split(".")[2][:80],
)

a, x = _pw(14), _pw(14)
_add(
    "snmpv3_auth_priv_passphrases",
    "command",
    "snmpwalk(1) -v3 -l authPriv -A authPassphrase -X privPassphrase",
    f"snmpwalk -v3 -l authPriv -u nms -a SHA -A {a} -x AES -X {x} 10.1.0.1 IF-MIB::ifDescr",
    a,
    x,
)

p = _pw(15)
_add(
    "ipmitool_password_flag",
    "command",
    "ipmitool(1) -I lanplus -U user -P password",
    f"ipmitool -I lanplus -H 10.10.0.21 -U ADMIN -P {p} chassis power status",
    p,
)

p = _pw(18)
_add(
    "mosquitto_pub_password",
    "command",
    "mosquitto_pub(1) -u username -P password",
    "mosquitto_pub -h mqtt.plant.local -p 8883 --cafile ca.crt -u sensor-gw "
    f"-P '{p}' -t plant/line1/temp -m 21.4",
    p,
)

p = _pw(17, "!#%+=@^_~")
_add(
    "lftp_user_comma_password",
    "command",
    "lftp(1) -u user[,pass]",
    f'lftp -u deploy,{p} sftp://files.partner.example -e "mirror -R dist /var/www/html; bye"',
    p,
)

p = _pw(20)
_add(
    "sevenzip_attached_password",
    "command",
    "7z a -p{Password} -mhe=on (7-Zip command line, switch -p with no space)",
    f"7z a -t7z -mhe=on -p{p} backups/db-2026-03-02.7z dump.sql",
    p,
)

p = _pw(16)
_add(
    "keytool_storepass_keypass",
    "command",
    "keytool -genkeypair -storepass/-keypass (JDK keytool docs)",
    "keytool -genkeypair -alias api -keyalg RSA -keysize 3072 -keystore api.p12 -storetype "
    f'PKCS12 -storepass {p} -keypass {p} -dname "CN=api.acme.example, O=ACME"',
    p,
)

p1, p2 = _pw(16), _pw(21)
_add(
    "java_system_property_passwords",
    "command",
    "java -Djavax.net.ssl.keyStorePassword / Spring Boot -Dspring.datasource.password",
    "java -Djavax.net.ssl.keyStore=/etc/app/ks.p12 "
    f"-Djavax.net.ssl.keyStorePassword={p1} -Dspring.datasource.password={p2} -jar app.jar",
    p1,
    p2,
)

p = _pw(22)
_add(
    "gpg_batch_passphrase",
    "command",
    "gpg --batch --pinentry-mode loopback --passphrase (GnuPG manual)",
    f"gpg --batch --yes --pinentry-mode loopback --passphrase '{p}' -d secrets.tar.gz.gpg | tar xz",
    p,
)

p = _pw(18)
_add(
    "openssl_passout_pass",
    "command",
    "openssl-passphrase-options(1): -passout pass:password",
    f"openssl pkcs12 -export -in tls.crt -inkey tls.key -out tls.p12 -name api -passout pass:{p}",
    p,
)

ak = _b64(_bytes(64))
_add(
    "azure_storage_account_key_flag",
    "command",
    "az storage blob upload --account-key (88-char base64 storage account key)",
    f"az storage blob upload --account-name acmeprodlogs --account-key {ak} -c exports "
    "-f report.parquet -n 2026/03/report.parquet",
    ak,
)

sk = _r(40, _B64)
_add(
    "aws_configure_set_secret",
    "command",
    "aws configure set aws_secret_access_key (AWS CLI reference)",
    f"aws configure set aws_access_key_id AKIA{_r(16, _B32)} --profile ci-deployer && "
    f"aws configure set aws_secret_access_key {sk} --profile ci-deployer",
    sk,
)

do = "dop_v1_" + _r(64, _HEX)
_add(
    "digitalocean_token_doctl_init",
    "command",
    "doctl auth init --context -t (DigitalOcean API token dop_v1_…)",
    f"doctl auth init --context acme -t {do}",
    do,
)

pypi = "pypi-AgEIcHlwaS5vcmcCJD" + _r(150, _URLSAFE)
_add(
    "pypi_token_twine_flag",
    "command",
    "twine upload -u __token__ -p pypi-… (PyPI help: API tokens)",
    f"python -m twine upload -u __token__ -p {pypi} dist/*",
    pypi,
)

ng = "oy2" + _r(43, _LOWER_ALNUM)
_add(
    "nuget_push_api_key",
    "command",
    "dotnet nuget push -k <API key> (NuGet.org API key oy2…)",
    f"dotnet nuget push bin/Release/Acme.Core.2.3.0.nupkg -k {ng} -s https://api.nuget.org/v3/index.json",
    ng,
)

sq = "squ_" + _r(40, _HEX)
_add(
    "sonar_token_property",
    "command",
    "sonar-scanner -Dsonar.token=squ_… (SonarQube user token)",
    "sonar-scanner -Dsonar.projectKey=acme_api -Dsonar.organization=acme "
    f"-Dsonar.host.url=https://sonarcloud.io -Dsonar.token={sq}",
    sq,
)

oc = "sha256~" + _r(43, _URLSAFE)
_add(
    "openshift_sha256_token",
    "command",
    "oc login --token=sha256~… (OpenShift 'Copy login command')",
    f"oc login --token={oc} --server=https://api.ocp.acme.example:6443",
    oc,
)

ado = _r(52, "abcdefghijklmnopqrstuvwxyz234567")
_add(
    "azure_devops_pat_userinfo",
    "command",
    "git clone https://<org>:<PAT>@dev.azure.com/… (Azure DevOps PAT, 52 chars)",
    f"git clone https://acme:{ado}@dev.azure.com/acme/Platform/_git/infra-live",
    ado,
)

gl = "glpat-" + _r(20, _URLSAFE)
_add(
    "pip_index_url_gitlab_token",
    "command",
    "pip install --index-url https://__token__:<token>@gitlab…/packages/pypi/simple (GitLab PyPI registry docs)",
    f"pip install --index-url https://__token__:{gl}@gitlab.acme.example/api/v4/projects/412/"
    "packages/pypi/simple acme-internal==3.2.0",
    gl,
)

orr = "sk-or-v1-" + _r(64, _HEX)
_add(
    "openrouter_key_wrangler_stdin",
    "command",
    "echo <value> | wrangler secret put <NAME> (Cloudflare Workers docs) with an OpenRouter key",
    f'echo "{orr}" | npx wrangler secret put OPENROUTER_API_KEY',
    orr,
)

npm = "npm_" + _r(36, _ALNUM)
_add(
    "npm_token_gh_secret_set",
    "command",
    "gh secret set NAME --body (GitHub CLI manual) with an npm granular token",
    f'gh secret set NPM_TOKEN --repo acme/web --body "{npm}"',
    npm,
)

cio = "cio" + _r(32, _ALNUM)
_add(
    "crates_io_cargo_login",
    "command",
    "cargo login <token> (The Cargo Book, crates.io API token cio…)",
    f"cargo login {cio}",
    cio,
)

p = _pw(18)
_add(
    "argocd_login_password",
    "command",
    "argocd login --username --password (Argo CD CLI reference)",
    f"argocd login argocd.acme.example --username admin --password '{p}' --grpc-web",
    p,
)

p = _pw(14)
_add(
    "nmcli_wifi_password",
    "command",
    "nmcli device wifi connect SSID password PASSWORD (nmcli(1) examples)",
    f'sudo nmcli device wifi connect "ACME-Corp-5G" password "{p}" ifname wlan0',
    p,
)

sl = "sk_live_51" + _r(97, _ALNUM)
_add(
    "stripe_client_positional",
    "command",
    "stripe-python StripeClient(api_key) positional argument",
    f"python -c 'import stripe; c = stripe.StripeClient(\"{sl}\"); print(c.balance.retrieve())'",
    sl,
)

dd = _r(32, _HEX)
_add(
    "datadog_ci_env_prefix",
    "command",
    "DD_API_KEY=… datadog-ci junit upload (Datadog CI Visibility docs)",
    f"DD_API_KEY={dd} DD_SITE=datadoghq.eu npx @datadog/datadog-ci junit upload --service api reports/",
    dd,
)

p = _pw(20)
_add(
    "mysql_pwd_env_prefix",
    "command",
    "MYSQL_PWD environment variable (MySQL reference manual) before mysqldump",
    f"MYSQL_PWD='{p}' mysqldump -h db1.internal -u backup --single-transaction shop > shop.sql",
    p,
)

sid = _r(32, _URLSAFE)
sig = _r(43, _B64).replace("+", "%2B").replace("/", "%2F")
_add(
    "express_connect_sid_cookie",
    "command",
    "express-session signed cookie connect.sid=s%3A<id>.<sig> sent with curl -b",
    f"curl -s -b 'connect.sid=s%3A{sid}.{sig}' http://localhost:3000/api/me | jq .",
    sid,
    sig,
)

sh = "shpat_" + _r(32, _HEX)
_add(
    "shopify_access_token_header",
    "command",
    "Shopify Admin API X-Shopify-Access-Token: shpat_… (shopify.dev)",
    f"curl -s -H 'X-Shopify-Access-Token: {sh}' "
    "https://acme-store.myshopify.com/admin/api/2025-01/shop.json",
    sh,
)

ok = "00" + _r(40, _URLSAFE)
_add(
    "okta_ssws_header",
    "command",
    "Okta Management API 'Authorization: SSWS <API token>' (developer.okta.com)",
    f'curl -s -H "Authorization: SSWS {ok}" -H "Accept: application/json" '
    '"https://acme.okta.com/api/v1/users?limit=25"',
    ok,
)

pm = _uuid()
_add(
    "postmark_server_token_uuid",
    "command",
    "Postmark X-Postmark-Server-Token header (the token is UUID-shaped)",
    'curl "https://api.postmarkapp.com/email" -X POST -H "Accept: application/json" '
    f'-H "Content-Type: application/json" -H "X-Postmark-Server-Token: {pm}" '
    '-d \'{"From":"ops@acme.example","To":"dev@acme.example","Subject":"test","TextBody":"hi"}\'',
    pm,
)

fig = "figd_" + _r(40, _URLSAFE)
_add(
    "figma_token_header",
    "command",
    "Figma REST API X-Figma-Token header (personal access token figd_…)",
    f'curl -s -H "X-Figma-Token: {fig}" "https://api.figma.com/v1/files/{_r(22, _ALNUM)}?depth=1"',
    fig,
)

nr = "NRAK-" + _r(27, _UPPER_ALNUM)
_add(
    "newrelic_user_key_cli",
    "command",
    "newrelic profile add --apiKey NRAK-… (New Relic CLI)",
    f"newrelic profile add --profile acme --region EU --apiKey {nr} --accountId 3412876",
    nr,
)

r8 = "r8_" + _r(37, _ALNUM)
_add(
    "replicate_token_export",
    "command",
    "export REPLICATE_API_TOKEN=r8_… (Replicate docs)",
    f"export REPLICATE_API_TOKEN={r8} && python scripts/run_flux.py --prompt 'logo, flat'",
    r8,
)

ts = "tskey-auth-k" + _r(10, _ALNUM) + "CNTRL-" + _r(32, _ALNUM)
_add(
    "tailscale_authkey_flag",
    "command",
    "tailscale up --authkey=tskey-auth-… (Tailscale KB: key prefixes, auth keys)",
    f"sudo tailscale up --authkey={ts} --advertise-tags=tag:ci --ssh",
    ts,
)

pmak = "PMAK-" + _r(24, _HEX) + "-" + _r(34, _HEX)
_add(
    "postman_api_key_cli",
    "command",
    "postman login --with-api-key PMAK-… (Postman CLI)",
    f"postman login --with-api-key {pmak} && postman collection run 1234567-abcd --env-var base=staging",
    pmak,
)


# ========================================================================================
# OUTPUT: what a tool prints back (Bash tool result, file reads)
# ========================================================================================
p = _pw(24)
_add(
    "aws_secretsmanager_secretstring_escaped",
    "output",
    "aws secretsmanager get-secret-value (SecretString is JSON inside a JSON string)",
    "{\n"
    '    "ARN": "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/orders/db-Xb41Qe",\n'
    '    "Name": "prod/orders/db",\n'
    f'    "VersionId": "{_uuid()}",\n'
    '    "SecretString": "{\\"username\\":\\"orders_admin\\",\\"password\\":\\"'
    + p
    + '\\",\\"engine\\":\\"postgres\\",\\"host\\":\\"orders.cluster-c1x.eu-west-1.rds.amazonaws.com\\",\\"port\\":5432}",\n'
    '    "VersionStages": [\n        "AWSCURRENT"\n    ],\n'
    '    "CreatedDate": "2026-02-11T09:14:03.512000+00:00"\n}',
    p,
)

der = bytes.fromhex(
    "308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100"
) + _bytes(1180)
_, body = _pem("PRIVATE KEY", der)
escaped = "-----BEGIN PRIVATE KEY-----\\n" + "\\n".join(body) + "\\n-----END PRIVATE KEY-----\\n"
_add(
    "gcp_service_account_key_json",
    "output",
    "GCP service account key file (private_key with JSON \\n escapes), cat sa.json",
    "{\n"
    '  "type": "service_account",\n'
    '  "project_id": "acme-analytics",\n'
    f'  "private_key_id": "{_r(40, _HEX)}",\n'
    f'  "private_key": "{escaped}",\n'
    '  "client_email": "etl-runner@acme-analytics.iam.gserviceaccount.com",\n'
    f'  "client_id": "1{_r(20, string.digits)}",\n'
    '  "auth_uri": "https://accounts.google.com/o/oauth2/auth",\n'
    '  "token_uri": "https://oauth2.googleapis.com/token"\n}',
    body[5],
    body[11],
)

pwd = _b64(_pw(20).encode())
api = _b64(("sk_live_51" + _r(97, _ALNUM)).encode())
last = json.dumps(
    {
        "apiVersion": "v1",
        "data": {"api-token": api, "db-password": pwd},
        "kind": "Secret",
        "metadata": {"annotations": {}, "name": "app-secrets", "namespace": "prod"},
        "type": "Opaque",
    },
    separators=(",", ":"),
)
_add(
    "k8s_secret_yaml_last_applied",
    "output",
    "kubectl get secret -o yaml (data base64 + kubectl.kubernetes.io/last-applied-configuration)",
    "apiVersion: v1\ndata:\n"
    f"  api-token: {api}\n  db-password: {pwd}\n"
    "kind: Secret\nmetadata:\n  annotations:\n    kubectl.kubernetes.io/last-applied-configuration: |\n"
    f"      {last}\n"
    '  creationTimestamp: "2026-02-27T08:41:19Z"\n  name: app-secrets\n  namespace: prod\n'
    f'  resourceVersion: "48213377"\n  uid: {_uuid()}\ntype: Opaque',
    api,
    pwd,
)

a1 = _b64(("ci-bot:" + "glpat-" + _r(20, _URLSAFE)).encode())
a2 = _b64(("acme-dev:" + "ghp_" + _r(36, _ALNUM)).encode())
_add(
    "docker_config_json_auths",
    "output",
    "~/.docker/config.json after docker login (auths.<registry>.auth = base64(user:token))",
    '{\n\t"auths": {\n'
    f'\t\t"ghcr.io": {{\n\t\t\t"auth": "{a2}"\n\t\t}},\n'
    f'\t\t"registry.gitlab.com": {{\n\t\t\t"auth": "{a1}"\n\t\t}}\n'
    '\t},\n\t"currentContext": "desktop-linux"\n}',
    a1,
    a2,
)

xh = _b64(("x-access-token:ghs_" + _r(36, _ALNUM)).encode())
_add(
    "git_extraheader_basic_base64",
    "output",
    "git config --list --show-origin after actions/checkout (http.<url>.extraheader)",
    "file:/etc/gitconfig\tsafe.directory=*\n"
    "file:.git/config\tcore.repositoryformatversion=0\n"
    "file:.git/config\tremote.origin.url=https://github.com/acme/web\n"
    "file:.git/config\tremote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\n"
    f"file:.git/config\thttp.https://github.com/.extraheader=AUTHORIZATION: basic {xh}\n"
    "file:.git/config\tgc.auto=0",
    xh,
)

s1, s2 = _r(40, _B64), _r(40, _B64)
_add(
    "aws_credentials_multi_profile",
    "output",
    "~/.aws/credentials INI with several profiles (AWS CLI user guide)",
    f"[default]\naws_access_key_id = AKIA{_r(16, _B32)}\naws_secret_access_key = {s1}\n\n"
    f"[prod-admin]\naws_access_key_id = AKIA{_r(16, _B32)}\naws_secret_access_key={s2}\n"
    "region = eu-west-1\n",
    s1,
    s2,
)

t1 = "pypi-AgEIcHlwaS5vcmcCJD" + _r(150, _URLSAFE)
t2 = "pypi-AgENdGVzdC5weXBpLm9yZwIk" + _r(140, _URLSAFE)
_add(
    "pypirc_tokens",
    "output",
    "~/.pypirc (packaging.python.org: The .pypirc file)",
    "[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n"
    f"[pypi]\nusername = __token__\npassword = {t1}\n\n"
    f"[testpypi]\nrepository = https://test.pypi.org/legacy/\nusername = __token__\npassword = {t2}\n",
    t1,
    t2,
)

dapi = "dapi" + _r(32, _HEX)
_add(
    "databrickscfg_token",
    "output",
    "~/.databrickscfg (Databricks CLI config profiles)",
    "[DEFAULT]\nhost  = https://adb-4412871203948812.12.azuredatabricks.net\n"
    f"token = {dapi}\njobs-api-version = 2.1\n",
    dapi,
)

hc, hc2 = _r(64, _ALNUM), _r(64, _ALNUM)
_add(
    "hcloud_cli_toml_token",
    "output",
    "~/.config/hcloud/cli.toml (Hetzner Cloud CLI contexts, TOML)",
    'active_context = "acme-prod"\n\n[[contexts]]\n  name = "acme-prod"\n'
    f'  token = "{hc}"\n\n[[contexts]]\n  name = "sandbox"\n  token = "{hc2}"\n',
    hc,
    hc2,
)

glrt = "glrt-" + _r(20, _URLSAFE)
_add(
    "gitlab_runner_config_toml",
    "output",
    '/etc/gitlab-runner/config.toml ([[runners]] token = "glrt-…")',
    "concurrent = 4\ncheck_interval = 0\n\n[session_server]\n  session_timeout = 1800\n\n"
    '[[runners]]\n  name = "build-02"\n  url = "https://gitlab.acme.example"\n'
    f'  id = 118\n  token = "{glrt}"\n  token_obtained_at = 2026-01-19T10:22:41Z\n'
    '  executor = "docker"\n  [runners.docker]\n    image = "alpine:3.20"\n    privileged = false\n',
    glrt,
)

p = _pw(22)
_add(
    "snowflake_connections_toml",
    "output",
    "~/.snowflake/connections.toml (Snowflake CLI / Python connector, TOML)",
    '[default]\naccount = "xy12345.eu-central-1"\nuser = "ETL_SVC"\n'
    f'password = "{p}"\nwarehouse = "ETL_WH"\ndatabase = "RAW"\nrole = "LOADER"\n',
    p,
)

p = _pw(20)
_add(
    "maven_settings_xml_password",
    "output",
    "~/.m2/settings.xml <servers><server><password> (Maven settings reference)",
    '<settings xmlns="http://maven.apache.org/SETTINGS/1.0.0">\n  <servers>\n    <server>\n'
    "      <id>acme-releases</id>\n      <username>ci-deployer</username>\n"
    f"      <password>{p}</password>\n    </server>\n  </servers>\n</settings>",
    p,
)

pat = _r(52, "abcdefghijklmnopqrstuvwxyz234567")
_add(
    "nuget_config_cleartextpassword",
    "output",
    "nuget.config <packageSourceCredentials> ClearTextPassword (NuGet config reference)",
    '<?xml version="1.0" encoding="utf-8"?>\n<configuration>\n  <packageSources>\n'
    '    <add key="AcmeFeed" value="https://pkgs.dev.azure.com/acme/_packaging/acme/nuget/v3/index.json" />\n'
    "  </packageSources>\n  <packageSourceCredentials>\n    <AcmeFeed>\n"
    '      <add key="Username" value="az" />\n'
    f'      <add key="ClearTextPassword" value="{pat}" />\n'
    "    </AcmeFeed>\n  </packageSourceCredentials>\n</configuration>",
    pat,
)

p = _pw(18)
_add(
    "tomcat_users_xml_password",
    "output",
    "conf/tomcat-users.xml <user username password roles> (Tomcat manager how-to)",
    '<tomcat-users xmlns="http://tomcat.apache.org/xml" version="1.0">\n'
    '  <role rolename="manager-script"/>\n'
    f'  <user username="deployer" password="{p}" roles="manager-script"/>\n</tomcat-users>',
    p,
)

fz = _b64(_pw(16).encode())
_add(
    "filezilla_pass_base64",
    "output",
    '~/.config/filezilla/sitemanager.xml <Pass encoding="base64">',
    '<?xml version="1.0" encoding="UTF-8"?>\n<FileZilla3 version="3.66.5" platform="linux">\n'
    "  <Servers>\n    <Server>\n      <Host>sftp.partner.example</Host>\n      <Port>22</Port>\n"
    "      <Protocol>1</Protocol>\n      <Type>0</Type>\n      <User>acme-upload</User>\n"
    f'      <Pass encoding="base64">{fz}</Pass>\n      <Logontype>1</Logontype>\n'
    "      <Name>Partner SFTP</Name>\n    </Server>\n  </Servers>\n</FileZilla3>",
    fz,
)

gho = "gho_" + _r(36, _ALNUM)
_add(
    "gh_hosts_yml_oauth_token",
    "output",
    "~/.config/gh/hosts.yml (GitHub CLI, insecure storage)",
    "github.com:\n    users:\n        octo-dev:\n"
    f"            oauth_token: {gho}\n    git_protocol: https\n"
    f"    oauth_token: {gho}\n    user: octo-dev\n",
    gho,
)

rg = "rubygems_" + _r(48, _HEX)
_add(
    "rubygems_credentials_yaml",
    "output",
    "~/.gem/credentials (:rubygems_api_key:) (RubyGems guides: API key scopes)",
    f"---\n:rubygems_api_key: {rg}\n",
    rg,
)

p = _pw(21)
_add(
    "dbt_profiles_yml_password",
    "output",
    "~/.dbt/profiles.yml (dbt Postgres profile)",
    "acme:\n  target: dev\n  outputs:\n    dev:\n      type: postgres\n"
    "      host: warehouse.internal\n      user: dbt_dev\n"
    f'      password: "{p}"\n      port: 5432\n      dbname: analytics\n      schema: dbt_jdoe\n'
    "      threads: 4\n",
    p,
)

ec_pem, _ = _pem("EC PRIVATE KEY", _ec_p256_der())
ckd = _b64((ec_pem + "\n").encode())
crt = _b64(
    b"-----BEGIN CERTIFICATE-----\n" + _b64(_bytes(420)).encode() + b"\n-----END CERTIFICATE-----\n"
)
_add(
    "kubeconfig_client_key_data",
    "output",
    "kubectl config view --raw (users[].user.client-key-data = base64 PEM)",
    "apiVersion: v1\nclusters:\n- cluster:\n    server: https://10.0.0.10:6443\n  name: kind-dev\n"
    "contexts:\n- context:\n    cluster: kind-dev\n    user: kind-dev\n  name: kind-dev\n"
    "current-context: kind-dev\nkind: Config\npreferences: {}\nusers:\n- name: kind-dev\n  user:\n"
    f"    client-certificate-data: {crt}\n    client-key-data: {ckd}\n",
    ckd,
)

p1, p2 = _pw(24), _r(32, _ALNUM + "!#%&*()-_=+[]{}<>:?")
_add(
    "terraform_tfstate_sensitive_attrs",
    "output",
    "terraform.tfstate resources[].instances[].attributes (state is plain JSON)",
    '{\n  "version": 4,\n  "terraform_version": "1.9.8",\n  "resources": [\n'
    '    {\n      "mode": "managed",\n      "type": "random_password",\n      "name": "db",\n'
    '      "instances": [\n        {\n          "attributes": {\n'
    f'            "length": 32,\n            "result": {json.dumps(p2)},\n'
    '            "special": true\n          },\n'
    '          "sensitive_attributes": [[{"type": "get_attr", "value": "result"}]]\n'
    "        }\n      ]\n    },\n"
    '    {\n      "mode": "managed",\n      "type": "aws_db_instance",\n      "name": "orders",\n'
    '      "instances": [\n        {\n          "attributes": {\n'
    '            "engine": "postgres",\n            "username": "orders_admin",\n'
    f'            "password": "{p1}",\n            "port": 5432\n          }}\n        }}\n      ]\n    }}\n  ]\n}}',
    p1,
    p2,
)

accessor, secret_id = _uuid(), _uuid()
_add(
    "consul_acl_bootstrap_secretid",
    "output",
    "consul acl bootstrap (AccessorID is an identifier, SecretID is the token)",
    f"AccessorID:       {accessor}\nSecretID:         {secret_id}\n"
    "Description:      Bootstrap Token (Global Management)\nLocal:            false\n"
    "Create Time:      2026-03-02 10:02:11.447 +0000 UTC\nPolicies:\n"
    "   00000000-0000-0000-0000-000000000001 - global-management",
    secret_id,
)

kt = _r(6, _LOWER_ALNUM) + "." + _r(16, _LOWER_ALNUM)
kubeadm_hash = _r(64, _HEX)
_add(
    "kubeadm_bootstrap_token",
    "output",
    "kubeadm token create --print-join-command (token abcdef.0123456789abcdef; the CA hash is public)",
    f"kubeadm join 10.0.0.10:6443 --token {kt} --discovery-token-ca-cert-hash sha256:{kubeadm_hash}",
    kt,
)

sw = "SWMTKN-1-" + _r(50, _LOWER_ALNUM) + "-" + _r(25, _LOWER_ALNUM)
_add(
    "docker_swarm_join_token",
    "output",
    "docker swarm init output (docker swarm join --token SWMTKN-1-…)",
    "Swarm initialized: current node (dxn1zf6l61qsb1josjja83ngz) is now a manager.\n\n"
    "To add a worker to this swarm, run the following command:\n\n"
    f"    docker swarm join --token {sw} 10.0.0.5:2377\n\n"
    "To add a manager to this swarm, run 'docker swarm join-token manager' and follow the instructions.",
    sw,
)

wh = "whsec_" + _r(64, _HEX)
_add(
    "stripe_cli_webhook_signing_secret",
    "output",
    "stripe listen --forward-to (Stripe CLI prints the webhook signing secret)",
    "> Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing secret is "
    f"{wh} (^C to quit)\n2026-03-02 10:31:07   --> checkout.session.completed [evt_1Q{_r(22, _ALNUM)}]",
    wh,
)

p = _pw(14)
psk = _r(64, _HEX)
_add(
    "wpa_passphrase_psk",
    "output",
    "wpa_passphrase(8) output (#psk=plaintext and the derived 256-bit psk)",
    f'network={{\n\tssid="ACME-Guest"\n\t#psk="{p}"\n\tpsk={psk}\n}}',
    p,
    psk,
)

p = _pw(16)
_add(
    "expect_debug_sent_password",
    "output",
    'expect -d diagnostic output (send: sending "…" to { exp4 })',
    "spawn ssh admin@10.20.0.9\nparent: waiting for sync byte\nparent: telling child to go ahead\n"
    'expect: does "" (spawn_id exp4) match glob pattern "*assword:"? no\n'
    "admin@10.20.0.9's password: \n"
    'expect: does "admin@10.20.0.9\'s password: " (spawn_id exp4) match glob pattern "*assword:"? yes\n'
    'expect: set expect_out(0,string) "admin@10.20.0.9\'s password:"\n'
    f'send: sending "{p}\\r" to {{ exp4 }}',
    p,
)

gl = "glpat-" + _r(20, _URLSAFE)
jk = "11" + _r(32, _HEX)
_add(
    "shell_history_tokens",
    "output",
    "bash history builtin output (numbered command lines)",
    f"  498  cd ~/src/infra\n  499  export GITLAB_TOKEN={gl}\n  500  terraform init -upgrade\n"
    f"  501  curl -X POST -u admin:{jk} https://ci.acme.example/job/deploy/buildWithParameters?env=prod\n"
    "  502  history | tail -n 6",
    gl,
    jk,
)

ghp = "ghp_" + _r(36, _ALNUM)
_add(
    "git_credential_fill_output",
    "output",
    "git credential fill (git-credential(1) INPUT/OUTPUT FORMAT)",
    f"protocol=https\nhost=github.com\nusername=octo-dev\npassword={ghp}\n",
    ghp,
)

ba = _b64(("svc-ci:" + _pw(18)).encode())
_add(
    "http_basic_header_curl_verbose",
    "output",
    "curl -v request trace (> Authorization: Basic base64(user:pass))",
    "*   Trying 10.0.4.20:443...\n* Connected to nexus.acme.example (10.0.4.20) port 443\n"
    "> GET /service/rest/v1/repositories HTTP/1.1\n> Host: nexus.acme.example\n"
    f"> Authorization: Basic {ba}\n> User-Agent: curl/8.5.0\n> Accept: */*\n>\n"
    "< HTTP/1.1 200 OK\n< Content-Type: application/json",
    ba,
)

sess = _r(32, _LOWER_ALNUM)
_add(
    "django_sessionid_set_cookie",
    "output",
    "curl -i against Django login (Set-Cookie: sessionid=…; HttpOnly)",
    "HTTP/1.1 302 Found\nDate: Mon, 02 Mar 2026 10:40:12 GMT\nLocation: /dashboard/\n"
    f"Set-Cookie: csrftoken={_r(32, _ALNUM)}; expires=Mon, 01 Mar 2027 10:40:12 GMT; Max-Age=31449600; Path=/; SameSite=Lax\n"
    f"Set-Cookie: sessionid={sess}; expires=Mon, 16 Mar 2026 10:40:12 GMT; HttpOnly; Max-Age=1209600; Path=/; SameSite=Lax\n"
    "Vary: Cookie",
    sess,
)

sn = (
    "sntrys_"
    + _b64(
        json.dumps(
            {
                "iat": 1740000000.1,
                "url": "https://sentry.io",
                "region_url": "https://de.sentry.io",
                "org": "acme",
            },
            separators=(",", ":"),
        ).encode()
    ).rstrip("=")
    + "_"
    + _r(43, _B64)
)
rp = _upw(32)
_add(
    "docker_inspect_env_json",
    "output",
    "docker inspect --format '{{json .Config.Env}}' (Sentry org token sntrys_…, Upstash rediss URL)",
    '["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","NODE_ENV=production",'
    f'"SENTRY_AUTH_TOKEN={sn}","REDIS_URL=rediss://default:{rp}@eu1-tender-owl-38211.upstash.io:6379",'
    '"PORT=3000"]',
    sn,
    rp,
)

mk = _r(32, _HEX)
skb = _r(128, _HEX)
asak = _r(40, _B64)
_add(
    "rails_credentials_show",
    "output",
    "cat config/master.key; bin/rails credentials:show (Rails security guide)",
    f"$ cat config/master.key\n{mk}\n$ bin/rails credentials:show\n"
    f"secret_key_base: {skb}\naws:\n  access_key_id: AKIA{_r(16, _B32)}\n"
    f"  secret_access_key: {asak}\n",
    mk,
    skb,
    asak,
)

dj = "django-insecure-" + _r(50, string.ascii_lowercase + string.digits + "!@#%^&*(-_=+)")
_add(
    "django_insecure_secret_key",
    "output",
    "grep -n SECRET_KEY settings.py (django-admin startproject template)",
    "21:# SECURITY WARNING: keep the secret key used in production secret!\n"
    f"22:SECRET_KEY = '{dj}'\n23:\n24:# SECURITY WARNING: don't run with debug turned on in production!",
    dj,
)

lk = "base64:" + _b64(_bytes(32))
dp, mp = _pw(20), _r(16, string.ascii_lowercase)
_add(
    "laravel_env_app_key",
    "output",
    "grep -E 'APP_KEY|DB_PASSWORD|MAIL_PASSWORD' .env (php artisan key:generate)",
    f"APP_KEY={lk}\nDB_PASSWORD={dp}\nMAIL_PASSWORD={mp}",
    lk,
    dp,
    mp,
)

p = _pw(24)
_add(
    "terraform_output_json_sensitive",
    "output",
    "terraform output -json (sensitive outputs are printed in clear)",
    '{\n  "admin_password": {\n    "sensitive": true,\n    "type": "string",\n'
    f'    "value": "{p}"\n  }},\n  "endpoint": {{\n    "sensitive": false,\n    "type": "string",\n'
    '    "value": "orders.cluster-c1x.eu-west-1.rds.amazonaws.com"\n  }\n}',
    p,
)

mid, msk = "AKIA" + _r(16, _B32), _r(40, _B64)
_add(
    "go_minio_static_v4_positional",
    "output",
    "minio-go credentials.NewStaticV4(accessKey, secretKey, token) positional args",
    "$ sed -n 14,24p cmd/upload/main.go\n"
    "func newClient() (*minio.Client, error) {\n"
    '\treturn minio.New("s3.eu-central-2.wasabisys.com", &minio.Options{\n'
    f'\t\tCreds:  credentials.NewStaticV4("{mid}", "{msk}", ""),\n'
    "\t\tSecure: true,\n\t})\n}",
    msk,
)

p = _pw(18)
_add(
    "java_drivermanager_positional",
    "output",
    "JDBC DriverManager.getConnection(url, user, password) positional args",
    "src/main/java/com/acme/report/Db.java:\n"
    "  static Connection open() throws SQLException {\n"
    '    return DriverManager.getConnection("jdbc:postgresql://db.internal:5432/reports", '
    f'"report_ro", "{p}");\n  }}',
    p,
)

p = _pw(17)
_add(
    "python_mysqldb_positional",
    "output",
    "MySQLdb.connect(host, user, passwd, db) positional args (mysqlclient docs)",
    "scripts/nightly_export.py\n12:import MySQLdb\n13:\n"
    f'14:db = MySQLdb.connect("db.internal", "reporting", "{p}", "warehouse")\n'
    "15:cur = db.cursor()",
    p,
)

tw_tok = _r(32, _HEX)
_add(
    "twilio_ruby_client_positional",
    "output",
    "Twilio::REST::Client.new(account_sid, auth_token) (twilio-ruby README)",
    "config/initializers/twilio.rb\n"
    f'TWILIO = Twilio::REST::Client.new("AC{_r(32, _HEX)}", "{tw_tok}")',
    tw_tok,
)

hs = _r(48, _URLSAFE)
_add(
    "jsonwebtoken_sign_literal_secret",
    "output",
    "jsonwebtoken jwt.sign(payload, secretOrPrivateKey, options) with a literal secret",
    "src/auth/session.ts:\n"
    "export function issue(user: User) {\n"
    f'  return jwt.sign({{ sub: user.id, role: user.role }}, "{hs}", {{ expiresIn: "1h" }});\n}}',
    hs,
)

alg = _r(32, _HEX)
_add(
    "algolia_admin_key_positional",
    "output",
    "algoliasearch(appId, apiKey) with the Admin API key (Algolia JS client)",
    "scripts/reindex.mjs:\nimport { algoliasearch } from 'algoliasearch';\n"
    f"const client = algoliasearch('{_r(10, _UPPER_ALNUM)}', '{alg}'); // admin key, indexing only",
    alg,
)

p = _pw(19)
_add(
    "php_pdo_positional",
    "output",
    "new PDO($dsn, $username, $password) (PHP manual)",
    "config/db.php\n<?php\n"
    f"$pdo = new PDO('mysql:host=127.0.0.1;dbname=shop;charset=utf8mb4', 'shop', '{p}');",
    p,
)

p = _pw(18)
_add(
    "dotnet_networkcredential_positional",
    "output",
    "new NetworkCredential(userName, password, domain) (.NET API docs)",
    "Backup/SmbUploader.cs(27):\n"
    f'            var cred = new NetworkCredential("svc_backup", "{p}", "ACME");',
    p,
)

p = _pw(26)
_add(
    "python_redis_positional_password",
    "output",
    "redis.Redis(host, port, db, password) positional (redis-py)",
    f'app/cache.py:8:\nr = redis.Redis("cache.internal", 6380, 0, "{p}", ssl=True)',
    p,
)

xb = f"xoxb-{_rng.randrange(10**11, 10**12)}-{_rng.randrange(10**12, 10**13)}-{_r(24, _ALNUM)}"
_add(
    "slack_bot_token_webclient",
    "output",
    "slack_sdk WebClient(token) positional (Slack Python SDK)",
    "notify.py\nfrom slack_sdk import WebClient\n\n"
    f'client = WebClient("{xb}")\nclient.chat_postMessage(channel="#deploys", text=msg)',
    xb,
)

fg = "github_pat_11" + _r(20, _UPPER_ALNUM) + "_" + _r(59, _ALNUM)
_add(
    "github_fine_grained_pat_pygithub",
    "output",
    "PyGithub Github(login_or_token) positional, fine-grained PAT github_pat_…",
    f'tools/sync_labels.py:5:\ngh = Github("{fg}")',
    fg,
)

bk = _r(40, _B64)
_add(
    "boto3_session_positional",
    "output",
    "boto3.Session(aws_access_key_id, aws_secret_access_key) positional",
    f'etl/s3io.py\nsession = boto3.Session("AKIA{_r(16, _B32)}", "{bk}", region_name="eu-west-1")',
    bk,
)

p = _pw(22)
_add(
    "dotnet_appsettings_connection_string",
    "output",
    "appsettings.json ConnectionStrings (SqlClient connection string)",
    '{\n  "ConnectionStrings": {\n'
    '    "Default": "Server=tcp:acme-sql.database.windows.net,1433;Initial Catalog=app;'
    f'Persist Security Info=False;User ID=appuser;Password={p};Encrypt=True;Connection Timeout=30;"\n'
    '  },\n  "Logging": { "LogLevel": { "Default": "Information" } }\n}',
    p,
)

p = _pw(20)
_add(
    "jdbc_sqlserver_properties",
    "output",
    "application.properties spring.datasource.url=jdbc:sqlserver://…;user=…;password=…",
    "spring.datasource.url=jdbc:sqlserver://sql01.internal:1433;databaseName=billing;"
    f"user=billing_app;password={p};encrypt=true;trustServerCertificate=false\n"
    "spring.jpa.hibernate.ddl-auto=validate",
    p,
)

p = _pw(14) + ";" + _pw(6)
_add(
    "odbc_braced_pwd",
    "output",
    "pyodbc.connect ODBC string with Pwd={…} (braces quote ';' in ODBC values)",
    "jobs/load_sales.py:22:\n"
    'conn = pyodbc.connect("Driver={ODBC Driver 18 for SQL Server};Server=tcp:sales.database.windows.net,1433;'
    f'Database=sales;Uid=etl;Pwd={{{p}}};Encrypt=yes;TrustServerCertificate=no;")',
    p,
)

ak = _b64(_bytes(64))
_add(
    "azure_storage_connection_string",
    "output",
    "az storage account show-connection-string (DefaultEndpointsProtocol=…;AccountKey=…)",
    '{\n  "connectionString": "DefaultEndpointsProtocol=https;EndpointSuffix=core.windows.net;'
    f'AccountName=acmelogs;AccountKey={ak};BlobEndpoint=https://acmelogs.blob.core.windows.net/"\n}}',
    ak,
)

vt = "hvs.CAESI" + _r(86, _URLSAFE)
_add(
    "vault_token_create_table",
    "output",
    "vault token create (table output; token_accessor is not the secret)",
    "Key                  Value\n---                  -----\n"
    f"token                {vt}\n"
    f"token_accessor       {_r(24, _ALNUM)}\ntoken_duration       768h\ntoken_renewable      true\n"
    'token_policies       ["default" "deploy"]\nidentity_policies    []\npolicies             ["default" "deploy"]',
    vt,
)

p = _upw(16)
_add(
    "env_proxy_userinfo",
    "output",
    "env | sort (HTTPS_PROXY with user:password@proxy)",
    "HOME=/home/jdoe\nHOSTNAME=devbox-7\n"
    f"HTTPS_PROXY=http://jdoe:{p}@proxy.acme.example:3128\n"
    f"HTTP_PROXY=http://jdoe:{p}@proxy.acme.example:3128\n"
    "LANG=C.UTF-8\nNO_PROXY=localhost,127.0.0.1,.acme.example,.svc.cluster.local",
    p,
)

na = _b64(("acme-ci:" + _pw(20)).encode())
gp = "ghp_" + _r(36, _ALNUM)
_add(
    "npmrc_auth_and_token",
    "output",
    "~/.npmrc (//host/:_authToken= and legacy _auth=base64(user:pass)) (npm docs: npmrc)",
    "@acme:registry=https://npm.pkg.github.com\n"
    f"//npm.pkg.github.com/:_authToken={gp}\n"
    "//nexus.acme.example/repository/npm-group/:always-auth=true\n"
    f"//nexus.acme.example/repository/npm-group/:_auth={na}\n",
    gp,
    na,
)

cg = "ghp_" + _r(36, _ALNUM)
cpw = _r(40, _HEX)
_add(
    "composer_auth_json",
    "output",
    "auth.json (Composer: github-oauth and http-basic)",
    '{\n    "github-oauth": {\n'
    f'        "github.com": "{cg}"\n    }},\n    "http-basic": {{\n'
    '        "repo.packagist.com": {\n            "username": "token",\n'
    f'            "password": "{cpw}"\n        }}\n    }}\n}}',
    cg,
    cpw,
)

bu = _r(8, _HEX) + ":" + _r(8, _HEX)
_add(
    "bundler_config_source_credentials",
    "output",
    "bundle config (Bundler: credentials for gem sources, user:password)",
    "Settings are listed in order of priority. The top value will be used.\n"
    "gems.contribsys.com\nSet for the current user (/home/dev/.bundle/config): "
    f'"{bu}"\n\npath\nSet for your local app (/home/dev/src/app/.bundle/config): "vendor/bundle"',
    bu,
)

kg = _r(32, _HEX)
_add(
    "kaggle_json_key",
    "output",
    "~/.kaggle/kaggle.json (Kaggle API credentials)",
    f'{{"username":"jdoe","key":"{kg}"}}',
    kg,
)

wb = _r(40, _HEX)
mb = (
    "sk."
    + _b64u(json.dumps({"u": "acme", "a": _r(25, _LOWER_ALNUM)}, separators=(",", ":")).encode())
    + "."
    + _r(22, _URLSAFE)
)
_add(
    "netrc_multiple_machines",
    "output",
    "~/.netrc (W&B api key; Mapbox downloads secret token, documented for iOS SDK installs)",
    f"machine api.wandb.ai\n  login user\n  password {wb}\n"
    f"machine api.mapbox.com\n  login mapbox\n  password {mb}\n",
    wb,
    mb,
)

p = _pw(20, "!#%+=@^_-~")
_add(
    "pgpass_line",
    "output",
    "~/.pgpass (hostname:port:database:username:password, libpq docs)",
    f"localhost:5432:*:postgres:postgres\ndb-prod.internal:5432:*:report_ro:{p}\n",
    p,
)

p = _pw(19)
_add(
    "mycnf_client_password",
    "output",
    "~/.my.cnf [client] password= (MySQL option files)",
    f'[client]\nuser=backup\npassword="{p}"\nhost=db1.internal\n\n[mysqldump]\nsingle-transaction\n',
    p,
)

b2k = "K005" + _r(27, _ALNUM + "/+")
_add(
    "rclone_b2_application_key",
    "output",
    "rclone config show / rclone.conf [remote] type = b2 account/key (Backblaze application key)",
    f"[b2-backups]\ntype = b2\naccount = 005{_r(22, _HEX)}\nkey = {b2k}\nhard_delete = true\n",
    b2k,
)

p = _pw(20)
_add(
    "oci_config_pass_phrase",
    "output",
    "~/.oci/config (fingerprint is of the public key; pass_phrase is secret)",
    "[DEFAULT]\nuser=ocid1.user.oc1..aaaaaaaa"
    + _r(52, string.ascii_lowercase + string.digits)
    + "\nfingerprint="
    + ":".join(_r(2, _HEX) for _ in range(16))
    + "\ntenancy=ocid1.tenancy.oc1..aaaaaaaa"
    + _r(52, string.ascii_lowercase + string.digits)
    + f"\nregion=eu-frankfurt-1\nkey_file=~/.oci/oci_api_key.pem\npass_phrase={p}\n",
    p,
)

p1, p2 = _pw(20), _r(16, string.ascii_lowercase)
_add(
    "spring_application_yml_passwords",
    "output",
    "src/main/resources/application.yml (spring.datasource.password, spring.mail.password)",
    "spring:\n  datasource:\n    url: jdbc:postgresql://db.internal:5432/shop\n    username: shop\n"
    f"    password: '{p1}'\n  mail:\n    host: smtp.gmail.com\n    port: 587\n"
    f"    username: alerts@acme.example\n    password: {p2}\n",
    p1,
    p2,
)

p1, p2 = _pw(20), _pw(16)
_add(
    "docker_compose_environment_list",
    "output",
    "docker-compose.yml services.*.environment list syntax",
    "services:\n  minio:\n    image: minio/minio:RELEASE.2025-02-28T09-55-16Z\n"
    "    command: server /data --console-address :9001\n    environment:\n"
    f"      - MINIO_ROOT_USER=admin\n      - MINIO_ROOT_PASSWORD={p1}\n"
    "  grafana:\n    image: grafana/grafana:11.5.2\n    environment:\n"
    f"      - GF_SECURITY_ADMIN_PASSWORD={p2}\n",
    p1,
    p2,
)

p = _pw(17)
_add(
    "ansible_become_password_inventory",
    "output",
    "inventory/hosts.yml with ansible_become_password (Ansible docs: connection variables)",
    "all:\n  children:\n    web:\n      hosts:\n        web1.acme.example:\n        web2.acme.example:\n"
    f'      vars:\n        ansible_user: deploy\n        ansible_become_password: "{p}"\n',
    p,
)

p1, p2 = _pw(20), _pw(24)
_add(
    "helm_get_values_output",
    "output",
    "helm get values <release> (USER-SUPPLIED VALUES)",
    "USER-SUPPLIED VALUES:\nauth:\n  database: app\n"
    f"  password: {p1}\n  postgresPassword: {p2}\n  username: app\nprimary:\n"
    "  persistence:\n    size: 20Gi\n",
    p1,
    p2,
)

pg_body = _lines(_b64(b"\x95\x07\xc6\x04" + _bytes(1320)), 64)
_add(
    "pgp_private_key_armor",
    "output",
    "gpg --export-secret-keys --armor (OpenPGP ASCII armor, RFC 4880)",
    "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n"
    + "\n".join(pg_body)
    + f"\n={_r(4, _B64)}\n-----END PGP PRIVATE KEY BLOCK-----",
    pg_body[3],
    pg_body[12],
)

age_pub = "age1" + _r(58, _BECH32)
age_sec = "AGE-SECRET-KEY-1" + _r(58, _BECH32.upper())
_add(
    "age_secret_key",
    "output",
    "age-keygen (age-keygen(1) EXAMPLES)",
    f"# created: 2026-03-02T10:51:02+01:00\n# public key: {age_pub}\n{age_sec}",
    age_sec,
)

ppk_priv = _b64(struct.pack(">I", 32) + _bytes(32))
ppk_pub = _lines(_b64(_ssh_string(b"ssh-ed25519") + _ssh_string(_bytes(32))), 64)
_add(
    "putty_ppk_private_lines",
    "output",
    "PuTTY-User-Key-File-3 (.ppk) Private-Lines",
    "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: eddsa-key-20260302\n"
    f"Public-Lines: {len(ppk_pub)}\n"
    + "\n".join(ppk_pub)
    + f"\nPrivate-Lines: 1\n{ppk_priv}\nPrivate-MAC: {_r(64, _HEX)}",
    ppk_priv,
)

ec_pem, ec_body = _pem("EC PRIVATE KEY", _ec_p256_der())
_add(
    "ec_private_key_pem",
    "output",
    "openssl ecparam -name prime256v1 -genkey -noout (SEC1 EC PRIVATE KEY PEM)",
    ec_pem,
    ec_body[0][8:],
    ec_body[1],
)

wg_priv, wg_psk, wg_pub = _b64(_bytes(32)), _b64(_bytes(32)), _b64(_bytes(32))
_add(
    "wireguard_conf_private_and_psk",
    "output",
    "wg-quick wg0.conf (wg(8) CONFIGURATION FILE FORMAT: PrivateKey, PresharedKey)",
    "[Interface]\nAddress = 10.23.5.2/32\n"
    f"PrivateKey = {wg_priv}\nDNS = 10.23.5.1\n\n[Peer]\nPublicKey = {wg_pub}\n"
    f"PresharedKey = {wg_psk}\nEndpoint = vpn.acme.example:51820\nAllowedIPs = 10.23.0.0/16\n"
    "PersistentKeepalive = 25",
    wg_priv,
    wg_psk,
)

sig_sec = _b64(b"EdBK" + struct.pack(">I", 42) + _bytes(96))
_add(
    "signify_secret_key",
    "output",
    "signify -G secret key file (untrusted comment: signify secret key)",
    f"untrusted comment: signify secret key\n{sig_sec}",
    sig_sec,
)

sol = "[" + ",".join(str(_rng.randrange(256)) for _ in range(64)) + "]"
_add(
    "solana_keypair_json_array",
    "output",
    "cat ~/.config/solana/id.json (solana-keygen keypair: 64-byte JSON array)",
    sol,
    sol[: len(sol) // 2],
    sol[len(sol) // 2 :],
)

tprv = "tprv8ZgxMBicQKsPd" + _r(94, _B58)
_add(
    "bip32_tprv_descriptor",
    "output",
    "bitcoin-cli listdescriptors true (private descriptors with tprv…)",
    '{\n  "wallet_name": "signer",\n  "descriptors": [\n    {\n'
    f'      "desc": "wpkh({tprv}/84h/1h/0h/0/*)#{_r(8, _LOWER_ALNUM)}",\n'
    '      "timestamp": 1740000000,\n      "active": true,\n      "internal": false,\n'
    '      "range": [0, 999],\n      "next": 12\n    }\n  ]\n}',
    tprv,
)

na_sec = _b64(_bytes(32))
gh_cs = _r(40, _HEX)
_add(
    "nextauth_env_secrets",
    "output",
    "cat .env.local (Auth.js/NextAuth: AUTH_SECRET, GitHub OAuth app client secret)",
    f'AUTH_SECRET="{na_sec}"\nAUTH_GITHUB_ID=Ov23li{_r(14, _ALNUM)}\n'
    f"AUTH_GITHUB_SECRET={gh_cs}\nNEXTAUTH_URL=http://localhost:3000\n",
    na_sec,
    gh_cs,
)

tfc = _r(14, _ALNUM) + ".atlasv1." + _r(67, _ALNUM)
_add(
    "terraform_cloud_credentials_tfrc",
    "output",
    "~/.terraform.d/credentials.tfrc.json (terraform login)",
    '{\n  "credentials": {\n    "app.terraform.io": {\n'
    f'      "token": "{tfc}"\n    }}\n  }}\n}}',
    tfc,
)

dpl = "dp.st.prd." + _r(40, _ALNUM)
_add(
    "doppler_service_token_plain",
    "output",
    "doppler configs tokens create --plain (Doppler service token dp.st.…)",
    f"$ doppler configs tokens create ci-deploy --project api --config prd --plain\n{dpl}",
    dpl,
)

gsa = "glsa_" + _r(32, _ALNUM) + "_" + _r(8, _HEX)
ddk, dda = _r(32, _HEX), _r(40, _HEX)
_add(
    "observability_provider_hcl",
    "output",
    "providers.tf (grafana provider auth = glsa_…; datadog provider api_key/app_key)",
    'provider "grafana" {\n  url  = "https://acme.grafana.net/"\n'
    f'  auth = "{gsa}"\n}}\n\nprovider "datadog" {{\n'
    f'  api_key = "{ddk}"\n  app_key = "{dda}"\n  api_url = "https://api.datadoghq.eu/"\n}}',
    gsa,
    ddk,
    dda,
)

pul = "pul-" + _r(40, _HEX)
_add(
    "pulumi_token_ci_log_env",
    "output",
    "CI log printing env (PULUMI_ACCESS_TOKEN=pul-…)",
    "2026-03-02T10:12:44.1023311Z ##[group]Run pulumi up --yes --stack prod\n"
    "2026-03-02T10:12:44.1024790Z env:\n"
    f"2026-03-02T10:12:44.1025102Z   PULUMI_ACCESS_TOKEN: {pul}\n"
    "2026-03-02T10:12:44.1025456Z   AWS_REGION: eu-west-1\n2026-03-02T10:12:44.1025777Z ##[endgroup]",
    pul,
)

gl = "glpat-" + _r(20, _URLSAFE)
_add(
    "ci_log_xtrace_private_token",
    "output",
    "CI job log under `set -x` (+ curl -H 'PRIVATE-TOKEN: …', GitLab API docs)",
    "$ ./scripts/release.sh\n+ VERSION=3.2.0\n"
    f"+ curl -sf --header 'PRIVATE-TOKEN: {gl}' --data name=v3.2.0 --data tag_name=v3.2.0 "
    "https://gitlab.acme.example/api/v4/projects/12/releases\n+ echo 'release created'\nrelease created",
    gl,
)

hf, hf2 = "hf_" + _r(34, string.ascii_letters), "hf_" + _r(34, string.ascii_letters)
_add(
    "huggingface_stored_tokens_ini",
    "output",
    "~/.cache/huggingface/stored_tokens (hf auth login, INI)",
    f"[default]\nhf_token = {hf}\n\n[ci-read]\nhf_token = {hf2}\n",
    hf,
    hf2,
)

sg = "SG." + _r(22, _URLSAFE) + "." + _r(43, _URLSAFE)
hp = _upw(24)
_add(
    "heroku_config_vars_output",
    "output",
    "heroku config -a <app> (=== <app> Config Vars)",
    "=== acme-api Config Vars\n"
    f"DATABASE_URL:     postgres://u{_r(13, _LOWER_ALNUM)}:{hp}@c9mq4861d16jlm.cluster-czrs8kj4isg7.us-east-1.rds.amazonaws.com:5432/d{_r(13, _LOWER_ALNUM)}\n"
    "LOG_LEVEL:        info\n"
    f"SENDGRID_API_KEY: {sg}\n",
    hp,
    sg,
)

ls = "lsv2_pt_" + _r(32, _HEX) + "_" + _r(10, _HEX)
pc = "pcsk_" + _r(6, _ALNUM) + "_" + _r(60, _ALNUM)
px = "pplx-" + _r(48, _ALNUM)
_add(
    "ml_stack_dotenv",
    "output",
    "cat .env (LangSmith lsv2_pt_…, Pinecone pcsk_…, Perplexity pplx-…)",
    "LANGSMITH_TRACING=true\nLANGSMITH_ENDPOINT=https://eu.api.smith.langchain.com\n"
    f"LANGSMITH_API_KEY={ls}\nPINECONE_API_KEY={pc}\nPINECONE_INDEX=docs-v3\n"
    f"PERPLEXITY_API_KEY={px}\n",
    ls,
    pc,
    px,
)

mk = "AIzaSy" + _r(33, _URLSAFE)
_add(
    "android_local_properties_maps_key",
    "output",
    "local.properties (Secrets Gradle Plugin for Android: MAPS_API_KEY)",
    "## This file must *NOT* be checked into Version Control Systems,\n"
    "sdk.dir=/home/dev/Android/Sdk\n"
    f"MAPS_API_KEY={mk}\n",
    mk,
)

cl = _r(27, _URLSAFE)
_add(
    "cloudinary_url_env",
    "output",
    "printenv CLOUDINARY_URL (cloudinary://<api_key>:<api_secret>@<cloud_name>)",
    f"cloudinary://{_rng.randrange(10**14, 10**15)}:{cl}@acme-media",
    cl,
)


# ========================================================================================
# PANE: tmux capture-pane of an interactive terminal; lines longer than 80 columns wrap
# ========================================================================================
ya = "ya29.a0" + _r(230, _URLSAFE)
_add(
    "gcloud_print_access_token",
    "pane",
    "gcloud auth print-access-token (OAuth access token ya29.…)",
    f"dev@devbox:~/src/api$ gcloud auth print-access-token\n{ya}\ndev@devbox:~/src/api$ ",
    ya,
)

jt = _r(48, _HEX)
_add(
    "jupyter_server_token_url",
    "pane",
    "jupyter lab startup log (ServerApp ... http://localhost:8888/lab?token=…)",
    "[I 2026-03-02 10:14:07.511 ServerApp] Serving notebooks from local directory: /home/dev/nb\n"
    "[I 2026-03-02 10:14:07.512 ServerApp] Jupyter Server 2.14.1 is running at:\n"
    f"[I 2026-03-02 10:14:07.512 ServerApp] http://localhost:8888/lab?token={jt}\n"
    f"[I 2026-03-02 10:14:07.512 ServerApp]     http://127.0.0.1:8888/lab?token={jt}\n"
    "[I 2026-03-02 10:14:07.512 ServerApp] Use Control-C to stop this server and shut down all kernels (twice to skip confirmation).",
    jt,
)

ms = _b64(b"EdScB2" + _bytes(152))
_add(
    "minisign_secret_key",
    "pane",
    "minisign -G secret key file ~/.minisign/minisign.key",
    f"dev@devbox:~$ cat ~/.minisign/minisign.key\nuntrusted comment: minisign encrypted secret key\n{ms}\ndev@devbox:~$ ",
    ms,
)

at = "ATATT3xFfGF0" + _r(171, _URLSAFE) + "=" + _r(8, _HEX).upper()
_add(
    "atlassian_api_token_basic",
    "pane",
    "curl -u email:API_TOKEN (Atlassian Cloud REST basic auth with API token ATATT…)",
    f"dev@devbox:~$ curl -s -u jdoe@acme.example:{at} -H 'Accept: application/json' "
    "'https://acme.atlassian.net/rest/api/3/search?jql=project=OPS' | jq '.total'\n42",
    at,
)

ecr = _b64(
    json.dumps(
        {
            "payload": _b64(_bytes(720)),
            "datakey": _b64(_bytes(184)),
            "version": "2",
            "type": "DATA_KEY",
            "expiration": 1772488800,
        },
        separators=(",", ":"),
    ).encode()
)
_add(
    "ecr_login_password_blob",
    "pane",
    "aws ecr get-login-password (base64 JSON token used as docker password)",
    f"dev@devbox:~$ aws ecr get-login-password --region eu-west-1\n{ecr}\ndev@devbox:~$ ",
    ecr[40:160],
    ecr[600:760],
)

sa = _jwt(
    {"alg": "RS256", "kid": _r(43, _URLSAFE)},
    {
        "iss": "kubernetes/serviceaccount",
        "kubernetes.io/serviceaccount/namespace": "ci",
        "kubernetes.io/serviceaccount/secret.name": "ci-bot-token",
        "kubernetes.io/serviceaccount/service-account.name": "ci-bot",
        "kubernetes.io/serviceaccount/service-account.uid": _uuid(),
        "sub": "system:serviceaccount:ci:ci-bot",
    },
)
_add(
    "k8s_service_account_token_describe",
    "pane",
    "kubectl describe secret <sa-token> (Data: token: <JWT>)",
    "dev@devbox:~$ kubectl -n ci describe secret ci-bot-token\nName:         ci-bot-token\n"
    "Namespace:    ci\nLabels:       <none>\nAnnotations:  kubernetes.io/service-account.name: ci-bot\n\n"
    "Type:  kubernetes.io/service-account-token\n\nData\n====\nca.crt:     1107 bytes\n"
    f"namespace:  2 bytes\ntoken:      {sa}",
    sa.split(".")[2][:120],
    sa.split(".")[2][-120:],
)

dd = _r(32, _HEX)
_add(
    "datadog_agent_docker_run_pane",
    "pane",
    "docker run … -e DD_API_KEY=… gcr.io/datadoghq/agent:7 (Datadog Docker Agent docs)",
    "dev@devbox:~$ docker run -d --name dd-agent -v /var/run/docker.sock:/var/run/docker.sock:ro "
    f"-e DD_SITE=datadoghq.eu -e DD_API_KEY={dd} gcr.io/datadoghq/agent:7",
    dd,
)

cfs = _r(342, _B64).replace("+", "-").replace("=", "_").replace("/", "~")
_add(
    "cloudfront_signed_url_signature",
    "pane",
    "aws cloudfront sign (canned policy: Expires, Signature, Key-Pair-Id)",
    "dev@devbox:~$ aws cloudfront sign --url https://d111111abcdef8.cloudfront.net/private/report.pdf "
    "--key-pair-id K2JCJMDEHXQW5F --private-key file://cf_pk.pem --date-less-than 2026-04-01\n"
    f"https://d111111abcdef8.cloudfront.net/private/report.pdf?Expires=1775001600&Signature={cfs}&Key-Pair-Id=K2JCJMDEHXQW5F",
    cfs[:120],
    cfs[-120:],
)

sas = _b64(_bytes(32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
_add(
    "azure_sas_user_delegation_sig",
    "pane",
    "az storage blob generate-sas --full-uri --as-user (skoid…&sig=…)",
    "dev@devbox:~$ az storage blob generate-sas --account-name acmeexports -c reports -n q1.parquet "
    "--permissions r --expiry 2026-04-01T00:00Z --full-uri --as-user --auth-mode login -o tsv\n"
    f"https://acmeexports.blob.core.windows.net/reports/q1.parquet?skoid={_uuid()}&sktid={_uuid()}"
    "&skt=2026-03-02T10%3A20%3A11Z&ske=2026-04-01T00%3A00%3A00Z&sks=b&skv=2022-11-02&sv=2022-11-02"
    f"&se=2026-04-01T00%3A00%3A00Z&sr=b&sp=r&sig={sas}",
    sas,
)

rs = _b64(_bytes(150)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
rsig = _r(40, _HEX)
_add(
    "rails_session_cookie_copy_as_curl",
    "pane",
    "Chrome DevTools 'Copy as cURL (bash)' with a Rails cookie store session (_app_session=…--…)",
    "dev@devbox:~$ curl 'https://app.acme.example/api/v1/me' \\\n  -H 'accept: application/json' \\\n"
    f"  -H 'cookie: _ga=GA1.1.1234567890.1700000000; _acme_session={rs}--{rsig}; locale=en' \\\n"
    "  -H 'user-agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/133.0.0.0 Safari/537.36'",
    rs[:100],
    rsig,
)

gl = "glpat-" + _r(20, _URLSAFE)
_add(
    "git_remote_oauth2_userinfo",
    "pane",
    "git remote -v with https://oauth2:<token>@host (GitLab docs: clone with a token)",
    f"dev@devbox:~/src/platform-infra$ git clone --depth 1 https://oauth2:{gl}@gitlab.acme.example/platform/tf-mod/aws-network.git\n"
    "Cloning into 'aws-network'...\ndev@devbox:~/src/platform-infra$ cd aws-network && git remote -v\n"
    f"origin\thttps://oauth2:{gl}@gitlab.acme.example/platform/tf-mod/aws-network.git (fetch)\n"
    f"origin\thttps://oauth2:{gl}@gitlab.acme.example/platform/tf-mod/aws-network.git (push)",
    gl,
)

p = _upw(24)
_add(
    "neon_database_url_env",
    "pane",
    "env | grep DATABASE_URL (Neon connection string postgresql://role:password@ep-…)",
    "dev@devbox:~/src/api$ env | grep -i database\n"
    f"DATABASE_URL=postgresql://neondb_owner_role_with_long_name:{p}@ep-cool-darkness-123456.eu-central-1.aws.neon.tech/neondb?sslmode=require",
    p,
)

asp = "CfDJ8" + _r(420, _URLSAFE)
_add(
    "aspnetcore_identity_cookie",
    "pane",
    "curl -si against ASP.NET Core Identity login (set-cookie: .AspNetCore.Identity.Application=CfDJ8…)",
    "dev@devbox:~$ curl -si -X POST https://portal.acme.example/Account/Login -d @login.form | head -n 4\n"
    "HTTP/2 302\nlocation: /\n"
    f"set-cookie: .AspNetCore.Identity.Application={asp}; path=/; secure; samesite=lax; httponly",
    asp[:150],
    asp[-150:],
)

rt = "1//0" + _r(99, _URLSAFE)
cs = "GOCSPX-" + _r(28, _URLSAFE)
_add(
    "gcloud_adc_refresh_token",
    "pane",
    "~/.config/gcloud/application_default_credentials.json (gcloud auth application-default login)",
    "dev@devbox:~$ cat ~/.config/gcloud/application_default_credentials.json\n{\n"
    '  "account": "",\n'
    f'  "client_id": "{_rng.randrange(10**11, 10**12)}-{_r(32, _LOWER_ALNUM)}.apps.googleusercontent.com",\n'
    f'  "client_secret": "{cs}",\n  "quota_project_id": "acme-analytics",\n'
    f'  "refresh_token": "{rt}",\n  "type": "authorized_user",\n  "universe_domain": "googleapis.com"\n}}',
    rt,
    cs,
)

s3sig = _r(64, _HEX)
_add(
    "s3_presigned_url_signature",
    "pane",
    "aws s3 presign (SigV4 query string X-Amz-Signature=…)",
    "dev@devbox:~$ aws s3 presign s3://acme-exports/2026/03/customers.csv.gz --expires-in 3600\n"
    "https://acme-exports.s3.eu-west-1.amazonaws.com/2026/03/customers.csv.gz?X-Amz-Algorithm=AWS4-HMAC-SHA256"
    f"&X-Amz-Credential=AKIA{_r(16, _B32)}%2F20260302%2Feu-west-1%2Fs3%2Faws4_request"
    f"&X-Amz-Date=20260302T101500Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={s3sig}",
    s3sig,
)

vtk = "hvs.CAESI" + _r(86, _URLSAFE)
_add(
    "read_prompt_echoed_token",
    "pane",
    "bash `read -p` prompt (input echoed, unlike read -s) then vault login",
    'dev@devbox:~$ read -p "Vault token: " VAULT_TOKEN && export VAULT_TOKEN\n'
    f"Vault token: {vtk}\ndev@devbox:~$ vault kv get -field=url secret/app/db\n"
    "postgresql://app@db.internal:5432/app",
    vtk,
)

gk = "gsk_" + _r(52, _ALNUM)
_add(
    "long_export_line_key_across_wrap",
    "pane",
    "shell `export` of several vars on one line (key lands across the 80-column wrap)",
    "dev@devbox:~/src/bot$ export LOG_LEVEL=debug MODEL=llama-3.3-70b "
    f"GROQ_API_KEY={gk} && python -m bot",
    gk,
)


# ========================================================================================
# NEGATIVE CONTROLS: must survive redaction (the judge needs them)
# ========================================================================================
def _neg() -> list[tuple[str, str]]:
    n: list[tuple[str, str]] = []
    short = _r(7, _HEX)
    n.append((f"{short} (HEAD -> main, origin/main) fix(prepare): keep pane wrap offsets", short))
    full = _r(40, _HEX)
    n.append((f"commit {full}", full))
    parent = _r(40, _HEX)
    n.append((f"{parent}\trefs/remotes/origin/main", parent))
    u = _uuid()
    n.append((f"  uid: {u}", u))
    u = _uuid()
    n.append((f'{{"level":"info","run_id":"{u}","msg":"judge request sent","tokens":18231}}', u))
    h = _r(64, _HEX)
    n.append((f"{h}  dist/session_scorer-0.9.1-py3-none-any.whl", h))
    integ = "sha512-" + _b64(_bytes(64))
    n.append((f'      "integrity": "{integ}",', integ))
    dg = "sha256:" + _r(64, _HEX)
    n.append((f"Digest: {dg}", dg))
    img = f"ghcr.io/acme/api@sha256:{_r(64, _HEX)}"
    n.append((f"    Image ID:       {img}", img))
    png = _png_b64()
    n.append((f'<img alt="status" src="data:image/png;base64,{png}">', png))
    path = (
        "/home/dev/work/session-scorer/.venv/lib/python3.12/site-packages/pydantic_core/"
        "_pydantic_core.cpython-312-x86_64-linux-gnu.so"
    )
    n.append((f'  File "{path}", line 0, in <module>', path))
    gosum = "h1:" + _b64(_bytes(32))
    n.append((f"golang.org/x/crypto v0.31.0 {gosum}", gosum))
    ph = _r(64, _HEX)
    n.append((f"    --hash=sha256:{ph} \\", ph))
    fp = "SHA256:" + _b64(_bytes(32)).rstrip("=")
    n.append((f"ED25519 key fingerprint is {fp}.", fp))
    pub = _b64(_ssh_string(b"ssh-ed25519") + _ssh_string(_bytes(32)))
    n.append((f"ssh-ed25519 {pub} dev@laptop", pub))
    n.append((f"    --discovery-token-ca-cert-hash sha256:{kubeadm_hash}", kubeadm_hash))
    n.append((f"AccessorID:       {accessor}", accessor))
    cid = _r(64, _HEX)
    n.append(
        (
            f"{cid}   nginx:1.27   \"/docker-entrypoint.sh nginx -g 'daemon off;'\"   5 seconds ago   Up 4 seconds   0.0.0.0:8080->80/tcp   web",
            cid,
        )
    )
    sri = "sha384-" + _b64(_bytes(48))
    n.append(
        (
            '<script src="https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js" '
            f'integrity="{sri}" crossorigin="anonymous"></script>',
            sri,
        )
    )
    nix = f"/nix/store/{_r(32, _NIX32)}-python3-3.12.8"
    n.append((f"building '{nix}.drv'...", nix))
    ck = _r(64, _HEX)
    n.append((f'checksum = "{ck}"', ck))
    etag = _r(32, _HEX)
    n.append((f'            "ETag": "\\"{etag}\\"",', etag))
    n.append((f"# public key: {age_pub}", age_pub))
    mpub = _b64(b"Ed" + _bytes(8) + _bytes(32))
    n.append((f"minisign -Vm release.tar.gz -P {mpub}", mpub))
    n.append((f"PublicKey = {wg_pub}", wg_pub))
    lfs = _r(64, _HEX)
    n.append((f"oid sha256:{lfs}", lfs))
    gpgfp = _r(40, "0123456789ABCDEF")
    n.append((f"      {gpgfp}", gpgfp))
    return n


V3_NEGATIVES: list[tuple[str, str]] = _neg()


def _self_check() -> None:
    kinds = [c.name for c in V3]
    dup = {k for k in kinds if kinds.count(k) > 1}
    assert not dup, f"duplicate case names: {dup}"
    for c in V3:
        assert c.where in ("prompt", "command", "output", "pane"), c.name
        assert c.secrets, c.name
        missing = set(c.secrets) - set(leaked(c, c.text))
        assert not missing, f"{c.name}: secret not in text: {missing}"
        if c.where == "pane":
            assert leaked(c, pane_text(c)) == list(c.secrets), f"{c.name}: lost in wrap"
    for line, keep in V3_NEGATIVES:
        assert keep in line, f"negative not in its line: {keep}"


_self_check()
