"""Langfuse discovery: requests per window, against a fake v2 observations route (respx).

Usage:
    .venv/bin/python benchmarks/bench_discovery.py

Cases, all over a 365-day window, run through the real `discover_langfuse` and the
Langfuse SDK (only HTTP is faked):
- sparse: 12 sessions (5 root observations each) at seeded random times — the goal;
- clustered: the same 12 sessions inside one week;
- dense: 12 sessions plus one with 2,500 root observations on a single day, so pages
  are full and the window must split or page (no goal: it shows the cost stays
  proportional to observations).
Goal (issue 13): ≤ 20 requests for 365 days holding 12 sessions. Each case also checks
that every session was found.
"""

from __future__ import annotations

import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, row, verdict
from _fakes import FakeObservations

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
START = NOW - timedelta(days=365)
GOAL = 20


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def root(oid: str, session: str, at: datetime) -> dict[str, Any]:
    return {
        "id": oid,
        "traceId": f"t-{oid}",
        "sessionId": session,
        "startTime": _iso(at),
        "endTime": _iso(at + timedelta(seconds=30)),
        "type": "SPAN",
        "projectId": "bench",
        "name": "claude-code turn",
        "environment": "default",
        "isRootObservation": True,
    }


def sessions(starts: list[datetime], per_session: int = 5) -> list[dict[str, Any]]:
    return [
        root(f"s{i}-o{j}", f"s{i}", at + timedelta(minutes=3 * j))
        for i, at in enumerate(starts)
        for j in range(per_session)
    ]


def world(case: str) -> tuple[list[dict[str, Any]], int]:
    """The observations of a case and how many sessions discovery must find."""
    rng = random.Random(13)
    if case == "sparse":
        span = (NOW - START).total_seconds() - 86400
        return sessions([START + timedelta(seconds=rng.uniform(0, span)) for _ in range(12)]), 12
    week = NOW - timedelta(days=40)
    starts = [week + timedelta(hours=rng.uniform(0, 24 * 7)) for _ in range(12)]
    if case == "clustered":
        return sessions(starts), 12
    busy = NOW - timedelta(days=100)
    heavy = [root(f"big-o{j}", "big", busy + timedelta(seconds=20 * j)) for j in range(2500)]
    return sessions(starts) + heavy, 13


def run(case: str) -> tuple[int, float, int, int]:
    from scorer.jobs.discovery import discover_langfuse

    observations, expected = world(case)
    with FakeObservations(observations) as fake:
        began = time.perf_counter()
        found = discover_langfuse(fake.api(), START, NOW, now=NOW)
        wall = time.perf_counter() - began
    assert len(found.sessions) == expected, (case, len(found.sessions))
    assert found.observations == len(observations), (case, found.observations)
    return fake.requests, wall, len(found.sessions), len(observations)


def main() -> None:
    print("== Langfuse discovery over a 365-day window (fake v2 observations)")
    lines = []
    for case in ("sparse", "clustered", "dense"):
        requests, wall, found, n_obs = run(case)
        print(
            f"  {case}: {requests} requests, {found} sessions / {n_obs} root observations "
            f"found, {wall:.2f}s"
        )
        label = f"discovery requests, 365 days, {case}"
        if case == "dense":
            lines.append(row(label, str(requests), "(no goal)"))
        else:
            lines.append(row(label, str(requests), f"≤ {GOAL}", verdict(requests, GOAL)))
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
