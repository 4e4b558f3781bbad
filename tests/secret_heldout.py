"""The HELD-OUT secret set: measured, never tuned on.

Written before the redaction rules of issue 25, from the documentation of real tools'
output (CLI `--help`/docs pages, config file references, HTTP API examples), planted the
way coding agents print them: in the user's prompt, on a Bash command line, in a tool's
output, or in a tmux pane capture whose long lines wrap at 80 columns.

Rules: nobody changes `scorer/prepare/secrets/rules.py` (or the structure/entropy layers)
by looking at a failure here. A case whose miss is used to change a rule moves to the
tuning set (`tests/secret_corpus.py`), with a note in the commit and in
docs/security.md, and stops counting here. `tests/prepare/test_secret_heldout.py`
measures recall in the judge request; `benchmarks/redaction_report.py` prints it.

Fake secrets are generated from a fixed seed so that no literal secret sits in this file.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass

_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class Tokens:
    """Random-looking tokens from a fixed seed (the same cases on every run)."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def r(self, n: int, alphabet: str = _ALNUM) -> str:
        return "".join(self.rng.choice(alphabet) for _ in range(n))

    def mixed(self, n: int) -> str:
        """Alnum with a digit, an upper and a lower letter (like real tokens)."""
        while True:
            s = self.r(n)
            if (
                any(c.isdigit() for c in s)
                and any(c.isupper() for c in s)
                and any(c.islower() for c in s)
            ):
                return s


_TOKENS = Tokens(25_2026)
_r, _mixed = _TOKENS.r, _TOKENS.mixed


@dataclass(frozen=True)
class HeldOut:
    """One held-out case."""

    kind: str
    where: str
    """`prompt`, `command`, `output` or `pane` (a wrapped tmux capture)."""
    text: str
    secrets: tuple[str, ...]
    source: str
    """Whose documented output this imitates."""

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.where}"


def _h(kind: str, where: str, source: str, text: str, *secrets: str) -> HeldOut:
    return HeldOut(kind, where, text, secrets, source)


def _jwt() -> str:
    return (
        "ey"
        + "J0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9."
        + "ey"
        + "J"
        + _r(60, _URLSAFE)
        + "."
        + _r(43, _URLSAFE)
    )


_P = {name: _mixed(n) for name, n in [("a", 40), ("b", 32), ("c", 24), ("d", 48), ("e", 20)]}

HELDOUT: list[HeldOut] = []
_add = HELDOUT.append

# --- cloud CLIs -------------------------------------------------------------------------
_sts_tok = "IQoJb3JpZ2luX2VjE" + _r(120, _B64)
_add(
    _h(
        "aws_session_token",
        "output",
        "aws sts assume-role (JSON output)",
        '{\n    "Credentials": {\n        "AccessKeyId": "ASIA'
        + _r(16, string.ascii_uppercase + "234567")
        + '",\n        "SessionToken": "'
        + _sts_tok
        + '",\n        "Expiration": "2026-11-25T17:00:00Z"\n    }\n}',
        _sts_tok[:60],
    )
)
_az_sp = _r(3, _ALNUM) + "8Q~" + _r(34, _URLSAFE + "~.")
_add(
    _h(
        "azure_sp_password",
        "output",
        "az ad sp create-for-rbac",
        '{\n  "appId": "2b7f1c3e-9d4a-4e8b-a1c2-3d4e5f6a7b8c",\n  "displayName": "ci-deployer",\n'
        f'  "password": "{_az_sp}",\n  "tenant": "72f988bf-86f1-41af-91ab-2d7cd011db47"\n}}',
        _az_sp,
    )
)
_az_jwt = _jwt()
_add(
    _h(
        "azure_access_token",
        "output",
        "az account get-access-token",
        '{\n  "accessToken": "' + _az_jwt + '",\n  "expiresOn": "2026-11-25 18:02:11.000000",\n'
        '  "tokenType": "Bearer"\n}',
        _az_jwt[40:100],
    )
)
_goog_sig = _r(256, _HEX)
_add(
    _h(
        "gcs_signed_url",
        "output",
        "gsutil signurl",
        "URL\tHTTP Method\tExpiration\tSigned URL\ngs://bkt/report.pdf\tGET\t2026-11-26 10:00:00\t"
        "https://storage.googleapis.com/bkt/report.pdf?X-Goog-Algorithm=GOOG4-RSA-SHA256"
        "&X-Goog-Credential=svc%40proj.iam.gserviceaccount.com%2F20261125%2Fauto%2Fstorage"
        "%2Fgoog4_request&X-Goog-Date=20261125T100000Z&X-Goog-Expires=86400"
        "&X-Goog-SignedHeaders=host&X-Goog-Signature=" + _goog_sig,
        _goog_sig[:80],
    )
)
_gocspx = "GOCSPX-" + _r(28, _URLSAFE)
_add(
    _h(
        "google_oauth_client_secret",
        "output",
        "Google Cloud console client_secret.json",
        '{"installed":{"client_id":"4123-abc.apps.googleusercontent.com","project_id":"demo",'
        f'"auth_uri":"https://accounts.google.com/o/oauth2/auth","client_secret":"{_gocspx}",'
        '"redirect_uris":["http://localhost"]}}',
        _gocspx[7:],
    )
)
_add(
    _h(
        "google_oauth_client_secret",
        "prompt",
        "Google Cloud console",
        "I created an OAuth client; the secret it showed me is "
        + (g2 := "GOCSPX-" + _r(28, _URLSAFE))
        + " - wire it into settings.py",
        g2[7:],
    )
)
_do = _r(64, _HEX)
_add(
    _h(
        "doctl_context_token",
        "output",
        "doctl auth list / config.yaml",
        "$ cat ~/.config/doctl/config.yaml\naccess-token: dop_v1_" + _do + "\ncontext: default\n",
        _do,
    )
)
_fly = "FlyV1 fm2_" + _r(180, _B64) + "=="
_add(
    _h(
        "flyio_token",
        "command",
        "fly tokens create deploy",
        f'export FLY_API_TOKEN="{_fly}" && fly deploy --remote-only',
        _fly[10:80],
    )
)
_tf = _r(14) + ".atlasv1." + _r(67)
_add(
    _h(
        "terraform_cloud_token",
        "output",
        "~/.terraform.d/credentials.tfrc.json",
        '{\n  "credentials": {\n    "app.terraform.io": {\n      "token": "'
        + _tf
        + '"\n    }\n  }\n}',
        _tf,
    )
)
_pul = "pul-" + _r(40, _HEX)
_add(
    _h(
        "pulumi_token",
        "command",
        "pulumi login",
        f"PULUMI_ACCESS_TOKEN={_pul} pulumi stack select prod && pulumi up --yes",
        _pul[4:],
    )
)

# --- developer platforms ------------------------------------------------------------------
_glrt = "glrt-" + _r(20, _URLSAFE)
_add(
    _h(
        "gitlab_runner_token",
        "command",
        "gitlab-runner register",
        f"sudo gitlab-runner register --non-interactive --url https://gitlab.com --token {_glrt} "
        "--executor docker --docker-image alpine:latest",
        _glrt[5:],
    )
)
_gldt = "gldt-" + _r(20, _URLSAFE)
_add(
    _h(
        "gitlab_deploy_token",
        "output",
        "GitLab deploy token page",
        f"Your new deploy token has been created.\nusername: gitlab+deploy-token-7\ntoken: {_gldt}\n",
        _gldt[5:],
    )
)
_dckr = "dckr_pat_" + _r(27, _URLSAFE)
_add(
    _h(
        "docker_hub_pat",
        "command",
        "docker login --password-stdin",
        f"echo {_dckr} | docker login -u octo --password-stdin",
        _dckr[9:],
    )
)
_bk = "bkua_" + _r(40, _HEX)
_add(
    _h(
        "buildkite_token",
        "output",
        "Buildkite API access tokens",
        f"$ cat ~/.buildkite/config\nBUILDKITE_API_ACCESS_TOKEN={_bk}\n",
        _bk[5:],
    )
)
_circle = "CCIPAT_" + _r(22) + "_" + _r(40, _HEX)
_add(
    _h(
        "circleci_token",
        "command",
        "CircleCI personal API token",
        f'curl -H "Circle-Token: {_circle}" https://circleci.com/api/v2/me',
        _circle[7:40],
    )
)
_gh_app = "ghs_" + _r(36)
_add(
    _h(
        "github_app_installation_token",
        "output",
        "GitHub REST: POST /app/installations/{id}/access_tokens",
        '{\n  "token": "' + _gh_app + '",\n  "expires_at": "2026-11-25T17:36:31Z",\n'
        '  "permissions": {"contents": "read"}\n}',
        _gh_app[4:],
    )
)
_rubygems = "rubygems_" + _r(48, _HEX)
_add(
    _h(
        "rubygems_key",
        "output",
        "~/.gem/credentials",
        f"---\n:rubygems_api_key: {_rubygems}\n",
        _rubygems[9:],
    )
)
_nuget = "oy2" + _r(43, string.ascii_lowercase + string.digits)
_add(
    _h(
        "nuget_key",
        "command",
        "dotnet nuget push",
        f"dotnet nuget push bin/Release/Lib.1.2.0.nupkg --api-key {_nuget} "
        "--source https://api.nuget.org/v3/index.json",
        _nuget,
    )
)
_cio = "cio" + _r(32)
_add(
    _h(
        "crates_io_token",
        "command",
        "cargo login",
        f"cargo login {_cio} && cargo publish --dry-run",
        _cio[3:],
    )
)
_jfrog = "cmVmdGtuOjAxOjE3" + _r(48, _ALNUM)
_add(
    _h(
        "jfrog_reference_token",
        "output",
        "JFrog Platform access token",
        f"$ jf config show\nServer ID: acme\nJFrog Platform URL: https://acme.jfrog.io/\n"
        f"Access token: {_jfrog}\nDefault: true",
        _jfrog[16:],
    )
)
_sonar = "squ_" + _r(40, _HEX)
_add(
    _h(
        "sonarqube_token",
        "command",
        "sonar-scanner",
        f"sonar-scanner -Dsonar.projectKey=app -Dsonar.host.url=https://sonar.acme.io "
        f"-Dsonar.token={_sonar}",
        _sonar[4:],
    )
)
_vercel = _mixed(24)
_add(
    _h(
        "vercel_token",
        "command",
        "vercel CLI --token",
        f"npx vercel deploy --prod --token {_vercel} --yes",
        _vercel,
    )
)
_netlify = "nfp_" + _r(36)
_add(
    _h(
        "netlify_token",
        "output",
        "netlify env",
        f"NETLIFY_AUTH_TOKEN={_netlify}\nNETLIFY_SITE_ID=5a7c2d1e-0000-4a1b-8c3d-9e8f7a6b5c4d",
        _netlify[4:],
    )
)

# --- SaaS APIs ----------------------------------------------------------------------------
_dd = _r(32, _HEX)
_dd_app = _r(40, _HEX)
_add(
    _h(
        "datadog_app_key",
        "command",
        "Datadog API docs (curl)",
        f'curl -X GET "https://api.datadoghq.com/api/v1/validate" -H "DD-API-KEY: {_dd}" '
        f'-H "DD-APPLICATION-KEY: {_dd_app}"',
        _dd,
        _dd_app,
    )
)
_nr = "NRAK-" + _r(27, string.ascii_uppercase + string.digits)
_add(
    _h(
        "newrelic_user_key",
        "command",
        "New Relic NerdGraph curl",
        f"curl https://api.newrelic.com/graphql -H 'Content-Type: application/json' "
        f"-H 'API-Key: {_nr}' -d '{{\"query\":\"{{ actor {{ user {{ name }} }} }}\"}}'",
        _nr[5:],
    )
)
_okta = "00" + _r(40, _URLSAFE)
_add(
    _h(
        "okta_api_token",
        "command",
        "Okta API: SSWS header",
        f'curl -H "Accept: application/json" -H "Authorization: SSWS {_okta}" '
        "https://acme.okta.com/api/v1/users?limit=2",
        _okta,
    )
)
_apim = _r(32, _HEX)
_add(
    _h(
        "azure_apim_key",
        "command",
        "Azure API Management",
        f'curl -H "Ocp-Apim-Subscription-Key: {_apim}" https://acme.azure-api.net/echo/resource',
        _apim,
    )
)
_funcs = _r(54, _URLSAFE) + "=="
_add(
    _h(
        "azure_functions_key",
        "output",
        "func azure functionapp list-functions --show-keys",
        f"Functions in acme-fn:\n    HttpTrigger - [httpTrigger]\n        Invoke url: "
        f"https://acme-fn.azurewebsites.net/api/httptrigger?code={_funcs}",
        _funcs[:40],
    )
)
_mapbox = "sk.ey" + "J1Ijoi" + _r(20, _URLSAFE) + "." + _r(22, _URLSAFE)
_add(
    _h(
        "mapbox_secret_token",
        "output",
        "Mapbox access tokens",
        f"MAPBOX_DOWNLOADS_TOKEN={_mapbox}\n",
        _mapbox[3:],
    )
)
_air = "pat" + _r(14) + "." + _r(64, _HEX)
_add(
    _h(
        "airtable_pat",
        "prompt",
        "Airtable personal access token",
        f"use my airtable token {_air} to read the Tasks base",
        _air[3:40],
    )
)
_figma = "figd_" + _r(40, _URLSAFE)
_add(
    _h(
        "figma_pat",
        "command",
        "Figma REST API",
        f"curl -H 'X-Figma-Token: {_figma}' https://api.figma.com/v1/files/abc123",
        _figma[5:],
    )
)
_glsa = "glsa_" + _r(32) + "_" + _r(8, _HEX)
_add(
    _h(
        "grafana_service_account_token",
        "output",
        "Grafana service account token",
        f"$ grep -r glsa .env.local\n.env.local:GRAFANA_SA={_glsa}",
        _glsa[5:],
    )
)
_sbp = "sbp_" + _r(40, _HEX)
_add(
    _h(
        "supabase_access_token",
        "command",
        "supabase login",
        f"supabase login --token {_sbp} && supabase link --project-ref abcd",
        _sbp[4:],
    )
)
_sq = "EAAA" + _r(60, _URLSAFE)
_add(
    _h(
        "square_access_token",
        "output",
        "Square developer dashboard",
        f'SQUARE_ENVIRONMENT=production\nSQUARE_ACCESS="{_sq}"',
        _sq[4:],
    )
)
_mc = _r(32, _HEX) + "-us21"
_add(
    _h(
        "mailchimp_key",
        "command",
        "Mailchimp Marketing API",
        f"curl -X GET https://us21.api.mailchimp.com/3.0/ping --user 'anystring:{_mc}'",
        _mc[:32],
    )
)
_tw_bearer = "AAAAAAAAAAAAAAAAAAAAA" + _r(20) + "%3D" + _r(50)
_add(
    _h(
        "twitter_bearer",
        "output",
        "X API v2 bearer token",
        f"X_BEARER={_tw_bearer}\n",
        _tw_bearer[21:60],
    )
)
_fb = "EAAG" + _r(150)
_add(
    _h(
        "facebook_access_token",
        "command",
        "Graph API explorer",
        f'curl -i -X GET "https://graph.facebook.com/v19.0/me?fields=id,name&access_token={_fb}"',
        _fb[4:60],
    )
)
_tskey = "tskey-auth-" + _r(12) + "CNTRL-" + _r(32)
_add(
    _h(
        "tailscale_auth_key",
        "command",
        "tailscale up",
        f"sudo tailscale up --authkey={_tskey} --hostname=ci-runner",
        _tskey[11:],
    )
)
_replicate = "r8_" + _r(37)
_add(
    _h(
        "replicate_token",
        "output",
        "Replicate API",
        f"$ env | grep -i rep\nREPLICATE_API_TOKEN={_replicate}",
        _replicate[3:],
    )
)
_gsk = "gsk_" + _r(52)
_add(
    _h(
        "groq_key",
        "prompt",
        "Groq console",
        f"here's my groq key {_gsk}\nplease add it to the .env and test the client",
        _gsk[4:],
    )
)
_pplx = "pplx-" + _r(48)
_add(
    _h(
        "perplexity_key",
        "output",
        "Perplexity API settings",
        f"    8→PPLX={_pplx}\n    9→MODEL=sonar",
        _pplx[5:],
    )
)
_xai = "xai-" + _r(80)
_add(
    _h(
        "xai_key",
        "command",
        "xAI API",
        f'curl https://api.x.ai/v1/chat/completions -H "Authorization: Bearer {_xai}" -d @req.json',
        _xai[4:],
    )
)
_lsv2 = "lsv2_pt_" + _r(32, _HEX) + "_" + _r(10, _HEX)
_add(
    _h(
        "langsmith_key",
        "output",
        "LangSmith settings",
        f"LANGCHAIN_TRACING_V2=true\nLANGCHAIN_ENDPOINT=https://api.smith.langchain.com\n"
        f"LANGSMITH_KEY={_lsv2}",
        _lsv2[8:],
    )
)
_pcsk = "pcsk_" + _r(6) + "_" + _r(60)
_add(
    _h(
        "pinecone_key",
        "command",
        "Pinecone API",
        f'curl "https://api.pinecone.io/indexes" -H "Api-Key: {_pcsk}" -H "X-Pinecone-API-Version: 2025-04"',
        _pcsk[5:],
    )
)
_notion_old = "secret_" + _r(43)
_add(
    _h(
        "notion_legacy_token",
        "output",
        "Notion integration (pre-2024 tokens)",
        f"const notion = new Client({{ auth: '{_notion_old}' }})",
        _notion_old[7:],
    )
)
_teams = (
    "https://acme.webhook.office.com/webhookb2/" + "2b7f1c3e-9d4a-4e8b-a1c2-3d4e5f6a7b8c@"
    "72f988bf-86f1-41af-91ab-2d7cd011db47/IncomingWebhook/" + (_tw := _r(32, _HEX)) + "/"
    "0e1f2a3b-4c5d-4e6f-8a9b-0c1d2e3f4a5b/V2" + (_tw2 := _r(40, _URLSAFE))
)
_add(
    _h(
        "teams_webhook",
        "command",
        "Microsoft Teams incoming webhook",
        f"curl -H 'Content-Type: application/json' -d '{{\"text\":\"deployed\"}}' '{_teams}'",
        _tw,
        _tw2,
    )
)
_mg_sign = _r(32, _HEX)
_add(
    _h(
        "webhook_signing_secret",
        "output",
        "Mailgun/Shopify webhook signing key in a settings page",
        f"Webhook signing key\n{_mg_sign}\n(used to verify the signature header)",
        _mg_sign,
    )
)

# --- databases and services ---------------------------------------------------------------
_redis_pw = _mixed(20)
_add(
    _h(
        "redis_requirepass",
        "output",
        "redis.conf",
        f"# requirepass foobared\nrequirepass {_redis_pw}\nmaxmemory 256mb",
        _redis_pw,
    )
)
_redis_auth = _mixed(18)
_add(
    _h(
        "redis_auth_command",
        "output",
        "redis-cli session",
        f"127.0.0.1:6379> AUTH default {_redis_auth}\nOK\n127.0.0.1:6379> PING\nPONG",
        _redis_auth,
    )
)
_sql_pw = "Zq" + _mixed(12) + "!9"
_add(
    _h(
        "sql_identified_by",
        "command",
        "MySQL CREATE USER",
        f"mysql -u root -e \"CREATE USER 'app'@'%' IDENTIFIED BY '{_sql_pw}'; GRANT ALL ON app.* TO 'app'@'%';\"",
        _sql_pw,
    )
)
_pg_pw = _mixed(16)
_add(
    _h(
        "sql_with_password",
        "output",
        "psql ALTER ROLE",
        f"app=# ALTER ROLE app WITH LOGIN PASSWORD '{_pg_pw}';\nALTER ROLE",
        _pg_pw,
    )
)
_mssql = "Yx" + _mixed(12) + "#1"
_add(
    _h(
        "sqlcmd_password",
        "command",
        "sqlcmd -P",
        f"sqlcmd -S localhost,1433 -U sa -P '{_mssql}' -Q 'SELECT @@VERSION'",
        _mssql,
    )
)
_mongo = _mixed(16)
_add(
    _h(
        "mongosh_password",
        "command",
        "mongosh -p",
        f"mongosh --host db.internal -u admin -p {_mongo} --authenticationDatabase admin",
        _mongo,
    )
)
_ldap = _mixed(14)
_add(
    _h(
        "ldapsearch_bind_password",
        "command",
        "ldapsearch -w",
        f'ldapsearch -x -H ldap://ldap.acme.io -D "cn=admin,dc=acme,dc=io" -w {_ldap} -b "dc=acme,dc=io"',
        _ldap,
    )
)
_smb = _mixed(14)
_add(
    _h(
        "smbclient_password",
        "command",
        "smbclient -U user%pass",
        f"smbclient //fs01/share -U 'ACME\\\\bob%{_smb}' -c 'ls'",
        _smb,
    )
)
_elastic = _r(20, _URLSAFE)
_add(
    _h(
        "elastic_reset_password",
        "output",
        "elasticsearch-reset-password",
        "This tool will reset the password of the [elastic] user to an autogenerated value.\n"
        "The password will be printed in the console.\nPassword for the [elastic] user successfully reset.\n"
        f"New value: {_elastic}",
        _elastic,
    )
)
_minio_pw = _mixed(24)
_add(
    _h(
        "minio_root_password",
        "output",
        "minio server banner",
        f"API: http://10.0.0.5:9000  http://127.0.0.1:9000\nRootUser: acme-admin\nRootPass: {_minio_pw}\n",
        _minio_pw,
    )
)
_jenkins = _r(32, _HEX)
_add(
    _h(
        "jenkins_initial_admin_password",
        "output",
        "Jenkins setup wizard log",
        "*************************************************************\n\nJenkins initial setup is required. "
        "An admin user has been created and a password generated.\nPlease use the following password "
        f"to proceed to installation:\n\n{_jenkins}\n\nThis may also be found at: "
        "/var/jenkins_home/secrets/initialAdminPassword",
        _jenkins,
    )
)
_rabbit = _mixed(16)
_add(
    _h(
        "rabbitmqctl_password",
        "command",
        "rabbitmqctl add_user",
        f"rabbitmqctl add_user svc_orders {_rabbit} && rabbitmqctl set_user_tags svc_orders monitoring",
        _rabbit,
    )
)
_kafka = _mixed(20)
_add(
    _h(
        "kafka_jaas_password",
        "output",
        "Kafka client.properties",
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security"
        f'.plain.PlainLoginModule required username="ABCDEF1234" password="{_kafka}";',
        _kafka,
    )
)

# --- command-line flags and files -------------------------------------------------------
_gpg = _mixed(18)
_add(
    _h(
        "gpg_passphrase",
        "command",
        "gpg --passphrase",
        f"gpg --batch --yes --pinentry-mode loopback --passphrase '{_gpg}' -d backup.tar.gpg > backup.tar",
        _gpg,
    )
)
_zip = _mixed(14)
_add(
    _h(
        "zip_password",
        "command",
        "zip -P / 7z -p",
        f"7z a -p{_zip} -mhe=on secrets.7z ./keys && zip -P {_zip} keys.zip keys/*",
        _zip,
    )
)
_ssh_n = _mixed(16)
_add(
    _h(
        "ssh_keygen_passphrase",
        "command",
        "ssh-keygen -N",
        f'ssh-keygen -t ed25519 -N "{_ssh_n}" -f ~/.ssh/deploy_key -C deploy',
        _ssh_n,
    )
)
_sudo = "Qw" + _mixed(10) + "$7"
_add(
    _h(
        "sudo_stdin_password",
        "command",
        "sudo -S",
        f"echo '{_sudo}' | sudo -S apt-get install -y postgresql-client",
        _sudo,
    )
)
_sp = _r(40, _URLSAFE + "~.")
_add(
    _h(
        "az_login_service_principal",
        "command",
        "az login --service-principal",
        f"az login --service-principal -u 2b7f1c3e-9d4a-4e8b-a1c2-3d4e5f6a7b8c -p '{_sp}' --tenant acme.onmicrosoft.com",
        _sp,
    )
)
_ghsecret = _mixed(32)
_add(
    _h(
        "gh_secret_set_body",
        "command",
        "gh secret set",
        f'gh secret set DEPLOY_KEY --body "{_ghsecret}" --repo acme/app',
        _ghsecret,
    )
)
_oauth2 = _mixed(40)
_add(
    _h(
        "curl_oauth2_bearer",
        "command",
        "curl --oauth2-bearer",
        f"curl --oauth2-bearer {_oauth2} https://api.acme.io/v2/orders",
        _oauth2,
    )
)
_ovpn = "\n".join(_r(32, _HEX) for _ in range(4))
_add(
    _h(
        "openvpn_static_key",
        "output",
        "openvpn --genkey secret ta.key",
        "#\n# 2048 bit OpenVPN static key\n#\n-----BEGIN OpenVPN Static key V1-----\n"
        + _ovpn
        + "\n-----END OpenVPN Static key V1-----",
        *_ovpn.splitlines(),
    )
)
_wif = "5H" + _r(49, _B58)
_add(
    _h(
        "bitcoin_wif_key",
        "output",
        "bitcoin-cli dumpprivkey",
        f"$ bitcoin-cli dumpprivkey bc1qxy2kgdygjrsqtzq2n0yrf2493p83kkfjhx0wlh\n{_wif}",
        _wif[2:],
    )
)
_nsec = "nsec1" + _r(58, "qpzry9x8gf2tvdw0s3jn54khce6mua7l")
_add(
    _h(
        "nostr_private_key",
        "prompt",
        "nostr key export",
        f"my bot's nsec is {_nsec}, make it post the build status",
        _nsec[5:],
    )
)
_laravel = "base64:" + _r(43, _B64) + "="
_add(
    _h(
        "laravel_app_key",
        "output",
        "php artisan key:generate --show / .env",
        f"APP_NAME=Acme\nAPP_ENV=production\nAPP_KEY={_laravel}\nAPP_DEBUG=false",
        _laravel[7:],
    )
)
_sign = _r(64, _HEX)
_add(
    _h(
        "signing_key_env",
        "output",
        ".env (JWT signing key)",
        f"JWT_SIGNING_KEY={_sign}\nJWT_TTL=3600",
        _sign,
    )
)
_enc = _r(44, _B64)
_add(
    _h(
        "encryption_key_yaml",
        "output",
        "Rails/Helm values.yaml",
        f'app:\n  replicas: 2\n  encryptionKey: "{_enc}"\n  logLevel: info',
        _enc,
    )
)
_master = _r(32, _HEX)
_add(
    _h(
        "rails_master_key",
        "output",
        "cat config/master.key",
        f"$ cat config/master.key\n{_master}\n$ EDITOR=vim bin/rails credentials:edit",
        _master,
    )
)
_tfsens = _mixed(22)
_add(
    _h(
        "terraform_sensitive_output",
        "output",
        "terraform output -json",
        '{\n  "db_admin_password": {\n    "sensitive": true,\n    "type": "string",\n    "value": "'
        + _tfsens
        + '"\n  },\n  "db_host": {"sensitive": false, "type": "string", "value": "db.acme.io"}\n}',
        _tfsens,
    )
)
_vault_tbl = _mixed(20)
_add(
    _h(
        "vault_kv_table",
        "output",
        "vault kv get",
        "====== Secret Path ======\nsecret/data/app\n\n======= Data =======\nKey         Value\n---         -----\n"
        f"db_pass     {_vault_tbl}\nusername    app",
        _vault_tbl,
    )
)
_cookie = _r(64, _URLSAFE)
_add(
    _h(
        "session_cookie",
        "command",
        "curl -b (cookie)",
        f"curl -s -b '_gh_sess={_cookie}; logged_in=yes' https://github.com/settings/profile",
        _cookie,
    )
)
_json_esc = _mixed(24)
_add(
    _h(
        "json_escaped_nested_secret",
        "output",
        "structured log with an escaped JSON payload",
        '{"level":"debug","msg":"request","body":"{\\"grant_type\\":\\"client_credentials\\",'
        f'\\"client_secret\\":\\"{_json_esc}\\"}}"}}',
        _json_esc,
    )
)
_requests_pw = _mixed(16)
_add(
    _h(
        "python_auth_tuple",
        "output",
        "requests basic auth in code",
        f"    14→resp = requests.get(URL, auth=('svc-reporting', '{_requests_pw}'), timeout=10)",
        _requests_pw,
    )
)

# --- wrapped in a pane --------------------------------------------------------------------
_pane_tok = _mixed(90)
_add(
    _h(
        "pane_wrapped_env_token",
        "pane",
        "tmux capture-pane of `env`",
        f"SHELL=/bin/bash\nSERVICE_TOKEN={_pane_tok}\nHOME=/root",
        _pane_tok[:30],
        _pane_tok[-20:],
    )
)
_pane_url = _mixed(20)
_add(
    _h(
        "pane_wrapped_url_password",
        "pane",
        "tmux capture-pane of a long psql command",
        f"$ psql 'postgresql://reporting_readonly_user:{_pane_url}@analytics-db.internal.acme.io:5432/warehouse?sslmode=require'",
        _pane_url,
    )
)
_pane_gh = "ghp_" + _r(36)
_add(
    _h(
        "pane_wrapped_github_token",
        "pane",
        "tmux capture-pane of git remote -v",
        f"$ git remote -v\norigin  https://x-access-token:{_pane_gh}@github.com/acme/platform-infrastructure.git (fetch)",
        _pane_gh[4:24],
        _pane_gh[-12:],
    )
)
_pane_pw = _mixed(24)
_add(
    _h(
        "pane_wrapped_cli_password",
        "pane",
        "tmux capture-pane of a long docker run",
        "$ docker run -d --name pg -e POSTGRES_USER=app -e POSTGRES_DB=warehouse -e "
        f"POSTGRES_PASSWORD={_pane_pw} -p 5432:5432 postgres:16",
        _pane_pw,
    )
)


def pane_text(case: HeldOut, width: int = 80) -> str:
    """The case as `tmux capture-pane` prints it: every long line wrapped at `width`."""
    rows = []
    for line in case.text.splitlines():
        rows += [line[i : i + width] for i in range(0, max(len(line), 1), width)]
    return "\n".join(rows) + "\n"


def fragments(secret: str, size: int = 12) -> list[str]:
    """Every `size`-character window of `secret` (the whole secret when it is shorter):
    a partial redaction that lets any of them through still leaks."""
    if len(secret) <= size:
        return [secret]
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def leaked(case: HeldOut, blob: str) -> list[str]:
    """The secrets of `case` of which a fragment occurs in `blob`."""
    return [s for s in case.secrets if any(f in blob for f in fragments(s))]


MOVED_TO_TUNING = frozenset(
    {
        "azure_functions_key-output",
        "redis_auth_command-output",
        "sql_identified_by-command",
        "sql_with_password-output",
        "sqlcmd_password-command",
        "mongosh_password-command",
        "ldapsearch_bind_password-command",
        "smbclient_password-command",
        "elastic_reset_password-output",
        "rabbitmqctl_password-command",
        "zip_password-command",
        "ssh_keygen_passphrase-command",
        "sudo_stdin_password-command",
        "az_login_service_principal-command",
        "bitcoin_wif_key-output",
        "python_auth_tuple-output",
    }
)
"""The 16 cases v1 missed (67/83 caught). Rules were then written from them
(`secrets/cli.py`, SQL and `New value:` rules, `code=`, WIF, `auth=(…)` tuples), so they
are tuning cases now and no longer count as held out; see `secret_heldout_v2.py`."""
