"""Pure parts of the backfill: discovery, selection, ledger, rate limiter."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import httpx
import httpx2
import pytest
import respx

from scorer.errors import ConfigError
from scorer.jobs.discover_local import discover_local
from scorer.jobs.discovery import (
    SessionRef,
    discover_langfuse,
    observation_filter,
)
from scorer.jobs.ledger import Ledger, run_key
from scorer.jobs.ratelimit import (
    LimitedTransport,
    RateLimiter,
    limited_httpx2_client,
    retry_after_seconds,
)
from scorer.jobs.selection import in_shard, parse_shard, select

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_local_discovery_window_idle_and_agents(tmp_path):
    proj = tmp_path / "-home-dev-proj"
    proj.mkdir()
    ages = {"old": 48, "mid": 5, "fresh": 0.1}
    for name, hours in ages.items():
        p = proj / f"{name}.jsonl"
        last_event = (NOW - timedelta(hours=hours)).isoformat()
        p.write_text(json.dumps({"type": "user", "timestamp": last_event}) + "\n")
        t = (NOW - timedelta(hours=hours)).timestamp()
        os.utime(p, (t, t))
    (proj / "agent-abc.jsonl").write_text("{}\n")
    found = discover_local(tmp_path, start=NOW - timedelta(days=1), end=NOW, now=NOW)
    assert [r.session_id for r in found.sessions] == ["mid"]
    assert found.active == ["fresh"]
    assert found.active_why == {"fresh": "its last event was 6 min ago"}
    assert "--idle-minutes 0" in found.notes()[0] and "fresh" in found.notes()[1]
    assert discover_local(tmp_path, project="nomatch", now=NOW).sessions == []


def test_observation_filter_puts_everything_in_filter():
    conds = observation_filter(
        NOW - timedelta(days=1), NOW, tags=["a", "b"], environment="prod", user="u1"
    )
    cols = {(c["column"], c["operator"]) for c in conds}
    assert ("startTime", ">=") in cols and ("startTime", "<") in cols
    assert ("isRootObservation", "=") in cols and ("tags", "all of") in cols
    assert ("environment", "any of") in cols and ("userId", "=") in cols
    assert next(c for c in conds if c["column"] == "startTime")["value"].endswith("Z")


def _obs(oid, sid, start, end=None):
    return {
        "id": oid,
        "traceId": f"t-{oid}",
        "sessionId": sid,
        "startTime": start.isoformat(),
        "endTime": (end or start).isoformat(),
        "type": "SPAN",
        "projectId": "p",
        "isRootObservation": True,
    }


def test_langfuse_discovery_pages_dedupes_and_groups():
    from langfuse.api import LangfuseAPI

    from scorer.langfuse_client import LangfuseClient

    t0 = NOW - timedelta(days=2)
    obs = [_obs(f"o{i}", f"s{i % 3}", t0 + timedelta(hours=i)) for i in range(30)]
    obs.append(_obs("nosess", None, t0 + timedelta(hours=1)))
    obs.append(_obs("live", "active", NOW - timedelta(minutes=3)))
    seen_filters = []

    def handler(request):
        q = request.url.params
        flt = json.loads(q["filter"])
        seen_filters.append(flt)
        lo = next(c["value"] for c in flt if c["operator"] == ">=")
        hi = next(c["value"] for c in flt if c["operator"] == "<")
        lo, hi = (datetime.fromisoformat(v.replace("Z", "+00:00")) for v in (lo, hi))
        rows = [o for o in obs if lo <= datetime.fromisoformat(o["startTime"]) < hi]
        off = int(q.get("cursor") or 0)
        page = rows[off : off + 7]  # the fake pages by 7 whatever limit says
        meta = {"cursor": str(off + 7)} if off + 7 < len(rows) else {}
        assert q["limit"] == "1000" and q["fields"] == "core,basic,trace_context"
        return httpx.Response(200, json={"data": page, "meta": meta})

    with respx.mock(base_url="https://lf.test") as mock:
        mock.get("/api/public/v2/observations").mock(side_effect=handler)
        api = LangfuseClient.wrap(
            LangfuseAPI(base_url="https://lf.test", username="pk", password="sk")
        )
        found = discover_langfuse(api, t0 - timedelta(hours=1), NOW, now=NOW)
    assert sorted(r.session_id for r in found.sessions) == ["s0", "s1", "s2"]
    assert found.active == ["active"] and found.without_session == 1
    assert found.observations == 32  # each observation once despite overlapping windows
    assert sum(len(r.trace_ids) for r in found.sessions) == 30
    assert found.pages > 3 and all(
        any(c["column"] == "isRootObservation" for c in f) for f in seen_filters
    )


def test_select_shard_sample_fraction_are_deterministic():
    refs = [SessionRef(f"s{i:03d}", "claude-code") for i in range(200)]
    shards = [select(refs, shard=(i, 4)) for i in range(4)]
    assert sum(len(s) for s in shards) == 200
    assert len({r.session_id for s in shards for r in s}) == 200
    assert all(in_shard(r.session_id, (1, 4)) for r in shards[1])
    a = select(refs, sample=10, seed=3)
    assert [r.session_id for r in a] == [
        r.session_id for r in select(list(reversed(refs)), sample=10, seed=3)
    ][::-1] or {r.session_id for r in a} == {
        r.session_id for r in select(list(reversed(refs)), sample=10, seed=3)
    }
    assert len(a) == 10 and {r.session_id for r in a} != {
        r.session_id for r in select(refs, sample=10, seed=4)
    }
    frac = select(refs, fraction=0.25, seed=1)
    assert 30 < len(frac) < 70
    assert len(select(refs, limit=5)) == 5
    with pytest.raises(ConfigError):
        select(refs, sample=1, fraction=0.5)
    assert parse_shard("2/3") == (2, 3)
    with pytest.raises(ConfigError):
        parse_shard("3/3")


def test_ledger_states_resume_and_batches(tmp_path):
    key = run_key({"a": 1})
    assert key == run_key({"a": 1}) and key != run_key({"a": 2})
    led = Ledger(tmp_path / "s.sqlite3", key)
    assert led.add([("x", None), ("y", "/p")]) == 2
    assert led.add([("x", None)]) == 0
    led.set_state("x", "written", cost_usd=0.5)
    assert led.bump_attempts("y") == 1 and led.bump_attempts("y") == 2
    led.set_state("y", "failed", "boom")
    led.add_batch("b1", "phase1", ["x#0"])
    again = Ledger(tmp_path / "s.sqlite3", key)
    assert again.states() == {"x": "written", "y": "failed"}
    assert again.get("y")["reason"] == "boom" and again.get("x")["cost_usd"] == 0.5
    assert again.batches("in_progress")[0]["custom_ids"] == ["x#0"]
    assert Ledger(tmp_path / "s.sqlite3", run_key({"a": 2})).states() == {}


def test_retry_after_parsing():
    assert retry_after_seconds({"retry-after": "7"}) == 7
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({}) == 5.0
    assert retry_after_seconds({"retry-after": "99999"}) == 300


def test_limiter_pauses_all_workers_on_429():
    clock = [0.0]
    slept = []
    lim = RateLimiter(
        rate=0,
        clock=lambda: clock[0],
        sleep=lambda s: (slept.append(s), clock.__setitem__(0, clock[0] + s)),
    )

    def handler(request):
        return httpx2.Response(429, headers={"retry-after": "3"}, json={})

    client = limited_httpx2_client(lim, inner=httpx2.MockTransport(handler))
    assert client.get("https://x.test/").status_code == 429
    assert lim.pauses == 1 and lim.paused_for == 3
    lim.acquire()  # a second worker waits out the shared pause
    assert slept == [3]


def test_token_bucket_rate():
    clock = [0.0]
    lim = RateLimiter(
        rate=10, burst=2, clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s)
    )
    for _ in range(12):
        lim.acquire()
    assert clock[0] == pytest.approx(1.0, abs=0.01)  # 2 burst + 10 at 10/s
    assert isinstance(
        LimitedTransport(httpx2.MockTransport(lambda r: httpx2.Response(200)), lim),
        LimitedTransport,
    )


def test_every_429_counts_as_a_pause_even_inside_a_longer_one():
    """Two workers hit 429s (retry-after 3 then 2) within one second: two pauses, and the
    shared pause keeps the later end (this count was timing-dependent before)."""
    clock = [0.0]
    lim = RateLimiter(rate=0, clock=lambda: clock[0], sleep=lambda s: None)
    lim.pause(3)
    clock[0] = 0.5
    lim.pause(2)
    assert lim.pauses == 2 and lim.paused_for == 2.5
