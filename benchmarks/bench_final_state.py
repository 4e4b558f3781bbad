"""How long reading a session's final state takes (`scorer.live.final_state`).

Usage:
    .venv/bin/python benchmarks/bench_final_state.py [--runs 15]

Builds two real git repositories in a temp dir, each with a Claude Code transcript that
worked in it (commits at controlled times, as the tests do):

- small: a README, one commit in the session, one change left uncommitted;
- large: 5,000 tracked files, 500 of them changed by the session's commits, 2,000
  untracked files, four deliverables named by the task.

Times `add_final_state` (every git command and file read it makes) per run, interleaved
with the baseline measured in the same run on the same loaded machine: starting
`git --version` as many times as the read runs git commands (the floor of process
start-up the read cannot go under).

Goal: the small repository's median within 0.25 s, a quarter of the hook's 1 s budget
from exit to stored score with the heuristic judge (issue 32 item 7).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import load_note, median, row, verdict

GOAL = 0.25


def _small(root: Path) -> tuple[Path, str]:
    from tests.live.workspace_helpers import START, commit, make_repo

    repo = make_repo(root / "small")
    commit(repo, {"app.py": "print('hi')\n"}, "add app", START + timedelta(minutes=5))
    (repo / "app.py").write_text("print('hello')\n")
    return repo, "Write app.py and out/report.md."


def _large(root: Path) -> tuple[Path, str]:
    from tests.live.workspace_helpers import START, commit, make_repo

    repo = make_repo(root / "large")
    files = {f"pkg{i % 50}/mod_{i:05d}.py": f"x = {i}\n" * 20 for i in range(5000)}
    commit(repo, files, "the project", START - timedelta(minutes=30))
    changed = {f"pkg{i % 50}/mod_{i:05d}.py": f"x = {i + 1}\n" * 25 for i in range(0, 5000, 10)}
    commit(repo, changed, "the session's work", START + timedelta(minutes=5))
    for i in range(2000):
        (repo / f"scratch_{i:05d}.txt").write_text("u\n")
    return repo, "Write pkg0/mod_00000.py, pkg1/mod_00001.py, out/report.md and data/results.csv."


def _read_once(path: Path, count: list[int]) -> float:
    import scorer.live.gitread as gitread
    from scorer.live.final_state import FinalStateOptions, add_final_state
    from scorer.sources import resolve_file

    session = resolve_file(str(path)).load()
    real = gitread.run_git

    def counted(*args, **kw):  # type: ignore[no-untyped-def]
        count.append(1)
        return real(*args, **kw)

    gitread.run_git = counted
    try:
        began = time.perf_counter()
        out = add_final_state(session, FinalStateOptions())
        wall = time.perf_counter() - began
    finally:
        gitread.run_git = real
    assert out.extra["final_state"]["read"], out.extra["final_state"]
    return wall


def _baseline(n: int) -> float:
    began = time.perf_counter()
    for _ in range(n):
        subprocess.run(["git", "--version"], capture_output=True, check=True)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from tests.live.workspace_helpers import transcript

    with tempfile.TemporaryDirectory(prefix="bench-final-state-") as tmp:
        root = Path(tmp)
        print(f"final state read ({load_note()}):")
        for name, build in (("small", _small), ("large", _large)):
            repo, task = build(root)
            path = transcript(root / "projects" / name / "s.jsonl", cwd=repo, task=task)
            reads, floors, commands = [], [], []
            for _ in range(args.runs):
                count: list[int] = []
                reads.append(_read_once(path, count))
                commands.append(len(count))
                floors.append(_baseline(len(count)))
            goal = f"{GOAL:.2f} s" if name == "small" else "-"
            ok = verdict(median(reads), GOAL) if name == "small" else ""
            print(row(f"{name}: add_final_state median ({commands[0]} git commands)",
                      f"{median(reads):.3f} s", goal, ok))  # fmt: skip
            print(row(f"{name}: max", f"{max(reads):.3f} s", "-"))
            print(
                row(
                    f"{name}: baseline, {commands[0]} x git --version",
                    f"{median(floors):.3f} s",
                    "-",
                )
            )


if __name__ == "__main__":
    main()
