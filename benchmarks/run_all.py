"""Run every benchmark in turn (each prints its figures next to the issue-13 goals).

Usage:
    .venv/bin/python benchmarks/run_all.py [--quick]

`--quick` passes through to the scripts that take it (fewer pairs, N = 16 backfill);
quick figures are for a smoke check, the README's come from a full run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = (
    "bench_prepare.py",
    "bench_cli.py",
    "bench_discovery.py",
    "bench_backfill.py",
    "bench_prep_pool.py",
    "bench_writers.py",
)
QUICK = {"bench_discovery.py": [], "bench_prep_pool.py": ["--repeats", "1"]}
"""What `--quick` becomes per script (default: `--quick` itself)."""


def main() -> None:
    quick = ["--quick"] if "--quick" in sys.argv[1:] else []
    failed = 0
    for script in SCRIPTS:
        args = QUICK.get(script, quick) if quick else []
        failed |= subprocess.run([sys.executable, str(HERE / script), *args]).returncode
    sys.exit(failed)


if __name__ == "__main__":
    main()
