"""kill -9 a backfill subprocess at several points, resume, and count the scores."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _env(home: Path, server: FakeJudgeServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LANGFUSE_"))}
    env.update(SCORER_HOME=str(home), ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url)
    return env


def _cmd(root: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scorer.cli.backfill",
        "--projects-root",
        str(root),
        "--concurrency",
        "3",
        "--json",
        "--no-progress",
    ]


def _written(home: Path) -> int:
    db = home / "scores.sqlite3"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=1) as conn:
            return conn.execute(
                "SELECT COUNT(*) FROM backfill_sessions WHERE state = 'written'"
            ).fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def _values(home: Path) -> dict[tuple[str, str], float]:
    with sqlite3.connect(home / "scores.sqlite3") as conn:
        return {(s, n): v for s, n, v in conn.execute("SELECT session_id, name, value FROM scores")}


def test_kill_9_and_resume_gives_exactly_one_set_per_session(tmp_path):
    root = tmp_path / "projects"
    ids = make_projects(root, 30)
    killed_home, clean_home = tmp_path / "killed", tmp_path / "clean"
    with FakeJudgeServer(latency=0.04) as server:
        env = _env(killed_home, server)
        kills = 0
        for threshold in (1, 8, 16, 24):
            proc = subprocess.Popen(
                _cmd(root), env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            deadline = time.monotonic() + 30
            while (
                _written(killed_home) < threshold
                and proc.poll() is None
                and time.monotonic() < deadline
            ):
                time.sleep(0.005)
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
        assert kills >= 3
        final = subprocess.run(
            _cmd(root), env=env, cwd=REPO, capture_output=True, text=True, timeout=60
        )
        assert final.returncode == 0, final.stderr
        summary = json.loads(final.stdout.strip().splitlines()[-1])
        assert summary["failed"] == 0
        clean = subprocess.run(
            _cmd(root),
            env=_env(clean_home, server),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert clean.returncode == 0, clean.stderr
    counts = score_counts(killed_home / "scores.sqlite3")
    assert set(counts) == set(ids) and set(counts.values()) == {7}
    with sqlite3.connect(killed_home / "scores.sqlite3") as conn:
        runs = dict(
            conn.execute("SELECT session_id, COUNT(*) FROM runs GROUP BY session_id").fetchall()
        )
        states = {s for (s,) in conn.execute("SELECT state FROM backfill_sessions")}
    assert set(runs.values()) == {1} and states == {"written"}
    assert _values(killed_home) == _values(clean_home)  # interrupted runs agree with a clean one
