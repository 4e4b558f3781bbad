"""`score-backfill` end to end through the CLI against a loopback fake Messages API.

Usage:
    .venv/bin/python benchmarks/bench_backfill.py [--sessions 48] [--quick]

Each run is a fresh `score-backfill --judge llm` process (ANTHROPIC_BASE_URL pointed at
the loopback fake, a dummy key, state in a temp SCORER_HOME) scoring N local sessions
copied from a real transcript with fresh ids. The fake sleeps `latency` seconds on each
`/v1/messages` call (`count_tokens` answers at once, like the issue's measurements).

The figure is process wall ÷ ideal, where ideal = judge calls × latency / K: for
1-chunk sessions that is the issue's N × latency / K; a 2-chunk session makes three
calls (two chunk notes, one final), all of which should share the K slots, so a ratio
below 1 means more than K calls were in flight. The most calls the fake held at once is
checked against K (the issue's "one global limit ... equals --concurrency"). Also
printed: the run's own `wall_seconds` (after start-up) and, measured in the same run,
the floor: the same command on one session with an instant judge, which pays the whole
fixed start-up (interpreter, CLI imports, the Anthropic SDK import, store and ledger)
and judges that one session with no latency (not an empty projects root: a run with
nothing to judge never imports the SDK). `(wall − floor) ÷ ideal` is printed beside each
ratio: how close the scheduling itself comes to the ideal once the process is up. With
`--repeats R` each case runs R times and the median ratio is reported (the machine is
shared; default 1).

Goals (issue 13): ≤ 1.25× at K = 1 and 4 with 1 s latency (2-chunk sessions included).
At K = 16 the goals are restated after start-up (issue 28: the fixed start-up, mostly the
Anthropic SDK import, is ~2 % of a run at real judge latencies): (wall − start-up) ÷ ideal
≤ 1.1 with 1 s and with 0.2 s latency, and start-up ≤ 1.3 s, where start-up is the floor
above. `--quick` uses N = 16 and skips K = 1 at 1 s with 2-chunk sessions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, SPOTTER, load_note, make_synthetic, row, shared_data, timed_run, verdict
from _fakes import FakeMessagesServer

CLI = "from scorer.cli.backfill import main; main()"
ONE_CHUNK = "tool_heavy.jsonl"  # ~3k tokens: one chunk at the default budget
TWO_CHUNK = "subagent.jsonl"  # ~18k tokens: two chunks at TWO_CHUNK_BUDGET
TWO_CHUNK_BUDGET = 14_000


def make_sessions(root: Path, src: Path, n: int) -> None:
    """`n` copies of `src` with fresh ids, modified two hours ago (not active); each file
    is named by the session id written in it, as Claude Code names its transcripts."""
    from scorer.jobs.discover_local import file_session_id

    folder = root / "-home-bench-proj"
    folder.mkdir(parents=True)
    staged = root.parent / f"{root.name}.source" / f"{file_session_id(src)}.jsonl"
    staged.parent.mkdir()  # make_synthetic renews the id of the file name, no other
    shutil.copyfile(src, staged)
    when = time.time() - 7200
    for i in range(n):
        path = make_synthetic(staged, folder, 1, session_id=str(uuid.UUID(int=i + 1)))
        os.utime(path, (when, when))


def run_once(
    server: FakeMessagesServer,
    root: Path,
    k: int,
    latency: float,
    budget: int | None,
    extra_env: dict[str, str] | None = None,
):
    """One `score-backfill` process; its wall, summary and what the fake saw."""
    server.reset(latency)
    with tempfile.TemporaryDirectory(prefix="bench-home-") as home:
        env = {k2: v for k2, v in os.environ.items() if not k2.startswith("LANGFUSE_")}
        env.update(
            SCORER_HOME=home, ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.url
        )
        if budget:
            env["SCORER_CHUNK_BUDGET"] = str(budget)
        env.update(extra_env or {})
        cmd = [sys.executable, "-c", CLI, "--projects-root", str(root), "--judge", "llm"]
        cmd += ["--concurrency", str(k), "--json", "--no-progress", "--from", "2000-01-01"]
        wall, out = timed_run(cmd, env)
    summary = json.loads(out)
    ideal = server.calls * latency / k if server.calls else float("nan")
    return {
        "wall": wall,
        "run_wall": summary["wall_seconds"],
        "ideal": ideal,
        "ratio": wall / ideal if ideal else float("nan"),
        "scored": summary["scored"],
        "calls": server.calls,
        "count_tokens": server.count_tokens_calls,
        "max_in_flight": server.max_in_flight,
    }


RESTATED_K = 16
"""The concurrency whose goals are stated after start-up (issue 28)."""
AFTER_STARTUP_GOAL = 1.1
STARTUP_GOAL = 1.3


def cases(quick: bool) -> list[tuple[str, int, float, float]]:
    """(session kind, K, latency, goal on wall ÷ ideal; 0: none) in run order. At K = 16
    the goal is on (wall − start-up) ÷ ideal instead (`AFTER_STARTUP_GOAL`)."""
    out = [("1-chunk", k, 1.0, 1.25 if k < RESTATED_K else 0.0) for k in (1, 4, 16)]
    out += [("1-chunk", k, 0.2, 0.0) for k in (1, 4, 16)]
    out += [
        ("2-chunk", k, 1.0, 1.25 if k < RESTATED_K else 0.0)
        for k in ((4, 16) if quick else (1, 4, 16))
    ]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=48)
    parser.add_argument("--quick", action="store_true", help="N = 16, fewer cases")
    parser.add_argument("--repeats", type=int, default=1, help="runs per case (median)")
    args = parser.parse_args()
    n = 16 if args.quick else args.sessions
    data = shared_data() / SPOTTER
    lines = []
    with tempfile.TemporaryDirectory(prefix="bench-backfill-") as tmp, FakeMessagesServer() as srv:
        roots = {"1-chunk": Path(tmp) / "one", "2-chunk": Path(tmp) / "two"}
        make_sessions(roots["1-chunk"], data / ONE_CHUNK, n)
        make_sessions(roots["2-chunk"], data / TWO_CHUNK, n)
        make_sessions(Path(tmp) / "single", data / ONE_CHUNK, 1)
        floor = run_once(srv, Path(tmp) / "single", 1, 0.0, None)["wall"]
        print(f"  floor: score-backfill of one session, instant judge {floor:.2f}s", flush=True)
        lines.append(
            row(
                "start-up: one session, instant judge",
                f"{floor:.2f} s",
                f"≤ {STARTUP_GOAL:g} s",
                verdict(floor, STARTUP_GOAL),
            )
        )
        for kind, k, latency, goal in cases(args.quick):
            budget = TWO_CHUNK_BUDGET if kind == "2-chunk" else None
            runs = [run_once(srv, roots[kind], k, latency, budget) for _ in range(args.repeats)]
            res = sorted(runs, key=lambda r: r["ratio"])[len(runs) // 2]
            if res["scored"] != n:  # e.g. the fake's reply no longer fits the judge's schema
                sys.exit(f"only {res['scored']}/{n} sessions scored: the figures would be wrong")
            print(
                f"  {kind} K={k:<2} latency {latency:.1f}s: wall {res['wall']:.2f}s "
                f"(in-run {res['run_wall']:.2f}s), ideal {res['ideal']:.2f}s, "
                f"{res['scored']}/{n} scored, {res['calls']} calls, "
                f"{res['count_tokens']} count_tokens, max in flight {res['max_in_flight']}",
                flush=True,
            )
            label = f"backfill wall ÷ ideal, {kind}, K={k}, {latency:.1f}s"
            restated = "(after start-up, below)" if k == RESTATED_K else "(no goal)"
            goal_text = f"≤ {goal:g}×" if goal else restated
            ok = verdict(res["ratio"], goal) if goal else ""
            if res["max_in_flight"] > k:  # the ideal assumes K slots: not comparable
                ok = "MISSED (more than K calls in flight)" if goal else ""
            lines.append(row(label, f"{res['ratio']:.2f}×", goal_text, ok))
            after = (res["wall"] - floor) / res["ideal"]
            if k == RESTATED_K:
                goal_after, ok_after = (
                    f"≤ {AFTER_STARTUP_GOAL:g}×",
                    verdict(after, AFTER_STARTUP_GOAL),
                )
            else:
                goal_after, ok_after = "(info)", ""
            lines.append(row("  (wall − start-up) ÷ ideal", f"{after:.2f}×", goal_after, ok_after))
            flight = f"max in-flight judge calls, {kind}, K={k}, {latency:.1f}s"
            most = max(r["max_in_flight"] for r in runs)
            lines.append(row(flight, str(most), f"≤ {k}", verdict(most, k)))
    print(f"== score-backfill through the CLI, N={n} — {load_note()}")
    print("\n".join(lines))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
