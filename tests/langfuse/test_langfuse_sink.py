"""push_scorecard against the fake API: one batch, idempotent ids, 207 handling, faults."""

from __future__ import annotations

import math

import httpx
import pytest

from scorer.errors import CredentialsError, SinkError
from scorer.judge.rubric import default_rubric
from scorer.sinks.langfuse import attribute_errors, is_transient, push_scorecard
from scorer.sources.langfuse import LangfuseSource
from tests.conftest import BIG_SESSION, require
from tests.langfuse.conftest import make_scorecard
from tests.langfuse.fake_server import HOST, FakeLangfuse
from tests.langfuse.plugin_fixture import convert_transcript, generic_trace


def test_one_batch_of_seven_session_scores_with_config_ids():
    with FakeLangfuse() as fake:
        result = push_scorecard(make_scorecard(), client=fake.client())
    assert result.ok and result.status_code == 202 and result.batches == 1
    (batch,) = fake.score_batches
    assert len(batch) == 7
    configs = {c["name"]: c for c in fake.configs.values()}
    for item in batch:
        assert item["sessionId"] == "sess-1" and "traceId" not in item
        assert item["configId"] == configs[item["name"]]["id"]
        assert item["timestamp"] == "2026-11-22T09:30:00Z"
        assert item["metadata"]["rubric_hash"] == default_rubric().hash
        assert item["metadata"]["prompt_version"] == "v1"
    by_name = {i["name"]: i for i in batch}
    assert by_name["goal_achievement"]["value"] == "complete"
    assert by_name["goal_achievement"]["dataType"] == "CATEGORICAL"
    assert by_name["tool_efficiency"]["value"] == 4.0
    assert 0 <= by_name["overall_quality"]["value"] <= 1
    assert "sk-ant-api03" not in by_name["goal_achievement"]["comment"]  # redacted
    assert by_name["goal_achievement"]["metadata"]["evidence"][0]["event"] == 4
    assert result.url == f"{HOST}/project/proj-scorer-test/sessions/sess-1"


def test_rerun_updates_the_same_scores():
    with FakeLangfuse() as fake:
        client = fake.client()
        first = push_scorecard(make_scorecard(), client=client)
        configs_calls = fake.calls["configs"]
        second = push_scorecard(make_scorecard(), client=client)
    assert first.score_ids == second.score_ids
    a, b = fake.score_batches
    assert [(i["id"], i["timestamp"]) for i in a] == [(i["id"], i["timestamp"]) for i in b]
    assert len(fake.scores) == 7
    assert fake.calls["configs"] == configs_calls  # ids came from the cache
    assert fake.calls["projects"] == 1


def test_different_model_gets_different_ids():
    a = make_scorecard()
    b = make_scorecard(model="claude-opus-5")
    with FakeLangfuse() as fake:
        ra = push_scorecard(a, client=fake.client())
        rb = push_scorecard(b, client=fake.client())
    assert set(ra.score_ids.values()).isdisjoint(rb.score_ids.values())
    assert len(fake.scores) == 14


def test_207_retries_only_the_transient_item():
    seen: dict[str, int] = {}

    def reject(item):
        seen[item["name"]] = seen.get(item["name"], 0) + 1
        if item["name"] == "goal_achievement":
            return f"Score {item['id']}: value 'complete' does not match config categories"
        if item["name"] == "tool_efficiency" and seen["tool_efficiency"] == 1:
            return f"Score {item['id']}: temporary storage error, try again"
        return None

    with FakeLangfuse() as fake:
        fake.reject = reject
        result = push_scorecard(make_scorecard(), client=fake.client())
    assert result.status_code == 202 and result.batches == 2
    assert [len(b) for b in fake.score_batches] == [7, 1]
    assert fake.score_batches[1][0]["name"] == "tool_efficiency"
    assert list(result.rejected) == ["goal_achievement"]
    assert "does not match" in result.rejected["goal_achievement"]
    assert result.retried == ["tool_efficiency"]
    assert "tool_efficiency" in result.accepted and "goal_achievement" not in result.accepted
    assert not result.ok and len(fake.scores) == 6


def test_200_from_an_older_server_counts_as_accepted():
    with FakeLangfuse(score_status=200) as fake:
        result = push_scorecard(make_scorecard(), client=fake.client())
    assert result.ok and result.status_code == 200 and len(result.accepted) == 7


def test_unscored_is_never_pushed():
    card = make_scorecard(status="unscored", unscored_reason="judge reply unparseable", scores={})
    with FakeLangfuse() as fake, pytest.raises(SinkError, match="refusing to push unscored"):
        push_scorecard(card, client=fake.client())
    assert sum(fake.calls.values()) == 0


def test_trace_target_uses_the_first_trace():
    with FakeLangfuse(generic_trace("sess-1")) as fake:
        result = push_scorecard(make_scorecard(), client=fake.client(), target="trace")
    assert result.trace_id == "f" * 32
    req = fake.observation_requests[0]
    assert req.url.params["isRootObservation"] == "true"
    assert all(i["traceId"] == "f" * 32 and "sessionId" not in i for i in fake.score_batches[0])


def test_429_on_scores_waits_then_succeeds(fast_retry_waits):
    with FakeLangfuse() as fake:
        client = fake.client()
        fake.fail("scores", httpx.Response(429, headers={"Retry-After": "3"}, json={}))
        result = push_scorecard(make_scorecard(), client=client)
    assert result.ok and fast_retry_waits == [3.0] and fake.calls["scores"] == 2


def test_401_on_scores_is_a_credentials_error():
    with FakeLangfuse() as fake, pytest.raises(CredentialsError, match="LANGFUSE_SECRET_KEY"):
        push_scorecard(make_scorecard(), client=fake.client(secret="bad"))


def test_error_attribution_helpers():
    cards = make_scorecard()
    from scorer.sinks.langfuse import build_score_requests

    batch = build_score_requests(cards, default_rubric(), {})
    by, loose = attribute_errors(
        batch, [f"x {batch[0].id} y", "output_quality out of range", "???"]
    )
    assert by == {
        batch[0].name: f"x {batch[0].id} y",
        "output_quality": "output_quality out of range",
    }
    assert loose == ["???"]
    assert is_transient("Internal Server Error") and not is_transient("invalid value")


def test_acceptance_one_session_list_calls_and_one_batch():
    """Scoring one Langfuse session: ⌈observations/1000⌉ list calls, one batch of seven."""
    observations = convert_transcript(require(BIG_SESSION))
    sid = observations[0]["sessionId"]
    with FakeLangfuse(observations) as fake:
        client = fake.client()
        session = LangfuseSource(sid, client=client).load()
        result = push_scorecard(make_scorecard(session.session_id), client=client)
    assert fake.calls["observations"] <= math.ceil(len(observations) / 1000) + 1
    assert len(fake.score_batches) == 1 and len(fake.score_batches[0]) == 7
    assert all(i["configId"] for i in fake.score_batches[0])
    assert result.url == session.origin
