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


def run(
    module: str, *argv: str, home, keep_anthropic: bool = False
) -> subprocess.CompletedProcess[str]:
    dropped = ("LANGFUSE_",) if keep_anthropic else ("LANGFUSE_", "ANTHROPIC_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
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


@pytest.mark.parametrize("judge", ["heuristic", "llm"])
def test_a_backfill_leaves_its_results_in_the_store_file_itself(judge, tmp_path, monkeypatch):
    """Every SQLite connection is closed before exit (none is left to the collector the
    exit skips), so SQLite folds its WAL back in: the store file alone holds the run."""
    from tests.fakes.anthropic import FakeJudgeServer
    from tests.jobs.helpers import make_projects

    ids = make_projects(tmp_path / "projects", 3)
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        proc = run(
            "scorer.cli.backfill",
            *("--projects-root", str(tmp_path / "projects"), "--judge", judge),
            *("--concurrency", "4", "--json", "--no-progress", "--from", "2000-01-01"),
            home=tmp_path / "home",
            keep_anthropic=True,
        )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["scored"] == 3
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["scores.sqlite3"]
    alone = tmp_path / "copy.sqlite3"  # what a user who copies the store file gets
    alone.write_bytes((tmp_path / "home" / "scores.sqlite3").read_bytes())
    with sqlite3.connect(alone) as db:
        stored = {r[0] for r in db.execute("SELECT session_id FROM runs")}
        states = {r[0] for r in db.execute("SELECT state FROM backfill_sessions")}
    assert stored == set(ids) and states == {"written"}
