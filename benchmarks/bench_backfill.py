"""Backfill throughput against a loopback fake judge with a fixed latency per call.

    .venv/bin/python benchmarks/bench_backfill.py [--sessions 48] [--latency 0.2]

For K = 1, 4, 16 workers it scores N small generated transcripts through the real
pipeline (ClaudeCodeSource → prepare → AnthropicJudge over HTTP → SQLite store → ledger)
and prints the wall time and its ratio to the ideal N × latency / K (target ≤ 1.25).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from jobs.helpers import FakeJudgeServer, make_projects

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.settings import get_settings


def bench(n: int, latency: float, workers: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp, FakeJudgeServer(latency=latency) as server:
        root = Path(tmp) / "projects"
        make_projects(root, n)
        os.environ.update(
            SCORER_HOME=str(Path(tmp) / "home"),
            ANTHROPIC_API_KEY="bench",
            ANTHROPIC_BASE_URL=server.url,
        )
        get_settings.cache_clear()
        opts = BackfillOptions(projects_root=root, judge="llm", concurrency=workers)
        began = time.perf_counter()
        summary = run_backfill(opts)
        return time.perf_counter() - began, summary.scored


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=48)
    parser.add_argument("--latency", type=float, default=0.2)
    args = parser.parse_args()
    bench(4, 0.0, 2)  # warm up imports, tiktoken and the prompt cache
    print(f"N={args.sessions} sessions, judge latency {args.latency:.3f}s per call")
    print(f"{'K':>3} {'wall s':>8} {'ideal s':>8} {'ratio':>6} {'scored':>6}")
    for k in (1, 4, 16):
        wall, scored = bench(args.sessions, args.latency, k)
        ideal = args.sessions * args.latency / k
        print(f"{k:>3} {wall:>8.2f} {ideal:>8.2f} {wall / ideal:>6.2f} {scored:>6}")


if __name__ == "__main__":
    main()
