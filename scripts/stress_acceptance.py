"""Run the backfill acceptance test many times under a CPU burner (issue 24, the race).

    .venv/bin/python scripts/stress_acceptance.py            # 100 runs, one burner per core
    .venv/bin/python scripts/stress_acceptance.py --runs 20 --burners 4 --jobs 2

Each run is `pytest tests/jobs/test_backfill_acceptance.py -k test_50` in its own
process (50 Langfuse sessions, faults in both APIs, 6 worker threads) while burner
processes spin on every core, so the workers are pre-empted at arbitrary points. A failed
run's output (with the session's traceback from the ledger in the assertion message)
is kept in `--keep`. Prints "N passed, M failed" and exits 1 on any failure. It takes
about 25-40 minutes for 100 runs on two busy cores, so it is not part of the test suite.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEST = "tests/jobs/test_backfill_acceptance.py"


def burn(stop: multiprocessing.synchronize.Event) -> None:
    """Spin until told to stop (one per core: the test's threads lose their slices)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x = (x * 31 + 7) % 1_000_003


def one_run(index: int, keep: Path) -> tuple[int, bool, float]:
    started = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TEST, "-k", "test_50"]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    ok = done.returncode == 0
    if not ok:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"run-{index:03d}.txt").write_text(done.stdout + done.stderr)
    return index, ok, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--jobs", type=int, default=1, help="runs at once")
    parser.add_argument("--keep", type=Path, default=Path("stress-failures"))
    args = parser.parse_args()
    stop = multiprocessing.Event()
    burners = [multiprocessing.Process(target=burn, args=(stop,)) for _ in range(args.burners)]
    for p in burners:
        p.start()
    passed = failed = 0
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            for index, ok, took in pool.map(
                lambda i: one_run(i, args.keep), range(1, args.runs + 1)
            ):
                passed, failed = passed + ok, failed + (not ok)
                print(f"run {index}: {'pass' if ok else 'FAIL'} ({took:.0f} s)", flush=True)
    finally:
        stop.set()
        for p in burners:
            p.join()
    minutes = (time.monotonic() - started) / 60
    print(f"{passed} passed, {failed} failed ({args.burners} burners, {minutes:.0f} min)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
