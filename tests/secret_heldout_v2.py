"""HELD-OUT secret set, second batch: written after v1 was measured (80.7%) and before the
rules that v1's misses led to (those 16 cases moved to the tuning set). Same protocol as
`tests/secret_heldout.py`: from documented tool output, planted where agents print it,
never tuned on; a miss used to change a rule moves the case to the tuning set.
"""

from __future__ import annotations

import string

from tests.secret_heldout import HeldOut, Tokens

_ALNUM = string.ascii_letters + string.digits
_B64 = _ALNUM + "+/"
_URLSAFE = _ALNUM + "-_"
_HEX = "0123456789abcdef"
_r, _mixed = (lambda t: (t.r, t.mixed))(Tokens(25_2027))


def _h(kind: str, where: str, source: str, text: str, *secrets: str) -> HeldOut:
    return HeldOut(kind, where, text, secrets, source)


V2: list[HeldOut] = []
_add = V2.append

# --- command lines -------------------------------------------------------------------------
p = _mixed(16)
_add(
    _h(
        "kubectl_from_literal",
        "command",
        "kubectl create secret generic",
        f"kubectl create secret generic db-creds --from-literal=username=app --from-literal=password={p}",
        p,
    )
)
p = _mixed(18)
_add(
    _h(
        "helm_set_password",
        "command",
        "helm install --set",
        f"helm install pg bitnami/postgresql --set auth.postgresPassword={p} --set auth.database=app",
        p,
    )
)
p = _mixed(16)
_add(
    _h(
        "terraform_var",
        "command",
        "terraform apply -var",
        f"terraform apply -auto-approve -var 'db_password={p}' -var 'region=eu-west-1'",
        p,
    )
)
p = _mixed(14)
_add(
    _h(
        "ansible_extra_var",
        "command",
        "ansible-playbook -e",
        f'ansible-playbook site.yml -i hosts -e "ansible_become_pass={p} target=web"',
        p,
    )
)
p = _mixed(15)
_add(
    _h(
        "libpq_keyword_dsn",
        "command",
        "psql connection string",
        f'psql "host=db.internal port=5432 user=app password={p} dbname=app sslmode=require" -c "\\dt"',
        p,
    )
)
p = _mixed(15)
_add(
    _h(
        "pgpassword_env",
        "command",
        "PGPASSWORD env",
        f"PGPASSWORD={p} pg_dump -h db.internal -U app app > /tmp/app.sql",
        p,
    )
)
p = _r(40, _B64)
_add(
    _h(
        "aws_configure_set",
        "command",
        "aws configure set",
        f"aws configure set aws_secret_access_key {p} --profile ci",
        p,
    )
)
p = _mixed(32)
_add(
    _h(
        "ngrok_authtoken_cmd",
        "command",
        "ngrok config add-authtoken",
        f"ngrok config add-authtoken 2{p}_{_mixed(20)}",
        p,
    )
)
p = _r(40, _HEX)
_add(
    _h("wandb_login", "command", "wandb login", f"wandb login {p} && python train.py --epochs 3", p)
)
p = _mixed(20)
_add(_h("passwd_stdin", "command", "passwd --stdin", f"echo '{p}' | passwd --stdin deploy", p))
p = _mixed(14)
_add(_h("chpasswd", "command", "chpasswd", f"echo 'deploy:{p}' | sudo chpasswd", p))
p = _mixed(16)
_add(
    _h(
        "openssl_passwd",
        "command",
        "useradd with openssl passwd",
        f"sudo useradd -m -p \"$(openssl passwd -6 '{p}')\" deploy",
        p,
    )
)
p = _mixed(24)
_add(
    _h(
        "vault_write_secret_id",
        "command",
        "vault write approle login",
        f"vault write auth/approle/login role_id=3f1c-app secret_id={p}",
        p,
    )
)
p = _mixed(20)
_add(
    _h(
        "gh_api_token_flag",
        "command",
        "curl with token query",
        f"curl -s 'https://gitlab.acme.io/api/v4/projects?private_token={p}&per_page=100'",
        p,
    )
)
p = _r(32, _HEX)
_add(
    _h(
        "openweather_appid",
        "command",
        "OpenWeather API",
        f'curl "https://api.openweathermap.org/data/2.5/weather?q=Berlin&appid={p}&units=metric"',
        p,
    )
)
p = _mixed(26)
_add(
    _h(
        "mongodb_uri_in_cli",
        "command",
        "mongodump --uri",
        f'mongodump --uri="mongodb://backup:{p}@mongo-0.mongo:27017/app?authSource=admin" --out /backup',
        p,
    )
)

# --- tool output: config files ---------------------------------------------------------
p = _mixed(18)
_add(
    _h(
        "maven_settings_xml",
        "output",
        "~/.m2/settings.xml",
        "<settings>\n  <servers>\n    <server>\n      <id>ossrh</id>\n      <username>acme</username>\n"
        f"      <password>{p}</password>\n    </server>\n  </servers>\n</settings>",
        p,
    )
)
p = _mixed(16)
_add(
    _h(
        "gradle_properties",
        "output",
        "~/.gradle/gradle.properties",
        f"signing.keyId=24875D73\nsigning.password={p}\nsigning.secretKeyRingFile=/home/u/.gnupg/secring.gpg\n"
        f"ossrhUsername=acme\nossrhPassword={(q := _mixed(16))}",
        p,
        q,
    )
)
p = _mixed(20)
_add(
    _h(
        "composer_auth_json",
        "output",
        "~/.composer/auth.json",
        '{\n    "http-basic": {\n        "repo.acme.io": {\n            "username": "ci",\n'
        f'            "password": "{p}"\n        }}\n    }}\n}}',
        p,
    )
)
p = _mixed(22)
_add(
    _h(
        "rclone_conf",
        "output",
        "rclone.conf",
        f"[s3]\ntype = s3\nprovider = AWS\naccess_key_id = AKIA{_r(16, string.ascii_uppercase + '234567')}\n"
        f"secret_access_key = {p}\nregion = eu-west-1",
        p,
    )
)
p = _mixed(16)
_add(
    _h(
        "wpa_psk",
        "output",
        "/etc/wpa_supplicant/wpa_supplicant.conf",
        f'network={{\n    ssid="AcmeCorp"\n    psk="{p}"\n    key_mgmt=WPA-PSK\n}}',
        p,
    )
)
p = _mixed(16)
_add(_h("my_cnf", "output", "~/.my.cnf", f"[client]\nuser=root\npassword={p}\nhost=127.0.0.1", p))
p = _r(40, _B64)
_add(
    _h(
        "s3cfg",
        "output",
        "~/.s3cfg",
        f"[default]\naccess_key = AKIA{_r(16, string.ascii_uppercase + '234567')}\nsecret_key = {p}\n"
        "host_base = s3.amazonaws.com",
        p,
    )
)
p = "gho_" + _r(36)
_add(
    _h(
        "hub_config",
        "output",
        "~/.config/hub",
        f"github.com:\n- user: octo\n  oauth_token: {p}\n  protocol: https",
        p[4:],
    )
)
p = _mixed(40)
_add(
    _h(
        "circleci_cli_yml",
        "output",
        "~/.circleci/cli.yml",
        f"host: https://circleci.com\nendpoint: graphql-unstable\ntoken: {p}",
        p,
    )
)
p = _mixed(32)
_add(
    _h(
        "nextauth_secret",
        "output",
        ".env.local",
        f"NEXTAUTH_URL=http://localhost:3000\nNEXTAUTH_SECRET={p}\nGITHUB_ID=Iv1.8a61f9b3a7aba766",
        p,
    )
)
p = _r(64, _HEX)
_add(
    _h(
        "openssl_rand_secret",
        "output",
        "SECRET_KEY=$(openssl rand -hex 32)",
        f'$ echo "SECRET_KEY=$(openssl rand -hex 32)" >> .env && tail -1 .env\nSECRET_KEY={p}',
        p,
    )
)
p = _r(43, _URLSAFE)
_add(_h("token_urlsafe_output", "output", "python -c secrets.token_urlsafe", f"{p}\n", p))
p = _mixed(20)
_add(
    _h(
        "spring_properties",
        "output",
        "application.properties",
        f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username=app\n"
        f"spring.datasource.password={p}\nspring.jpa.hibernate.ddl-auto=validate",
        p,
    )
)
p = _mixed(18)
_add(
    _h(
        "dotnet_connection_string",
        "output",
        "appsettings.json",
        '{\n  "ConnectionStrings": {\n    "Default": "Server=sql.acme.io;Database=App;User Id=sa;'
        f'Password={p};TrustServerCertificate=True"\n  }}\n}}',
        p,
    )
)
p = _mixed(18)
_add(
    _h(
        "django_email_password",
        "output",
        "settings.py",
        f"    41→EMAIL_HOST = 'smtp.sendgrid.net'\n    42→EMAIL_HOST_USER = 'apikey'\n"
        f"    43→EMAIL_HOST_PASSWORD = '{p}'",
        p,
    )
)
p = _mixed(16)
_add(
    _h(
        "go_mysql_dsn",
        "output",
        "main.go",
        f'    db, err := sql.Open("mysql", "app:{p}@tcp(db:3306)/app?parseTime=true")',
        p,
    )
)
p = _mixed(24)
_add(
    _h(
        "segment_write_key",
        "output",
        "analytics.js setup",
        f"    5→const analytics = AnalyticsBrowser.load({{ writeKey: '{p}' }})",
        p,
    )
)
p = _mixed(40)
_add(
    _h(
        "rust_bearer_auth",
        "output",
        "reqwest bearer_auth",
        f'    let res = client.get(url).bearer_auth("{p}").send().await?;',
        p,
    )
)
p = _r(64, _URLSAFE)
_add(
    _h(
        "docker_identitytoken",
        "output",
        "~/.docker/config.json",
        '{\n  "auths": {\n    "acme.azurecr.io": {\n      "identitytoken": "'
        + p
        + '"\n    }\n  }\n}',
        p,
    )
)
p = "1//0g" + _r(100, _URLSAFE)
_add(
    _h(
        "firebase_ci_token",
        "output",
        "firebase login:ci",
        "✔  Success! Use this token to login on a CI server:\n\n"
        + p
        + '\n\nExample: firebase deploy --token "$FIREBASE_TOKEN"',
        p[5:60],
    )
)
p = "2b7f1c3e-" + _r(4, _HEX) + "-4" + _r(3, _HEX) + "-8" + _r(3, _HEX) + "-" + _r(12, _HEX)
_add(
    _h(
        "consul_bootstrap_token",
        "output",
        "consul acl bootstrap",
        "AccessorID:       8b3f2a1c-0000-4c1d-9e2f-3a4b5c6d7e8f\nSecretID:         "
        + p
        + "\nDescription:      Bootstrap Token (Global Management)\nLocal:            false",
        p,
    )
)
p = _mixed(32)
_add(
    _h(
        "supabase_jwt_secret",
        "output",
        "supabase status",
        f"         API URL: http://127.0.0.1:54321\n      JWT secret: {p}\n        anon key: eyJhbGciOiJIUzI1NiJ9",
        p,
    )
)
p = _r(44, _B64)
_add(
    _h(
        "azure_storage_keys_list",
        "output",
        "az storage account keys list",
        '[\n  {\n    "creationTime": "2026-11-01T10:00:00+00:00",\n    "keyName": "key1",\n    "permissions": "FULL",\n'
        f'    "value": "{p}"\n  }}\n]',
        p,
    )
)
p = _mixed(20)
_add(
    _h(
        "kubectl_jsonpath_decode",
        "output",
        "kubectl get secret -o jsonpath | base64 -d",
        f"$ kubectl get secret db-creds -o jsonpath='{{.data.password}}' | base64 -d\n{p}",
        p,
    )
)
p = _r(48, _HEX)
_add(
    _h(
        "jupyter_server_list",
        "output",
        "jupyter server list",
        f"Currently running servers:\nhttp://localhost:8888/?token={p} :: /home/u/notebooks",
        p,
    )
)
p = _mixed(30)
_add(
    _h(
        "gcp_hmac_secret",
        "output",
        "gsutil hmac create",
        f"Access ID:   GOOG1E{_r(55, string.ascii_uppercase + string.digits)}\nSecret:      {p}",
        p,
    )
)
p = _mixed(36)
_add(
    _h(
        "xml_api_key_attribute",
        "output",
        "NuGet.Config",
        f'<configuration>\n  <apikeys>\n    <add key="https://www.nuget.org/api/v2/package" value="{p}" />\n'
        "  </apikeys>\n</configuration>",
        p,
    )
)
p = _mixed(20)
_add(
    _h(
        "toml_password",
        "output",
        "pyproject / config.toml",
        f'[tool.poetry.http-basic.private]\nusername = "ci"\npassword = "{p}"',
        p,
    )
)
p = _mixed(28)
_add(
    _h(
        "ini_secret",
        "output",
        "alembic.ini / app.ini",
        f"[app]\ndebug = false\nsecret = {p}\n[db]\nurl = sqlite:///app.db",
        p,
    )
)

# --- prompts ----------------------------------------------------------------------------------
p = _mixed(18)
_add(
    _h(
        "prompt_password_prose",
        "prompt",
        "user prompt",
        f"The staging admin login is admin / {p} - use it to check the dashboard loads.",
        p,
    )
)
p = "sk-proj-" + _r(48, _URLSAFE)
_add(
    _h(
        "prompt_openai_key_quoted",
        "prompt",
        "user prompt",
        f"here is my key `{p}` please put it in the env file",
        p[8:],
    )
)
p = _r(32, _HEX)
_add(
    _h(
        "prompt_api_key_colon",
        "prompt",
        "user prompt",
        f"Mapping provider API key: {p} (the free tier one)",
        p,
    )
)

# --- logs and HTTP -------------------------------------------------------------------------
p = _r(40, _URLSAFE)
_add(
    _h(
        "http_request_log_header",
        "output",
        "HTTP debug log",
        f"DEBUG:urllib3:GET /v1/me HTTP/1.1\nheader: Authorization: Bearer {p}\nheader: User-Agent: python",
        p,
    )
)
p = _mixed(32)
_add(
    _h(
        "json_log_api_key",
        "output",
        "structured log",
        '{"ts":"2026-11-25T10:00:00Z","level":"info","msg":"calling provider","api_key":"'
        + p
        + '"}',
        p,
    )
)
p = _r(32, _HEX)
_add(
    _h(
        "http_query_key",
        "output",
        "nginx access log",
        f'10.0.0.5 - - [25/Nov/2026:10:00:00 +0000] "GET /v2/data?key={p}&q=x HTTP/1.1" 200 512',
        p,
    )
)
p = _mixed(26)
_add(
    _h(
        "python_traceback_locals",
        "output",
        "pytest --showlocals",
        f"client     = <Client base_url='https://api.acme.io'>\npassword   = '{p}'\nuser       = 'svc'",
        p,
    )
)
p = _r(40, _B64)
_add(
    _h(
        "env_dump_session_token",
        "output",
        "env",
        f"AWS_REGION=eu-west-1\nAWS_SESSION_TOKEN={p}\nSHLVL=1",
        p,
    )
)
p = _mixed(22)
_add(
    _h(
        "set_cookie_remember_token",
        "output",
        "curl -i",
        f"HTTP/1.1 200 OK\nSet-Cookie: remember_user_token={p}; path=/; HttpOnly",
        p,
    )
)

# --- wrapped panes ------------------------------------------------------------------------
p = _mixed(64)
_add(
    _h(
        "pane_wrapped_api_key",
        "pane",
        "tmux capture of export",
        f"$ export OPENROUTER_API_KEY={p} && python run_agent_eval.py --model x",
        p[:20],
        p[-20:],
    )
)
p = _mixed(30)
_add(
    _h(
        "pane_wrapped_mysql",
        "pane",
        "tmux capture of a long mysql command",
        f"$ mysql --host=analytics-replica-01.internal.acme.io --user=reporting --password={p} warehouse",
        p,
    )
)
p = "xoxb-" + _r(11, string.digits) + "-" + _r(12, string.digits) + "-" + _r(24)
_add(
    _h(
        "pane_wrapped_slack",
        "pane",
        "tmux capture of env",
        f"$ env | grep -i slack\nSLACK_BOT_TOKEN_FOR_THE_RELEASE_NOTIFICATIONS_CHANNEL_IN_PRODUCTION={p}",
        p[5:25],
        p[-15:],
    )
)

# --- password managers printing a secret -----------------------------------------------
p = _mixed(22)
_add(_h("op_read_output", "output", "1Password CLI op read", f"{p}\n", p))
p = _mixed(20)
_add(_h("keychain_find_password", "output", "security find-generic-password -w",
        f"{p}\n", p))  # fmt: skip
p = _mixed(18)
_add(_h("pass_show_output", "output", "pass show (password-store)",
        f"{p}\nurl: https://mail.acme.io\nlogin: bob", p))  # fmt: skip
p = _mixed(24)
_add(_h("gpg_decrypt_env", "output", "gpg --decrypt secrets.env.gpg",
        f"gpg: encrypted with cv25519 key, ID 0x1A2B3C4D\nDB_PASSWORD={p}\nDB_HOST=db", p))  # fmt: skip
