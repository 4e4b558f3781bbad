"""`score-backfill` at the account's rate limits, against the metered fake Messages API.

Usage:
    .venv/bin/python benchmarks/bench_ratelimit.py [--scale 10] [--quick] [--no-baseline]

The fake (`tests.fakes.anthropic.FakeJudgeServer` with `limits`) meters like the real API
(`tests/fakes/ratelimits.py`): token buckets of ITPM 200k, OTPM 40k and RPM 50 that hold
one minute each and start full, `max_tokens` reserved until a reply ends, the system
prompt cached (cache reads not charged), the rate-limit headers on every reply and 429 +
`retry-after` when over. Each reply takes 2 s.

Sessions: 64 copies of real transcripts with fresh ids, of mixed sizes: 12 each of ~3k,
~4k, ~18k, ~36k and ~54k tokens, and 4 of the 2.7 MB session (two chunks: three calls).

For K in 4, 16, 64 a fresh `score-backfill --judge llm --concurrency K` process judges
them all. The ideal is what the limits allow: the buckets start full, so it is
(charged ÷ limit − 1) minutes of the binding limit, plus one reply's latency, where
charged is what the fake charged that run. Goals (issue 28): wall ≤ 1.15 × ideal with at
most 2 % of the calls answered 429, every session scored, at every K. The baseline, in the
same run: the same command with `SCORER_PACING=0` (the limiter only reacts to 429s, as
before this issue).

Before those runs a short calibration run (8 sessions) learns the account's limits, as a
user's earlier run would; every run starts from the `rate-limits.json` it left. Then
`score-backfill --dry-run --json` forecasts the wall time; goal: within 15 % of each
measured wall. Finally, at an ITPM of 30k (below the biggest sessions' 54k and 70k-token
chunks), 16 sessions from a fresh state: every one judged, none stuck.

`--scale S` runs the fake's clock S times faster: its minute lasts 60/S s and a reply 2/S s,
so a run of ~10 limit-minutes takes ~10/S real minutes. What does not scale is our own
process: start-up (~1.3 s) and the CPU of preparing sessions count S times more against
the ideal than they would at real speed, so a scaled run is a pessimistic measure; the
figures in docs/rate-limits.md say at which scale they were taken. `--quick` runs only
K = 16 (and 16 sessions at 30k); the default scale is 10.
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

sys.path.insert(0, str(REPO))

from tests.fakes.anthropic import FakeJudgeServer
from tests.fakes.ratelimits import Limits

CLI = "from scorer.cli.backfill import main; main()"
LIMITS = Limits(rpm=50, itpm=200_000, otpm=40_000)
LOW_ITPM = 30_000
LATENCY = 2.0
RATIO_GOAL, SHARE_429_GOAL, FORECAST_GOAL = 1.15, 0.02, 0.15
FASTHOOKS = "claude-code-projects/-home-USER-projects-fasthooks/sample_main_transcript.jsonl"
BIG = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"


def make_sessions(root: Path, kinds: list[tuple[Path, int]], n_each: int, big: int) -> int:
    """`n_each` sessions of each (source, copies) kind and `big` of the 2.7 MB session."""
    folder = root / "-home-bench-proj"
    folder.mkdir(parents=True)
    when = time.time() - 7200
    spot = shared_data() / SPOTTER
    plan = [kind for _ in range(n_each) for kind in kinds] + [(spot / BIG, 1)] * big
    for i, (src, copies) in enumerate(plan):
        path = make_synthetic(src, folder, copies, session_id=str(uuid.UUID(int=i + 1)))
        os.utime(path, (when, when))
    return len(plan)


def kinds() -> list[tuple[Path, int]]:
    spot, data = shared_data() / SPOTTER, shared_data()
    sub = spot / "subagent.jsonl"
    return [(spot / "tool_heavy.jsonl", 1), (data / FASTHOOKS, 1), (sub, 1), (sub, 2), (sub, 3)]


def backfill(
    server: FakeJudgeServer, root: Path, k: int, home: Path, *extra: str, **env_extra: str
) -> tuple[float, dict]:
    """One `score-backfill` process; its wall and JSON summary."""
    env = {key: v for key, v in os.environ.items() if not key.startswith(("LANGFUSE_", "SCORER_"))}
    env.update(
        SCORER_HOME=str(home), ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.url
    )
    env.update(env_extra)
    cmd = [sys.executable, "-c", CLI, "--projects-root", str(root), "--judge", "llm"]
    cmd += ["--concurrency", str(k), "--json", "--no-progress", "--from", "2000-01-01", *extra]
    wall, out = timed_run(cmd, env)
    return wall, json.loads(out)


def ideal_seconds(server: FakeJudgeServer, limits: Limits, latency: float) -> tuple[float, str]:
    """(charged ÷ limit − 1) minutes of the binding limit + one reply, and which binds."""
    a = server.account
    assert a is not None
    minutes = {
        "input tokens": a.charged_input / limits.itpm,
        "output tokens": a.charged_output / limits.otpm,
        "requests": a.admitted / limits.rpm,
    }
    binding = max(minutes, key=minutes.__getitem__)
    return max(0.0, minutes[binding] - 1) * a.period + latency, binding


def fresh_home(tmp: Path, name: str, learned: Path | None) -> Path:
    home = tmp / name
    home.mkdir()
    if learned is not None:
        shutil.copy(learned, home / "rate-limits.json")
    return home


def measure(server, root, n, k, home, latency, **env) -> dict:
    server.account.reset()
    wall, summary = backfill(server, root, k, home, **env)
    ideal, binding = ideal_seconds(server, LIMITS, latency)
    a = server.account
    calls = a.admitted + a.refused
    return {
        "wall": wall,
        "ideal": ideal,
        "ratio": wall / ideal,
        "binding": binding,
        "share429": a.refused / calls if calls else 0.0,
        "refused": a.refused,
        "calls": calls,
        "scored": summary["scored"],
        "failed": summary["failed"] + summary["unscored"] + summary["not_started"],
        "n": n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=10.0, help="fake minutes per 60/S s")
    parser.add_argument("--quick", action="store_true", help="K = 16 only, 16 at 30k")
    parser.add_argument("--no-baseline", action="store_true", help="skip SCORER_PACING=0 runs")
    args = parser.parse_args()
    scale, latency = args.scale, LATENCY / args.scale
    ks = (16,) if args.quick else (4, 16, 64)
    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="bench-ratelimit-") as tmp_name:
        tmp = Path(tmp_name)
        root, warm, low = tmp / "projects", tmp / "warm", tmp / "low"
        n = make_sessions(root, kinds(), 12, 4)
        make_sessions(warm, kinds()[:4], 2, 0)
        n_low = make_sessions(low, kinds(), 3, 1)  # 16
        with FakeJudgeServer(latency=latency, limits=LIMITS, time_scale=scale) as server:
            calibrate = fresh_home(tmp, "calibrate", None)
            backfill(server, warm, 4, calibrate)
            learned = calibrate / "rate-limits.json"
            print(f"  learned: {learned.read_text().strip()}", flush=True)
            forecasts = {}
            for k in ks:  # what a user would see before starting
                home = fresh_home(tmp, f"dry{k}", learned)
                _, dry = backfill(server, root, k, home, "--dry-run")
                forecasts[k] = dry["forecast"]["wall_seconds"]
                print(f"  forecast K={k}: {json.dumps(dry['forecast'])}", flush=True)
            for k in ks:
                res = measure(server, root, n, k, fresh_home(tmp, f"k{k}", learned), latency)
                base = None
                if not args.no_baseline:
                    home = fresh_home(tmp, f"base{k}", learned)
                    base = measure(server, root, n, k, home, latency, SCORER_PACING="0")
                print(f"  K={k}: {json.dumps(res)}\n  baseline: {json.dumps(base)}", flush=True)
                lines += k_rows(k, res, base, forecasts[k])
        with FakeJudgeServer(
            latency=latency, limits=Limits(50, LOW_ITPM, 40_000), time_scale=scale
        ) as server:
            wall, summary = backfill(server, low, 16, fresh_home(tmp, "low-home", None))
            a = server.account
            print(
                f"  30k ITPM: wall {wall:.1f}s, {a.refused} of {a.admitted + a.refused} 429",
                flush=True,
            )
            judged = summary["scored"] + summary["unscored"]
            stuck = summary["failed"] + summary["not_started"]
            lines.append(
                row(
                    "sessions judged at 30k ITPM (K=16)",
                    f"{judged}/{n_low}",
                    f"{n_low}/{n_low}",
                    verdict(n_low - judged, 0),
                )
            )
            lines.append(row("  stuck (failed or not started)", str(stuck), "0", verdict(stuck, 0)))
            lines.append(
                row(
                    "  429 share at 30k ITPM",
                    f"{a.refused / max(1, a.admitted + a.refused):.1%}",
                    "(info)",
                )
            )
    print(f"== score-backfill at the account's limits, N={n}, scale {scale:g} — {load_note()}")
    print("\n".join(lines))


def k_rows(k: int, res: dict, base: dict | None, forecast: float) -> list[str]:
    """The rows of one concurrency: ratio, 429s, scored, forecast; baseline beside them."""
    out = [
        row(
            f"wall ÷ ideal, K={k} ({res['binding']} bind)",
            f"{res['ratio']:.3f}×",
            f"≤ {RATIO_GOAL:g}×",
            verdict(res["ratio"], RATIO_GOAL),
        ),
        row(
            f"  share of calls answered 429, K={k}",
            f"{res['share429']:.1%} ({res['refused']}/{res['calls']})",
            f"≤ {SHARE_429_GOAL:.0%}",
            verdict(res["share429"], SHARE_429_GOAL),
        ),
        row(
            f"  sessions scored, K={k}",
            f"{res['scored']}/{res['n']}",
            f"{res['n']}/{res['n']}",
            verdict(res["n"] - res["scored"], 0),
        ),
    ]
    off = abs(forecast - res["wall"]) / res["wall"]
    out.append(
        row(
            f"  dry-run forecast vs wall, K={k}",
            f"{forecast:.1f}s vs {res['wall']:.1f}s ({off:.0%})",
            f"within {FORECAST_GOAL:.0%}",
            verdict(off, FORECAST_GOAL),
        )
    )
    if base is not None:
        out.append(
            row(
                f"  baseline SCORER_PACING=0, K={k}",
                f"{base['ratio']:.3f}×, {base['share429']:.0%} 429, {base['scored']}/{base['n']}",
                "(baseline)",
            )
        )
    return out


if __name__ == "__main__":
    main()
