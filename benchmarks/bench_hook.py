"""How long a Claude Code session waits for session-scorer's hook when it ends.

Usage:
    .venv/bin/python benchmarks/bench_hook.py [--runs 10]

Runs the command the plugin's hooks.json registers (`sh plugin/hooks/scorer.sh hook EVENT`),
with a real hook payload on stdin and stdout/stderr captured, as Claude Code waits for
them. Measured per run, in fresh processes, interleaved with a baseline process that
only starts Python (`python -c pass`) on the same loaded machine:

- SessionEnd: the hook reads the payload and detaches the scoring worker (the work the
  worker then does is not waited for and not timed here);
- Stop without `SCORER_HOOK_EVENTS=…Stop` (fires after every turn): refused by the
  shell script before any Python starts;
- the same SessionEnd through the `scorer` umbrella app (`scorer.cli.main`), which is
  what the hook would cost without its dispatch in `scorer.cli.entry`.

Goal (issue 27): the hook returns within 1 s. Figures: median and max wall seconds.
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

from _common import REPO, load_note, median, row, shared_data, verdict

GOAL = 1.0
SCRIPT = REPO / "plugin" / "hooks" / "scorer.sh"


def _wall(command: list[str], body: bytes, env: dict[str, str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, input=body, capture_output=True, env=env, timeout=60)
    wall = time.perf_counter() - began
    if done.returncode != 0 or done.stdout or done.stderr:
        raise RuntimeError(f"{command}: {done.returncode} {done.stdout!r} {done.stderr!r}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    transcript = shared_data() / "claude-code-projects/-home-USER-projects-spotter/tool_heavy.jsonl"
    bin_dir = Path(sys.executable).parent
    with tempfile.TemporaryDirectory(prefix="bench-hook-") as tmp:
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("ANTHROPIC_", "LANGFUSE_", "SCORER_"))
        }
        env.update(
            SCORER_HOME=str(Path(tmp) / "home"),
            PATH=f"{bin_dir}:/usr/bin:/bin",
            CLAUDE_PLUGIN_ROOT=str(REPO / "plugin"),
            SCORER_HOOK_JUDGE="heuristic",
        )
        end = {"session_id": "bench", "transcript_path": str(transcript), "cwd": tmp,
               "hook_event_name": "SessionEnd", "reason": "other"}  # fmt: skip
        stop = {**end, "hook_event_name": "Stop", "stop_hook_active": False}
        cases = {
            "SessionEnd: payload read, worker detached": (
                ["sh", str(SCRIPT), "hook", "SessionEnd"], end),
            "Stop (not a trigger): refused in sh": (["sh", str(SCRIPT), "hook", "Stop"], stop),
            "SessionEnd via the umbrella app (no dispatch)": (
                [sys.executable, "-c", "import sys; sys.argv[0] = 'scorer'; "
                 "from scorer.cli.main import main; main()", "hook", "--event", "SessionEnd"],
                end),
            "baseline: python -c pass": ([sys.executable, "-c", "pass"], end),
        }  # fmt: skip
        walls: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (command, body) in cases.items():
                walls[name].append(_wall(command, json.dumps(body).encode(), env))
        time.sleep(3)  # let the last detached workers finish before the dir goes
    print(f"hook return time, {args.runs} runs each ({load_note()})")
    for name, values in walls.items():
        figure = f"{median(values):.3f} / {max(values):.3f} s"
        compared = name.startswith(("baseline", "SessionEnd via"))  # for comparison only
        goal = "" if compared else f"≤ {GOAL:.1f} s"
        ok = "" if not goal else verdict(max(values), GOAL)
        print(row(name + " (median / max)", figure, goal, ok))


if __name__ == "__main__":
    main()
