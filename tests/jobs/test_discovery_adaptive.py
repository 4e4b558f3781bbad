"""Langfuse discovery costs requests per observation page, not per day.

Through the respx `FakeLangfuse` (real SDK, real `LangfuseClient`): 12 sessions spread
over 365 days, a dense day that fills pages, progress reports and the CLI's status line.
"""

from __future__ import annotations

import io
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from rich.console import Console

from scorer.cli.backfill import discovery_status
from scorer.errors import ConfigError
from scorer.jobs import discovery
from scorer.jobs.discovery import DiscoveryProgress, discover_langfuse, watch_discovery
from tests.langfuse.fake_server import FakeLangfuse

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
YEAR_AGO = NOW - timedelta(days=365)


def _iso(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def root(oid: str, session: str, at: datetime) -> dict:
    return {
        "id": oid,
        "traceId": f"t-{oid}",
        "sessionId": session,
        "projectId": "proj-scorer-test",
        "startTime": _iso(at),
        "endTime": _iso(at + timedelta(seconds=30)),
        "type": "SPAN",
        "name": "turn",
        "environment": "default",
        "isRootObservation": True,
    }


def spread_sessions(n: int = 12, turns: int = 4, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    starts = [YEAR_AGO + timedelta(days=rng.uniform(0, 360)) for _ in range(n)]
    return [
        root(f"s{i}-{j}", f"s{i}", at + timedelta(minutes=2 * j))
        for i, at in enumerate(starts)
        for j in range(turns)
    ]


def discovery_requests(fake: FakeLangfuse) -> int:
    return sum("filter" in r.url.params for r in fake.observation_requests)


def test_twelve_sessions_in_a_year_take_at_most_20_requests():
    obs = spread_sessions()
    with FakeLangfuse(obs) as fake:
        found = discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
        requests = discovery_requests(fake)
    assert sorted(r.session_id for r in found.sessions) == sorted(f"s{i}" for i in range(12))
    assert found.observations == len(obs) and sum(len(r.trace_ids) for r in found.sessions) == 48
    assert requests == found.pages <= 20  # the old daily sub-windows took 365


def test_full_pages_split_the_window_and_nothing_is_lost(monkeypatch):
    monkeypatch.setattr(discovery, "PAGE_LIMIT", 10)
    busy = NOW - timedelta(days=30)
    dense = [root(f"d-{j}", f"d{j % 5}", busy + timedelta(minutes=7 * j)) for j in range(95)]
    obs = spread_sessions(n=3) + dense
    with FakeLangfuse(obs) as fake:
        found = discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
        requests = discovery_requests(fake)
        spans = [
            [c["value"] for c in json.loads(r.url.params["filter"])[1:3]]
            for r in fake.observation_requests
        ]
    assert found.observations == len(obs)  # each observation once, none missed
    assert {r.session_id for r in found.sessions} == {"s0", "s1", "s2"} | {
        f"d{k}" for k in range(5)
    }
    # Splitting, not paging through one huge window: some requests cover under a day.
    short = [hi for lo, hi in spans if _dt(hi) - _dt(lo) < timedelta(days=1)]
    assert short
    # Cost follows observations: ~10 pages of data plus the growth through empty months.
    assert requests <= 60


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_progress_reports_sessions_and_reach_then_done():
    seen: list[DiscoveryProgress] = []
    with FakeLangfuse(spread_sessions()) as fake:
        found = discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW, progress=seen.append)
    assert len(seen) == found.pages + 1  # after every request, then once when done
    reached = [p.reached for p in seen]
    assert reached == sorted(reached) and reached[0] > YEAR_AGO
    assert [p.done for p in seen] == [False] * found.pages + [True]
    last = seen[-1]
    assert (last.sessions, last.requests, last.fraction) == (12, found.pages, 1.0)
    assert [p.sessions for p in seen] == sorted(p.sessions for p in seen)


def test_watch_discovery_reaches_callers_that_pass_no_callback():
    seen: list[DiscoveryProgress] = []
    with FakeLangfuse(spread_sessions(n=2)) as fake, watch_discovery(seen.append):
        discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
    assert seen and seen[-1].done and seen[-1].sessions == 2
    with FakeLangfuse(spread_sessions(n=2)) as fake:
        discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
    assert len([p for p in seen if p.done]) == 1  # the listener ended with its block


def test_empty_window_is_a_config_error():
    with FakeLangfuse([]) as fake, pytest.raises(ConfigError, match="empty window"):
        discover_langfuse(fake.client(), NOW, NOW, now=NOW)


def _console(terminal: bool) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    return Console(file=buf, force_terminal=terminal, width=200), buf


def test_cli_status_shows_progress_on_a_terminal_and_stops_when_done():
    console, buf = _console(terminal=True)
    with FakeLangfuse(spread_sessions()) as fake, discovery_status(console, enabled=True):
        discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
        # Discovery said done: the status is gone, so the progress bar may start now
        # (rich raises LiveError for a second live display).
        with console.status("scoring"):
            pass
    assert "12 found" in buf.getvalue() and "requests" in buf.getvalue()


def test_cli_status_prints_nothing_on_a_pipe_or_when_disabled():
    for terminal, enabled in ((False, True), (True, False)):
        console, buf = _console(terminal)
        with FakeLangfuse(spread_sessions()) as fake, discovery_status(console, enabled=enabled):
            discover_langfuse(fake.client(), YEAR_AGO, NOW, now=NOW)
        assert buf.getvalue() == ""
