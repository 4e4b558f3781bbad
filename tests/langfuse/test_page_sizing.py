"""Session reads stay under Langfuse Cloud's 5 MB response limit (issue 12 item 6)."""

from __future__ import annotations

import json
import math

import httpx

from scorer.sources.langfuse import LangfuseSource, ReadStats, fetch_observations
from scorer.sources.langfuse_read import TARGET_BYTES, next_limit
from tests.langfuse.fake_server import FakeLangfuse

LIMIT = 5_000_000


def tool_observations(n: int, chars: int, session_id: str = "sized") -> list[dict]:
    """n TOOL observations under one root, each with `chars` of input and of output
    (the Claude Code plugin keeps up to 20,000 characters per field)."""
    trace = "a" * 32

    def ts(i: int) -> str:
        return f"2026-11-20T10:{i // 3600 % 60:02d}:{i // 60 % 60:02d}.{i % 60:03d}Z"

    root = {
        "id": "root",
        "traceId": trace,
        "projectId": "p",
        "type": "SPAN",
        "name": "Conversational Turn",
        "startTime": ts(0),
        "endTime": ts(n + 1),
        "parentObservationId": None,
        "isRootObservation": True,
        "sessionId": session_id,
        "input": json.dumps({"role": "user", "content": "go"}),
        "output": json.dumps({"role": "assistant", "content": "done"}),
        "metadata": {},
    }
    body = "x" * chars
    tools = [
        {
            **root,
            "id": f"t{i:05d}",
            "type": "TOOL",
            "name": "Tool: Bash",
            "startTime": ts(i + 1),
            "endTime": ts(i + 1),
            "parentObservationId": "root",
            "isRootObservation": False,
            "input": json.dumps({"command": body}),
            "output": json.dumps(body),
        }
        for i in range(n)
    ]
    return [root, *tools]


def test_full_size_fields_never_hit_the_5mb_limit():
    observations = tool_observations(700, 20_000)  # ~28 MB of text in all
    with FakeLangfuse(observations, max_response_bytes=LIMIT) as fake:
        stats = ReadStats()
        found = fetch_observations(fake.client(), session_id="sized", stats=stats)
        statuses = [r.status_code for r in fake.observation_responses]
    assert len(found) == len(observations)
    assert 413 not in statuses and stats.halvings == 0
    assert stats.largest_response < LIMIT and stats.requests <= 10
    limits = [int(r.url.params["limit"]) for r in fake.observation_requests]
    assert limits[0] == 50 and max(limits) < 1000


def test_413_halves_the_page_and_later_pages_stay_small():
    observations = tool_observations(300, 20_000)
    with FakeLangfuse(observations, max_response_bytes=1_000_000) as fake:
        stats = ReadStats()
        found = fetch_observations(fake.client(), session_id="sized", stats=stats)
        statuses = [r.status_code for r in fake.observation_responses]
    assert len(found) == len(observations)
    assert statuses.count(413) == stats.halvings >= 1
    assert statuses[-1] == 200 and stats.largest_response <= 1_000_000


def test_5xx_halves_after_the_backoff(fast_retry_waits):
    observations = tool_observations(120, 100)
    limits: list[int] = []
    with FakeLangfuse(observations) as fake:
        fake.on_request = lambda route, request: limits.append(int(request.url.params["limit"]))
        fake.fail("observations", httpx.Response(502, json={"message": "bad gateway"}))
        stats = ReadStats()
        fetch_observations(fake.client(), session_id="sized", stats=stats)
    assert limits[:2] == [50, 25] and stats.halvings == 1
    assert fast_retry_waits.langfuse == [1.0]


def test_small_observations_read_in_at_most_ceil_n_over_1000_plus_one():
    observations = tool_observations(2_499, 20)
    with FakeLangfuse(observations) as fake:
        session = LangfuseSource("sized", client=fake.client()).load()
    assert session.extra["langfuse"]["n_observations"] == 2_500
    assert fake.calls["observations"] <= math.ceil(2_500 / 1000) + 1


def test_next_limit_is_pure_and_bounded():
    assert next_limit(40_000) == TARGET_BYTES // 40_000
    assert next_limit(10) == 1000 and next_limit(10, cap=200) == 200
    assert next_limit(10_000_000) == 5
