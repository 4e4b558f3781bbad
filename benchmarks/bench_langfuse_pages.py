"""Session reads against Langfuse Cloud's 5 MB response limit (respx fake, real SDK client).

    .venv/bin/python benchmarks/bench_langfuse_pages.py [--observations 700] [--chars 20000]

Reads one session of N TOOL observations, each with `chars` characters of input and of
output (the Claude Code plugin keeps up to 20,000 per field), and prints for the
size-aware reader and for the old fixed 1,000-per-page read: requests, 413s, the largest
response and the wall time; then the same for small observations, with the bound
⌈N/1000⌉ + 1 on requests.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.errors import SourceError
from scorer.sources.langfuse_read import ReadStats, fetch_observations
from tests.langfuse.fake_server import FakeLangfuse
from tests.langfuse.test_page_sizing import tool_observations


def sized(observations: list[dict]) -> tuple[int, int, int, float]:
    with FakeLangfuse(observations) as fake:
        stats = ReadStats()
        began = time.perf_counter()
        fetch_observations(fake.client(), session_id="sized", stats=stats)
        wall = time.perf_counter() - began
        too_big = sum(r.status_code == 413 for r in fake.observation_responses)
    return stats.requests, too_big, stats.largest_response, wall


def fixed(observations: list[dict]) -> tuple[int, int, int, float]:
    """The pre-issue-12 read: 1,000 observations per page, no resizing. The largest
    response is what a server without the limit would send; Cloud answers it 413."""
    _, too_big, _, _ = _fixed(observations, 5_000_000)
    requests, _, largest, wall = _fixed(observations, 10**12)
    return requests, too_big, largest, wall


def _fixed(observations: list[dict], limit: int) -> tuple[int, int, int, float]:
    with FakeLangfuse(observations, max_response_bytes=limit) as fake:
        client = fake.client()
        began = time.perf_counter()
        with contextlib.suppress(SourceError):  # the 413, on Cloud
            client.call(
                client.api.observations.get_many,
                error=SourceError,
                what="fixed page",
                session_id="sized",
                limit=1000,
                fields="core,basic,io,metadata",
            )
        wall = time.perf_counter() - began
        sizes = [len(r.content) for r in fake.observation_responses]
        too_big = sum(r.status_code == 413 for r in fake.observation_responses)
    return len(sizes), too_big, max(sizes), wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--observations", type=int, default=700)
    parser.add_argument("--chars", type=int, default=20_000)
    args = parser.parse_args()
    big = tool_observations(args.observations, args.chars)
    print(f"{len(big)} observations x {args.chars:,} chars of input and output each")
    for name, fn in (("size-aware", sized), ("fixed 1000", fixed)):
        requests, too_big, largest, wall = fn(big)
        print(
            f"  {name:<11} requests {requests:>3}  413s {too_big}  largest response "
            f"{largest / 1e6:6.2f} MB  {wall:5.2f} s"
        )
    small = tool_observations(2_499, 20)
    requests, _, largest, wall = sized(small)
    bound = math.ceil(len(small) / 1000) + 1
    print(
        f"{len(small)} small observations: {requests} requests (bound {bound}), largest "
        f"{largest / 1e6:.2f} MB, {wall:.2f} s"
    )


if __name__ == "__main__":
    main()
