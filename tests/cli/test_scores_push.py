"""`scorer scores push` and score-session's push step: a Langfuse outage never loses a judgement.

Langfuse is `FakeLangfuse` (respx at the HTTP boundary); retries sleep 0 s.
"""

from __future__ import annotations

import json

import httpx
import pytest
from typer.testing import CliRunner

from scorer import langfuse_client
from scorer.cli.main import app
from scorer.cli.scores import push_candidates
from scorer.judge.rubric import default_rubric
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.conftest import REPO
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse
from tests.sinks.cards import make_card, unscored_card

DEMO = REPO / "examples" / "demo-session.jsonl"
EIGHT = {s.name for s in default_rubric().all_configs}
"""The seven and goal_probability: a stored card keeps its probability for the push."""
runner = CliRunner()


@pytest.fixture
def langfuse_env(clean_env, monkeypatch):
    """Langfuse keys pointing at the fake host; retry waits zeroed."""
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    get_settings.cache_clear()
    return clean_env


def scorer(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def outage(fake: FakeLangfuse) -> None:
    """Every attempt of one push (all retries) gets a 500."""
    down = httpx.Response(500, json={"message": "down"})
    fake.fail("scores", *[down] * langfuse_client.RETRY.attempts)


def test_outage_during_score_session_keeps_the_card_then_push_sends_it_once(langfuse_env):
    with FakeLangfuse() as fake:
        outage(fake)
        result = scorer("session", str(DEMO), "--judge", "heuristic", "--push", "--json")
        assert result.exit_code == 1
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "Traceback" not in result.output
        assert "Langfuse push failed" in lines[0] and "scorer scores push" in lines[0]
        assert json.loads(result.stdout)["judge"] == "heuristic"  # the judgement was shown
        assert fake.score_batches == []  # nothing reached the server
        assert fake.calls["scores"] == langfuse_client.RETRY.attempts

        with ScoreStore() as store:
            unpushed = store.unpushed()
            runs = store.list_runs()
        assert [c.session_id for c in unpushed] == [runs[0].session_id]
        assert runs[0].pushed_at is None and "500" in runs[0].push_error

        dry = scorer("scores", "push", "--dry-run")
        assert dry.exit_code == 0 and "would push" in dry.stdout
        assert fake.score_batches == []

        first = scorer("scores", "push")
        assert first.exit_code == 0, first.stderr
        assert "pushed 1 of 1" in first.stderr
        assert len(fake.score_batches) == 1
        assert {item["name"] for item in fake.score_batches[0]} == EIGHT
        assert len(fake.score_batches[0]) == 8

        second = scorer("scores", "push")
        assert second.exit_code == 0 and "nothing to push" in second.stderr
        assert len(fake.score_batches) == 1

    with ScoreStore() as store:
        assert store.unpushed() == []
        run = store.list_runs()[0]
    assert run.pushed_at is not None and run.push_error is None


def test_score_session_push_success_marks_pushed(langfuse_env):
    with FakeLangfuse() as fake:
        result = scorer("session", str(DEMO), "--judge", "heuristic", "--push")
        assert result.exit_code == 0, result.stderr
        assert len(fake.score_batches) == 1
    with ScoreStore() as store:
        assert store.unpushed() == []


def test_no_store_push_failure_still_keeps_the_card(langfuse_env):
    with FakeLangfuse() as fake:
        outage(fake)
        result = scorer("session", str(DEMO), "--judge", "heuristic", "--push", "--no-store")
        assert result.exit_code == 1
    with ScoreStore() as store:
        assert len(store.unpushed()) == 1


def test_push_without_credentials_is_one_line_and_records_error(clean_env):
    with ScoreStore() as store:
        store.save(make_card("lf-1", source="langfuse"))
    result = scorer("scores", "push")
    assert result.exit_code == 1
    assert "LANGFUSE_PUBLIC_KEY" in result.stderr and "Traceback" not in result.output
    with ScoreStore() as store:
        run = store.list_runs()[0]
    assert run.pushed_at is None and "LANGFUSE_PUBLIC_KEY" in run.push_error


def test_push_continues_after_one_failure_and_exits_1(langfuse_env):
    with ScoreStore() as store:
        store.save(make_card("lf-a", source="langfuse"))
        store.save(make_card("lf-b", source="langfuse"))
    with FakeLangfuse() as fake:
        # config sync goes first; then the first card's score writes all fail
        busy = httpx.Response(503, json={"message": "busy"})
        fake.fail("scores", *[busy] * langfuse_client.RETRY.attempts)
        result = scorer("scores", "push")
        assert result.exit_code == 1
        assert "pushed 1 of 2" in result.stderr and "stay queued" in result.stderr
        assert len(fake.score_batches) == 1
        assert {i["sessionId"] for i in fake.score_batches[0]} == {"lf-b"}
        again = scorer("scores", "push", "--session", "lf-a")
        assert again.exit_code == 0, again.stderr
        assert len(fake.score_batches) == 2
    with ScoreStore() as store:
        assert store.unpushed() == []


def test_rejected_items_keep_the_card_queued(langfuse_env):
    with ScoreStore() as store:
        store.save(make_card("lf-r", source="langfuse"))
    with FakeLangfuse() as fake:
        fake.reject = lambda item: (
            f"score {item['name']}: invalid value" if item["name"] == "tool_efficiency" else None
        )
        result = scorer("scores", "push")
        assert result.exit_code == 1
        assert "tool_efficiency" in result.stderr
    with ScoreStore() as store:
        assert [c.session_id for c in store.unpushed()] == ["lf-r"]
        assert "tool_efficiency" in store.list_runs()[0].push_error


def test_push_trace_target(langfuse_env):
    with ScoreStore() as store:
        store.save(make_card("lf-t", source="langfuse"))
    root = {
        "id": "obs-1",
        "traceId": "trace-1",
        "startTime": "2026-11-22T09:00:00Z",
        "projectId": "proj-scorer-test",
        "type": "SPAN",
        "sessionId": "lf-t",
        "isRootObservation": True,
        "name": "root",
    }
    with FakeLangfuse([root]) as fake:
        result = scorer("scores", "push", "--target", "trace")
        assert result.exit_code == 0, result.stderr
        assert {i.get("traceId") for i in fake.score_batches[0]} == {"trace-1"}


def test_push_candidates_selection():
    local = make_card("local-1", source="claude-code")
    failed_local = make_card("local-2", source="claude-code")
    lf = make_card("lf-1", source="langfuse")
    unscored = unscored_card("lf-2")
    cards = [local, failed_local, lf, unscored]
    errors = {("local-2", "llm", "claude-sonnet-5-5", failed_local.rubric_version): "HTTP 500"}
    assert [c.session_id for c in push_candidates(cards, errors)] == ["local-2", "lf-1"]
    assert [c.session_id for c in push_candidates(cards, errors, everything=True)] == [
        "local-1",
        "local-2",
        "lf-1",
    ]
    assert [c.session_id for c in push_candidates(cards, {}, session="local-1")] == ["local-1"]
    assert push_candidates([unscored], {}, everything=True) == []


def test_nothing_to_push_on_empty_store(clean_env):
    result = scorer("scores", "push")
    assert result.exit_code == 0 and "nothing to push" in result.stderr
