"""Backfill of big sessions with prep in worker processes vs in the judge threads.

Usage:
    .venv/bin/python benchmarks/bench_prep_pool.py [--sessions 16] [--repeats 3]

N copies (fresh ids) of the real 2.7 MB transcript, one judge call each (chunk budget
200k), `score-backfill --judge llm --concurrency 16` against the loopback fake with 1 s
latency: ideal = N × 1 s / 16. Each repeat runs the same command twice, back to back:
`SCORER_PREP_PROCESSES=0` (load and prepare in the judge threads, ~60 ms of GIL each)
and the default (worker processes from `--concurrency 4` on: one per core). The
figure is the median of the paired wall ratios (pool ÷ threads), below 1 when the pool
helps; the start-up floor (same command, empty root) is printed for reference.
Issue 13: "CPU-heavy prep off the event loop's critical path (a process pool when K is
large)".
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, big_session, load_note, median, row
from _fakes import FakeMessagesServer
from bench_backfill import make_sessions, run_once

K = 16
LATENCY = 1.0
BUDGET = 200_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n = args.sessions
    pairs = []
    with tempfile.TemporaryDirectory(prefix="bench-pool-") as tmp, FakeMessagesServer() as srv:
        root = Path(tmp) / "big"
        make_sessions(root, big_session(), n)
        make_sessions(Path(tmp) / "empty", big_session(), 0)
        floor = run_once(srv, Path(tmp) / "empty", K, 0.0, None)["wall"]
        for _ in range(args.repeats):
            threads = run_once(srv, root, K, LATENCY, BUDGET, {"SCORER_PREP_PROCESSES": "0"})
            pool = run_once(srv, root, K, LATENCY, BUDGET, {})
            for res in (threads, pool):
                if res["scored"] != n:
                    sys.exit(f"only {res['scored']}/{n} sessions scored")
            pairs.append((threads, pool))
            print(
                f"  threads: wall {threads['wall']:.2f}s; pool: wall {pool['wall']:.2f}s "
                f"(ideal {pool['ideal']:.2f}s, floor {floor:.2f}s)",
                flush=True,
            )
    print(f"== big-session backfill, N={n}, K={K}, {LATENCY:g}s — {load_note()}")
    walls_t = [t["wall"] for t, _ in pairs]
    walls_p = [p["wall"] for _, p in pairs]
    ideal = pairs[0][1]["ideal"]
    print(row("wall ÷ ideal, prep in threads", f"{median(walls_t) / ideal:.2f}×", "(info)"))
    print(
        row("wall ÷ ideal, prep in worker processes", f"{median(walls_p) / ideal:.2f}×", "(info)")
    )
    ratio = median([p["wall"] / t["wall"] for t, p in pairs])
    print(row("pool ÷ threads, paired wall", f"{ratio:.2f}×", "< 1 helps"))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
