"""Redaction that generalises (issue 25): a secret is found by where it sits (a name in any
syntax, a command that reads secrets, a value already found elsewhere in the session),
not only by its format; and what agents legitimately show (commits, UUIDs, hashes)
survives.

Every value here is made up and assembled from pieces, so the file trips no scanner.
"""

from __future__ import annotations

import json

import pytest

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare.redact import redact_session, redact_text
from scorer.prepare.render import render_timeline
from scorer.sources.stream_json import StreamJsonSource
from tests.conftest import TERMINAL_BENCH, require

PW = "Qx7" + "vR2mTq9Lw4zK"  # a generated-looking password
TOKEN = "Zk4" + "Vw9rTq2Lm8Xn5Bp3Hs7Jd6Fy1Gc0"  # 30 characters, no vendor prefix
AWS_SECRET = "D4w8z9" + "wKN1aVeT3BpQj6kIuN7wH8X0M9KfV5OqzF"  # the one in sanitize-git-repo

NAMED = [
    pytest.param(f"<password>{PW}</password>", id="xml-element"),
    pytest.param(f'<add key="DbPassword" value="{PW}"/>', id="xml-attributes"),
    pytest.param(f'{{"name": "DB_PASSWORD", "value": "{PW}"}}', id="json-name-value"),
    pytest.param(f"- name: API_TOKEN\n  value: {PW}", id="k8s-env-pair"),
    pytest.param(f"ParameterKey=DbPassword,ParameterValue={PW}", id="cloudformation-pair"),
    pytest.param(f"ngrok config add-authtoken {TOKEN}", id="positional-after-name"),
    pytest.param(f"aws configure set aws_secret_access_key {TOKEN}", id="configure-set"),
    pytest.param(f"echo '{PW}' | passwd --stdin deploy", id="piped-to-passwd"),
    pytest.param(f"docker login --password-stdin <<< '{PW}'", id="here-string"),
    pytest.param(f"dsn = app:{PW}@tcp(db:3306)/shop", id="go-dsn-without-scheme"),
    pytest.param(f"The admin password is {PW}.", id="prose"),
    pytest.param(f"AWS Secret Access Key: `{AWS_SECRET}`", id="prose-markdown"),
    pytest.param(f'"SecretAccessKey": "{AWS_SECRET}"', id="sts-json"),
    pytest.param(f'{{\\"password\\": \\"{PW}\\"}}', id="json-escaped"),
]


@pytest.mark.parametrize("text", NAMED)
def test_a_secret_named_in_any_syntax_is_redacted(text: str) -> None:
    out, counts = redact_text(text)
    assert PW not in out and TOKEN not in out and AWS_SECRET not in out, out
    assert counts


def test_a_random_token_beside_a_redacted_one_is_its_partner() -> None:
    # the leak in sanitize-git-repo: the key id is a format, the secret key beside it not
    out, _ = redact_text(f'grep -r "AKIA{"Q7ZR2XW5NB4KJ8LD"}\\|{AWS_SECRET}" . --exclude-dir=.git')
    assert AWS_SECRET not in out and "--exclude-dir=.git" in out


def test_base64_of_a_secret_is_redacted() -> None:
    import base64

    wrapped = base64.b64encode(f"admin:{PW}".encode()).decode()
    out, counts = redact_text(f"  _auth: {wrapped}")
    assert wrapped not in out, out
    pem = base64.b64encode(b"-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n").decode()
    out, counts = redact_text(f"client-cert: {pem}")
    assert pem not in out and counts["encoded_secret"] == 1


KEPT = [
    pytest.param("commit 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b (HEAD -> main)", id="git-sha"),
    pytest.param('"uuid": "3f2b8c1e-4a5d-4e6f-9a7b-8c9d0e1f2a3b", "type": "token"', id="uuid"),
    pytest.param(
        '"integrity": "sha512-Jx8Vq2Lm9Tr4Bn7Kp3Wz6Hs1Fd5Gy0Cq8Rv2Mt4Nk6Pw9Xs3Lb7Jh1Df5Gz0Ya2Ec4"'
        " token",
        id="npm-integrity",
    ),
    pytest.param(
        "x-request-id: GJOGAOf-hoLS20MAABCM, cache-control: private, no-store", id="request-id"
    ),
    pytest.param(
        "pass `adapter: :cowboy2` option to the endpoint config", id="pass-the-verb-in-prose"
    ),
    pytest.param(
        "auth ok, downloading numpy-1.26.4-cp311-cp311-manylinux_2_17_x86_64.whl", id="file-name"
    ),
    pytest.param('"signature": "' + "EsQCCkYICxgCKkCi" * 20 + '"', id="thinking-signature"),
]


@pytest.mark.parametrize("text", KEPT)
def test_what_agents_legitimately_show_survives(text: str) -> None:
    out, counts = redact_text(text)
    assert out == text and not counts, out


def _session(*events: Event) -> Session:
    return Session(session_id="s", source=SourceKind.CLAUDE_CODE, events=list(events))


def _call(index: int, command: str, call_id: str) -> Event:
    return Event(
        index=index,
        kind=EventKind.TOOL_CALL,
        tool_name="Bash",
        tool_use_id=call_id,
        tool_input={"command": command},
    )


def _result(index: int, text: str, call_id: str) -> Event:
    return Event(index=index, kind=EventKind.TOOL_RESULT, tool_use_id=call_id, text=text)


def test_the_output_of_a_command_that_reads_a_secret_is_redacted() -> None:
    session = _session(
        _call(1, "op read op://prod/db/credential", "a"),
        _result(2, PW + "\n", "a"),
        _call(3, "kubectl get secret api -o jsonpath='{.data.key}' | base64 -d", "b"),
        _result(4, TOKEN, "b"),
        _call(5, "git rev-parse HEAD", "c"),
        _result(6, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b\n", "c"),
    )
    clean, report = redact_session(session)
    texts = [e.text for e in clean.events]
    assert PW not in texts[1] and TOKEN not in texts[3], texts
    assert texts[5] == "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b\n"  # a commit stays
    assert report.total == 2


def test_a_value_found_once_is_redacted_everywhere_in_the_session() -> None:
    session = _session(
        _call(1, f"export API_TOKEN={TOKEN}", "a"),
        _result(2, "", "a"),
        Event(index=3, kind=EventKind.ASSISTANT, text=f"I set the token `{TOKEN}` for you."),
        Event(
            index=4,
            kind=EventKind.TOOL_CALL,
            tool_name="Grep",
            tool_use_id="g",
            tool_input={"pattern": TOKEN, "path": "."},
        ),
    )
    clean, report = redact_session(session)
    dumped = clean.model_dump_json()
    assert TOKEN not in dumped and json.dumps(TOKEN)[1:-1] not in dumped
    assert report.total == 3
    assert TOKEN in session.model_dump_json()  # the input is left as it was


def test_sanitize_git_repo_aws_secret_never_reaches_the_rendered_timeline() -> None:
    path = require(TERMINAL_BENCH / "sanitize-git-repo.hard" / "session.jsonl")
    session = StreamJsonSource(path).load()
    assert AWS_SECRET in session.model_dump_json()
    clean, _ = redact_session(session)
    assert AWS_SECRET not in clean.model_dump_json()
    rendered = render_timeline(clean)
    assert AWS_SECRET[:12] not in rendered and AWS_SECRET[-12:] not in rendered
    assert "git show d6987af" in rendered  # commits are still shown
