"""Run the backfill acceptance test many times under a CPU burner (issue 24, the race).

    .venv/bin/python scripts/stress_acceptance.py            # 100 runs, one burner per core
    .venv/bin/python scripts/stress_acceptance.py --runs 20 --burners 4
    .venv/bin/python scripts/stress_acceptance.py --minutes 90 --repo /tmp/frozen-checkout

Each run is `pytest tests/jobs/test_backfill_acceptance.py -k test_50` in its own
process (50 Langfuse sessions, faults in both APIs, 6 worker threads) while burner
processes spin on every core, so the workers are pre-empted at arbitrary points. A failed
run's output (with the session's traceback from the ledger in the assertion message)
is kept in `--keep`. Prints one line per run and "N passed, M failed" at the end (also
when stopped by `--minutes` or Ctrl-C, with how many runs were left) and exits 1 on any
failure. `--repo` stresses another checkout of the project (a frozen worktree, so that
edits to this one do not change the code under test midway); the interpreter running
this script must have the project's dependencies. 100 runs take 1.5-3 hours on two busy
cores, so it is not part of the test suite (docs/development.md).
"""

from __future__ import annotations

import argparse
import multiprocessing
import multiprocessing.synchronize
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST = "tests/jobs/test_backfill_acceptance.py"


def burn(stop: multiprocessing.synchronize.Event) -> None:
    """Spin until told to stop (one per core: the test's threads lose their slices)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def one_run(index: int, repo: Path, keep: Path) -> tuple[bool, float]:
    """One pytest process; its output is kept when it fails."""
    started = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST, "-k", "test_50"]
    done = subprocess.run(cmd, cwd=repo, capture_output=True, text=True)
    ok = done.returncode == 0
    if not ok:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"run-{index:03d}.txt").write_text(done.stdout + done.stderr)
    return ok, time.monotonic() - started


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--minutes", type=float, default=None, help="start no run after this")
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to stress")
    parser.add_argument(
        "--keep",
        type=Path,
        default=Path(tempfile.gettempdir()) / "stress-failures",
        help="where failed runs' output goes",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(args.burners)]
    for p in burners:
        p.start()
    passed = failed = 0
    started = time.monotonic()
    deadline = started + args.minutes * 60 if args.minutes is not None else None
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=args.repo, capture_output=True, text=True
    ).stdout.strip()
    print(f"stressing {args.repo} at {head or '?'}: {args.burners} burners", flush=True)
    try:
        for index in range(1, args.runs + 1):
            if deadline is not None and time.monotonic() > deadline:
                break
            ok, took = one_run(index, args.repo, args.keep)
            passed, failed = passed + ok, failed + (not ok)
            load = os.getloadavg()[0]
            print(
                f"run {index}: {'pass' if ok else 'FAIL'} ({took:.0f} s, load {load:.1f})",
                flush=True,
            )
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        stop.set()
        for p in burners:
            p.join()
    minutes = (time.monotonic() - started) / 60
    left = args.runs - passed - failed
    print(
        f"{passed} passed, {failed} failed, {left} not run "
        f"({args.burners} burners, {minutes:.0f} min; failures in {args.keep})"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
