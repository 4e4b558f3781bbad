"""Zero leaks, end to end: every transcript of the secret corpus goes through
`score-session --push` (judge behind the real anthropic client on a loopback server,
Langfuse behind respx), `--render` and `--dry-run --json`; no secret may appear in a judge
request, on stdout/stderr, in the SQLite store or in any request to Langfuse.

The fake judge echoes the transcript it was sent into its quotes, rationales and
summary, so anything that reached it would also flow on into the store and Langfuse.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer import langfuse_client
from scorer.cli.main import app
from scorer.settings import get_settings
from tests.fakes.anthropic import FakeAnthropic, message_response, serve, valid_scoring_payload
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse
from tests.secret_corpus import CORPUS, Case, leaked, write_transcript

runner = CliRunner()


def _echo_reply(body: dict):
    """A valid scoring reply whose free text repeats the (redacted) transcript it got."""
    sent = "".join(
        m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
        for m in body["messages"]
    )
    transcript = sent[sent.find("<transcript") :]
    payload = valid_scoring_payload(events=(1, 3))
    for value in payload.values():
        if isinstance(value, dict) and "evidence" in value:
            value["rationale"] = transcript[:4000]
            value["evidence"][1]["quote"] = transcript[-300:]
    payload["summary"] = transcript[:4000]
    payload["accomplishments"] = [transcript[:1000]]
    return message_response(payload)


@pytest.fixture
def services(monkeypatch, clean_env):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setattr(langfuse_client.RETRY, "sleep", lambda _s: None)
    get_settings.cache_clear()
    return clean_env


@pytest.fixture(scope="module")
def judge_server():
    """One loopback judge for the module (a server per test costs ~0.5 s to shut down)."""
    fake = FakeAnthropic()
    with serve(fake) as url:
        yield fake, url


def _store_bytes(home: Path) -> str:
    blobs = [p.read_bytes() for p in sorted(home.glob("scores.sqlite3*"))]
    assert blobs, "nothing was stored"
    return b"".join(blobs).decode("utf-8", "replace")


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_no_secret_reaches_judge_output_store_or_langfuse(
    case: Case, tmp_path, monkeypatch, services, judge_server
) -> None:
    path = write_transcript(case, tmp_path)
    fake, url = judge_server
    fake.history.clear()
    fake.push(_echo_reply)
    sent_to_langfuse: list[str] = []
    with FakeLangfuse() as langfuse:
        langfuse.on_request = lambda _name, request: sent_to_langfuse.append(
            request.url.query.decode() + request.content.decode()
        )
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        get_settings.cache_clear()
        scored = runner.invoke(app, ["session", str(path), "--json", "--push"])
        rendered = runner.invoke(app, ["session", str(path), "--render"])
        dry = runner.invoke(app, ["session", str(path), "--dry-run", "--json"])
    assert scored.exit_code == 0, scored.stderr
    assert rendered.exit_code == 0 and dry.exit_code == 0
    assert len(fake.message_bodies) == 1 and langfuse.score_batches  # both really called
    places = {
        "judge request": json.dumps(fake.message_bodies),
        "score-session output": scored.stdout + scored.stderr,
        "render": rendered.stdout,
        "dry run": dry.stdout,
        "store": _store_bytes(services),
        "langfuse": "".join(sent_to_langfuse),
    }
    assert "[REDACTED:" in places["judge request"] and "[REDACTED:" in places["langfuse"]
    leaks = {where: leaked(case, blob) for where, blob in places.items()}
    assert not any(leaks.values()), leaks
