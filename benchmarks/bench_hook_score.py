"""From a Claude Code session's end to its score in the store, through the plugin's hook.

Usage:
    .venv/bin/python benchmarks/bench_hook_score.py [--runs 10]

Each run starts the command the plugin's hooks.json registers for SessionEnd
(`sh plugin/hooks/scorer.sh hook SessionEnd`) with a real hook payload for a fresh session
id (the real 6-tool-call transcript tool_heavy.jsonl), the moment Claude Code would exit,
and polls the store until the session's card is there. Two judges:

- the heuristic judge (`SCORER_HOOK_JUDGE=heuristic`);
- the API judge (`SCORER_HOOK_JUDGE=llm`) against a loopback Messages API that answers at
  once (`_fakes.FakeMessagesServer`), so the figure is the scorer's own time.

Baselines, measured in the same run and interleaved with it: a Python start
(`python -c pass`) and `python -c "import anthropic"`, what every API-judged session paid
before the hook's worker sent the judge's request without the SDK.

On a shared machine the wall times follow the load (printed with them), so the worker's
CPU time is measured too: the same worker (`python -m scorer.cli.hook_worker`) run to the
end in the foreground, its user + system seconds, next to those of the SDK's import.

Goals (issue 32): p50 ≤ 2 s with the API judge, ≤ 1 s with the heuristic.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, SPOTTER, load_note, row, shared_data, verdict
from _fakes import FakeMessagesServer

SCRIPT = REPO / "plugin" / "hooks" / "scorer.sh"
GOALS = {"heuristic": 1.0, "llm": 2.0}
POLL = 0.01


def stored(store: Path, session_id: str) -> bool:
    try:
        with sqlite3.connect(store, timeout=1) as db:
            return bool(
                db.execute("SELECT 1 FROM runs WHERE session_id = ?", (session_id,)).fetchone()
            )
    except sqlite3.OperationalError:  # not created yet, or busy for a moment
        return False


def exit_to_stored(env: dict[str, str], transcript: Path, timeout: float = 120.0) -> float:
    """Seconds from starting the SessionEnd hook to the session's card in the store."""
    session_id = str(uuid.uuid4())
    body = {"session_id": session_id, "transcript_path": str(transcript), "cwd": str(REPO),
            "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"}  # fmt: skip
    store = Path(env["SCORER_HOME"]) / "scores.sqlite3"
    began = time.perf_counter()
    done = subprocess.run(["sh", str(SCRIPT), "hook", "SessionEnd"], input=json.dumps(body).encode(),
                          capture_output=True, env=env, timeout=60)  # fmt: skip
    if done.returncode or done.stdout or done.stderr:
        raise RuntimeError(f"hook: {done.returncode} {done.stdout!r} {done.stderr!r}")
    while not stored(store, session_id):
        if time.perf_counter() - began > timeout:
            log = Path(env["SCORER_HOME"]) / "logs" / "hook.log"
            raise RuntimeError(f"no card after {timeout} s:\n{log.read_text()[-2000:]}")
        time.sleep(POLL)
    return time.perf_counter() - began


def wall(command: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - began


def cpu(command: list[str], env: dict[str, str] | None = None) -> float:
    """User + system CPU seconds of a command run to the end (load does not change it)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(command, check=True, capture_output=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def worker_cpu(env: dict[str, str], transcript: Path) -> float:
    """The worker's CPU seconds for one fresh session, run in the foreground."""
    session = str(uuid.uuid4())
    argv = ["--event", "SessionEnd", "--session-id", session, "--transcript", str(transcript)]
    return cpu([sys.executable, "-m", "scorer.cli.hook_worker", *argv], env)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args()
    transcript = shared_data() / SPOTTER / "tool_heavy.jsonl"
    base = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ANTHROPIC_", "LANGFUSE_", "SCORER_"))
    }
    base.update(
        PATH=f"{Path(sys.executable).parent}:/usr/bin:/bin", CLAUDE_PLUGIN_ROOT=str(REPO / "plugin")
    )
    names = ("heuristic", "llm", "pass", "anthropic", "cpu heuristic", "cpu llm", "cpu anthropic")
    figures: dict[str, list[float]] = {name: [] for name in names}
    with (
        tempfile.TemporaryDirectory(prefix="bench-hook-score-") as tmp,
        FakeMessagesServer() as api,
    ):
        envs = {
            "heuristic": {**base, "SCORER_HOME": f"{tmp}/h", "SCORER_HOOK_JUDGE": "heuristic"},
            "llm": {**base, "SCORER_HOME": f"{tmp}/l", "SCORER_HOOK_JUDGE": "llm",
                    "ANTHROPIC_API_KEY": "sk-ant-bench", "ANTHROPIC_BASE_URL": api.url},
        }  # fmt: skip
        for env in envs.values():  # a first session creates the store: not timed
            exit_to_stored(env, transcript)
        for _ in range(args.runs):
            for name, env in envs.items():
                figures[name].append(exit_to_stored(env, transcript))
            figures["pass"].append(wall([sys.executable, "-c", "pass"]))
            figures["anthropic"].append(wall([sys.executable, "-c", "import anthropic"]))
            for name, env in envs.items():
                figures[f"cpu {name}"].append(worker_cpu(env, transcript))
            figures["cpu anthropic"].append(cpu([sys.executable, "-c", "import anthropic"]))
        calls = api.calls
    print(f"exit to stored score, {args.runs} runs each ({load_note()}); {calls} judge calls")
    for name, label in (("heuristic", "heuristic judge"), ("llm", "API judge (loopback)")):
        p50, goal = statistics.median(figures[name]), GOALS[name]
        figure = f"{p50:.2f} / {max(figures[name]):.2f} s"
        print(row(f"{label} (p50 / max)", figure, f"p50 ≤ {goal:.1f} s", verdict(p50, goal)))
    for name, label in BASELINES:
        values = figures[name]
        figure = f"{statistics.median(values):.2f} / {max(values):.2f} s"
        print(row(f"{label} (p50 / max)", figure, ""))


BASELINES = (
    ("pass", "baseline: python -c pass"),
    ("anthropic", "baseline: python -c 'import anthropic'"),
    ("cpu heuristic", "worker CPU, heuristic judge"),
    ("cpu llm", "worker CPU, API judge"),
    ("cpu anthropic", "baseline CPU: python -c 'import anthropic'"),
)
"""Figures printed for comparison, without a goal."""


if __name__ == "__main__":
    main()
