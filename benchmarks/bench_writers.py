"""Concurrent `score-backfill` processes on one store: judge calls per session.

Usage:
    .venv/bin/python benchmarks/bench_writers.py [--sessions 24] [--quick]

P real `score-backfill --judge llm` processes (P = 1, 2, 3, 5) are started at once over
the same N local sessions and one store (a fresh SCORER_HOME per P), against a loopback
fake Messages API that sleeps `latency` per call. One writer per session across
processes (issue 33 item 1) means the API answers N judge calls whatever P is: each
session is judged, and paid for, once. The baseline, measured in the same run, is P = 1;
before the session leases (main at ea8590b) each process judged every session: P × N
calls (measured there: 24 calls for 12 sessions with two processes). Also printed: the slowest process's wall beside the
baseline's, and what the processes reported (scored here, skipped as already scored or
scored meanwhile by another, left to another that was still scoring them).

Goal: judge calls ÷ sessions = 1.00 for every P. `--quick` uses N = 12 and P ≤ 3.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, SPOTTER, load_note, row, shared_data, verdict
from _fakes import FakeMessagesServer
from bench_backfill import ONE_CHUNK, make_sessions

CLI = "from scorer.cli.backfill import main; main()"
LATENCY = 0.3
"""Seconds each judge call takes: long enough for the processes' runs to overlap."""


def run_together(server: FakeMessagesServer, root: Path, processes: int) -> dict[str, float]:
    """`processes` backfills started at once on one fresh store; what they and the API did."""
    server.reset(LATENCY)
    with tempfile.TemporaryDirectory(prefix="bench-writers-") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "SCORER_"))}
        env.update(SCORER_HOME=home, ANTHROPIC_API_KEY="sk-ant-bench")
        env.update(ANTHROPIC_BASE_URL=server.url, SCORER_PREP_PROCESSES="0")
        cmd = [sys.executable, "-c", CLI, "--projects-root", str(root), "--judge", "llm"]
        cmd += ["--concurrency", "4", "--json", "--no-progress", "--from", "2000-01-01"]
        began = time.perf_counter()
        procs = [
            subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(processes)
        ]
        outputs = [p.communicate() for p in procs]
        wall = time.perf_counter() - began
    summaries = []
    for proc, (out, err) in zip(procs, outputs, strict=True):
        if proc.returncode != 0:
            sys.exit(f"a backfill exited {proc.returncode}: {err.decode()[-2000:]}")
        summaries.append(json.loads(out.decode().strip().splitlines()[-1]))
    return {
        "calls": server.calls,
        "wall": wall,
        **{k: sum(s[k] for s in summaries) for k in ("scored", "skipped", "busy", "failed")},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=24)
    parser.add_argument("--quick", action="store_true", help="N = 12, P up to 3")
    args = parser.parse_args()
    n = 12 if args.quick else args.sessions
    counts = (1, 2, 3) if args.quick else (1, 2, 3, 5)
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench-writers-") as tmp, FakeMessagesServer() as srv:
        root = Path(tmp) / "sessions"
        make_sessions(root, shared_data() / SPOTTER / ONE_CHUNK, n)
        base_wall = 0.0
        for p in counts:
            res = run_together(srv, root, p)
            base_wall = base_wall or res["wall"]
            print(
                f"  P={p}: {res['calls']:.0f} judge calls for {n} sessions, wall {res['wall']:.2f}s;"
                f" scored {res['scored']:.0f}, skipped {res['skipped']:.0f}, left to another"
                f" {res['busy']:.0f}, failed {res['failed']:.0f}",
                flush=True,
            )
            ratio = res["calls"] / n
            label = f"judge calls ÷ sessions, P={p} at once " + (
                "(baseline)" if p == 1 else f"(main at ea8590b: {p:.2f})"
            )
            lines.append(row(label, f"{ratio:.2f}", "= 1.00", verdict(ratio, 1.0)))
            lines.append(
                row(
                    "  slowest process's wall ÷ baseline's",
                    f"{res['wall'] / base_wall:.2f}×",
                    "(info)",
                )
            )
    print(f"== concurrent backfills on one store, N={n}, latency {LATENCY}s — {load_note()}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
