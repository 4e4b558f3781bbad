"""Every console script skips the cyclic collector's walk of the heap at exit
(`scorer._gc.freeze_at_exit`), without losing output or stored results."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest

from tests.conftest import REPO

DEMO = REPO / "examples" / "demo-session.jsonl"
# An atexit handler registered before the command runs, so it runs after it returns.
PROBE = """
import atexit, gc, importlib, sys
atexit.register(lambda: sys.stderr.write(f"\\nfrozen={gc.get_freeze_count()}\\n"))
module, *argv = sys.argv[1:]
sys.argv = [module, *argv]
importlib.import_module(module).main()
"""


def run(module: str, *argv: str, home) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LANGFUSE_", "ANTHROPIC_"))}
    env["SCORER_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-c", PROBE, module, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=120,
    )


def frozen(proc: subprocess.CompletedProcess[str]) -> int:
    return int(proc.stderr.rsplit("frozen=", 1)[1].split()[0])


@pytest.mark.parametrize(
    "module",
    ["scorer.cli.session", "scorer.cli.backfill", "scorer.cli.calibrate", "scorer.cli.main"],
)
def test_every_entry_point_freezes_the_heap_before_exit(module, tmp_path):
    proc = run(module, "--help", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    assert frozen(proc) > 1000


def test_a_scored_session_is_stored_and_printed_whole_when_the_process_exits(tmp_path):
    proc = run("scorer.cli.session", str(DEMO), "--judge", "heuristic", "--json", home=tmp_path)
    assert proc.returncode == 0, proc.stderr
    card = json.loads(proc.stdout)
    assert frozen(proc) > 1000
    with sqlite3.connect(tmp_path / "scores.sqlite3") as db:
        rows = db.execute("SELECT session_id FROM runs").fetchall()
    assert rows == [(card["session_id"],)]


def test_a_failing_command_still_exits_cleanly_with_its_error(tmp_path):
    proc = run("scorer.cli.session", str(tmp_path / "missing.jsonl"), home=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert frozen(proc) > 1000
