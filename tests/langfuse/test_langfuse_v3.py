"""Self-hosted Langfuse v3: legacy reads and one score per POST, through the real SDK client."""

from __future__ import annotations

from datetime import UTC, datetime

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
        want = LangfuseSource(BIG_ID, api=v4.client()).load()
    langfuse_caps.reset()
    with FakeLangfuseV3(observations) as v3:
        client = v3.client()
        got = LangfuseSource(BIG_ID, api=client).load()
        assert v3.calls["observations"] == 1  # one 404, then the legacy path
        assert v3.calls["sessions"] == 1
        n_traces = len({o["traceId"] for o in observations})
        assert v3.calls["observations_v1"] >= n_traces
        assert langfuse_caps.capabilities(client).observations_v2 is False
        # Detected once per host: the next read goes straight to the legacy endpoints.
        LangfuseSource(BIG_ID, api=client).load()
        assert v3.calls["observations"] == 1
    assert [e.model_dump() for _, e in got.iter_events()] == [
        e.model_dump() for _, e in want.iter_events()
    ]
    assert got.git_branches == want.git_branches and got.usage == want.usage
    assert got.extra["langfuse"]["project_id"] == want.extra["langfuse"]["project_id"]


def test_v3_unknown_session_is_empty_not_an_error(observations):
    from scorer.errors import EmptySessionError

    with FakeLangfuseV3(observations) as v3, pytest.raises(EmptySessionError):
        LangfuseSource("no-such-session", api=v3.client()).load()


def test_v3_push_is_one_object_per_post_with_the_same_ids():
    card = make_scorecard("sess-v3")
    with FakeLangfuse() as v4:
        on_v4 = push_scorecard(card, api=v4.client())
    langfuse_caps.reset()  # another server on the same host: a new run
    configs.forget_checks()
    with FakeLangfuseV3() as v3:
        client = v3.client()
        result = push_scorecard(card, api=client)
        assert result.ok and result.single and len(result.accepted) == 7
        assert result.score_ids == on_v4.score_ids  # the same deterministic ids
        assert set(v3.scores) == set(on_v4.score_ids.values())
        # One refused list POST, then seven single ones; never a list again on this host.
        assert [len(b) for b in v3.score_batches] == [1] * 7
        assert v3.calls["scores"] == 1 + 7
        assert langfuse_caps.capabilities(client).score_batches is False
        assert all(item["timestamp"].startswith("2026-11-22") for item in v3.scores.values())


def test_v3_rerun_on_another_day_sends_nothing_and_leaves_no_duplicate_rows():
    card = make_scorecard("sess-v3")
    with FakeLangfuseV3() as v3:
        client = v3.client()
        push_scorecard(card, api=client)
        posts = v3.calls["scores"]
        v3.today = "2026-11-25"  # the server stamps scores with its own day
        again = push_scorecard(card, api=client)
        assert again.ok and sorted(again.unchanged) == sorted(again.score_ids)
        assert v3.calls["scores"] == posts  # nothing re-sent
        assert not v3.duplicate_ids()
        # A changed value is sent (and is the documented duplicate-row case on v3).
        changed = card.model_copy(deep=True)
        changed.scores["tool_efficiency"].value = 2
        third = push_scorecard(changed, api=client)
        assert third.ok and third.unchanged and "tool_efficiency" not in third.unchanged
        assert v3.calls["scores"] == posts + 1
        assert v3.duplicate_ids() == {third.score_ids["tool_efficiency"]}


def test_v3_rejected_single_score_is_reported_per_item():
    card = make_scorecard("sess-v3")
    with FakeLangfuseV3() as v3:
        v3.reject = lambda item: "bad value" if item["name"] == "error_handling" else None
        result = push_scorecard(card, api=v3.client())
    assert not result.ok and set(result.rejected) == {"error_handling"}
    assert "bad value" in result.rejected["error_handling"]
    assert len(v3.scores) == 6


def test_first_trace_target_on_v3_uses_the_session_traces(observations):
    with FakeLangfuseV3(observations) as v3:
        result = push_scorecard(make_scorecard(BIG_ID), api=v3.client(), target="trace")
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
