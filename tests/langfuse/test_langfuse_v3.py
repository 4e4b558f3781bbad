"""Self-hosted Langfuse v3: legacy reads and scores on the ingestion endpoint, through the
real SDK client."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from scorer import langfuse_caps
from scorer.sinks.langfuse import configs, push_scorecard
from scorer.sources.langfuse import LangfuseSource, ReadStats, fetch_observations
from tests.conftest import BIG_SESSION, require
from tests.langfuse.conftest import make_scorecard
from tests.langfuse.fake_server import FakeLangfuse
from tests.langfuse.fake_v3 import FakeLangfuseV3
from tests.langfuse.plugin_fixture import convert_transcript

BIG_ID = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


@pytest.fixture(scope="module")
def observations() -> list[dict]:
    return convert_transcript(require(BIG_SESSION), link_subagents=True)


def test_v3_session_reads_the_same_as_v4_through_legacy_endpoints(observations):
    with FakeLangfuse(observations) as v4:
        want = LangfuseSource(BIG_ID, client=v4.client()).load()
    langfuse_caps.reset()
    with FakeLangfuseV3(observations) as v3:
        client = v3.client()
        got = LangfuseSource(BIG_ID, client=client).load()
        assert v3.calls["observations"] == 1  # one 404, then the legacy path
        assert v3.calls["sessions"] == 1
        n_traces = len({o["traceId"] for o in observations})
        assert v3.calls["observations_v1"] >= n_traces
        assert langfuse_caps.capabilities(client).observations_v2 is False
        # Detected once per host: the next read goes straight to the legacy endpoints.
        LangfuseSource(BIG_ID, client=client).load()
        assert v3.calls["observations"] == 1
    assert [e.model_dump() for _, e in got.iter_events()] == [
        e.model_dump() for _, e in want.iter_events()
    ]
    assert got.git_branches == want.git_branches and got.usage == want.usage
    assert got.extra["langfuse"]["project_id"] == want.extra["langfuse"]["project_id"]


def test_v3_unknown_session_is_empty_not_an_error(observations):
    from scorer.errors import EmptySessionError

    with FakeLangfuseV3(observations) as v3, pytest.raises(EmptySessionError):
        LangfuseSource("no-such-session", client=v3.client()).load()


def test_v3_push_is_one_ingestion_batch_with_the_same_ids_and_the_stable_timestamp():
    card = make_scorecard("sess-v3")
    with FakeLangfuse() as v4:
        on_v4 = push_scorecard(card, client=v4.client())
    langfuse_caps.reset()  # another server on the same host: a new run
    configs.forget_checks()
    with FakeLangfuseV3() as v3:
        client = v3.client()
        result = push_scorecard(card, client=client)
        assert result.ok and result.path == "ingestion" and len(result.accepted) == 7
        assert result.score_ids == on_v4.score_ids  # the same deterministic ids
        assert set(v3.scores) == set(on_v4.score_ids.values())
        # Decided from the version before sending: no list POST, no refusal, one request.
        assert (v3.calls["health"], v3.calls["scores"], v3.calls["ingestion"]) == (1, 0, 1)
        assert langfuse_caps.capabilities(client).score_write == "ingestion"
        stamp = card.created_at.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        assert all(item["timestamp"] == stamp for item in v3.scores.values())


def test_v3_rerun_on_another_day_leaves_one_row_and_a_changed_value_wins():
    card = make_scorecard("sess-v3")
    with FakeLangfuseV3() as v3:
        client = v3.client()
        push_scorecard(card, client=client)
        v3.today = "2026-11-25"  # the server's own day no longer matters
        again = push_scorecard(card, client=client)
        assert again.ok and v3.calls["ingestion"] == 2 and not v3.duplicate_ids()
        # A re-judgement three days later: its event comes later the same day, so it
        # wins the worker's merge and the row keeps its first timestamp.
        changed = card.model_copy(deep=True)
        changed.meta["first_scored_at"] = card.created_at.isoformat()
        changed.created_at = card.created_at + timedelta(days=3)
        changed.scores["tool_efficiency"].value = 2
        third = push_scorecard(changed, client=client)
        stored = v3.scores[third.score_ids["tool_efficiency"]]
        assert third.ok and stored["value"] == 2 and not v3.duplicate_ids()
        assert stored["timestamp"].startswith("2026-11-22T09:30:00")
        # An older card pushed later (`scores push` of an old run) does not win.
        push_scorecard(card, client=client)
        assert v3.scores[third.score_ids["tool_efficiency"]]["value"] == 2


def test_a_server_that_refuses_lists_anyway_costs_one_refusal_ever(monkeypatch):
    """A version newer than 4.16 gets the list body; if it refuses it, that host goes one
    score per request, remembered on disk: a new process sends no list again."""
    card = make_scorecard("sess-odd")
    with FakeLangfuseV3(version="4.30.1") as odd:
        client = odd.client()
        result = push_scorecard(card, client=client)
        assert result.ok and result.path == "single" and len(result.accepted) == 7
        assert odd.calls["scores"] == 1 + 7  # one refused list, then seven objects
        langfuse_caps.reset()  # the next process
        again = push_scorecard(card, client=client)
        assert again.ok and again.path == "single" and odd.calls["scores"] == 8
        assert sorted(again.unchanged) == sorted(again.score_ids)  # read back, not re-sent
        odd.version = "4.31.0"  # upgraded: the list is tried again
        langfuse_caps.reset()
        push_scorecard(card, client=client)
        assert odd.calls["scores"] == 9


def test_v3_rejected_score_is_reported_per_item():
    card = make_scorecard("sess-v3")
    with FakeLangfuseV3() as v3:
        v3.reject = lambda item: "bad value" if item["name"] == "error_handling" else None
        result = push_scorecard(card, client=v3.client())
    assert not result.ok and set(result.rejected) == {"error_handling"}
    assert "bad value" in result.rejected["error_handling"]
    assert len(v3.scores) == 6


def test_first_trace_target_on_v3_uses_the_session_traces(observations):
    with FakeLangfuseV3(observations) as v3:
        result = push_scorecard(make_scorecard(BIG_ID), client=v3.client(), target="trace")
        first = min(
            (o for o in observations if not o.get("parentObservationId")),
            key=lambda o: o["startTime"],
        )
        assert result.ok and result.trace_id == first["traceId"]
        assert v3.calls["observations_v1"] == 0  # the roots come from the traces alone


def test_legacy_stats_say_legacy(observations):
    with FakeLangfuseV3(observations) as v3:
        stats = ReadStats()
        found = fetch_observations(v3.client(), session_id=BIG_ID, stats=stats)
    assert stats.legacy and len(found) == len(observations)
    assert datetime(2000, 1, 1, tzinfo=UTC) < min(o.start_time for o in found)
