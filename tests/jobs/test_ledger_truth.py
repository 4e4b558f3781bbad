"""The backfill ledger tells the truth (issue 24 item 3).

* `scorer scores push` moves the ledger rows of what it pushed to `written`, so the next
  backfill does not push the same scores again.
* A run killed mid-call (a real `kill -9`) gives its sessions' attempts back at the next
  start; a live run's leases are left alone.
* A session left failed by the attempts cap says so, instead of repeating the last error.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from scorer import langfuse_client
from scorer.cli.main import app
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.settings import get_settings
from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse

REPO = Path(__file__).resolve().parents[2]


# --- scores push marks the ledger ------------------------------------------------------


def test_scores_push_marks_the_ledger_so_the_next_backfill_pushes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    get_settings.cache_clear()
    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    opts = BackfillOptions(
        source="claude-code", projects_root=root, judge="heuristic", push=True, concurrency=1
    )
    with FakeLangfuse() as fake:
        down = httpx.Response(500, json={"message": "down"})
        fake.fail("scores", *[down] * (langfuse_client.RETRY.attempts * 3))
        first = run_backfill(opts)
        assert (first.scored, first.incomplete) == (0, 3)
        ledger = Ledger(get_settings().store_path, first.run_key)
        assert {r["state"] for r in ledger.rows()} == {"stored"}
        assert fake.score_batches == []

        pushed = CliRunner().invoke(app, ["scores", "push"], catch_exceptions=False)
        assert pushed.exit_code == 0, pushed.output
        assert len(fake.score_batches) == 3
        rows = ledger.rows()
        assert {r["state"] for r in rows} == {"written"}
        assert {r["reason"] for r in rows} == {"pushed by scorer scores push"}

        again = run_backfill(opts)
        assert (again.scored, again.skipped, again.incomplete) == (0, 3, 0)
        assert len(fake.score_batches) == 3  # nothing pushed twice
    assert set(score_counts(get_settings().store_path).values()) == {7}
    assert set(score_counts(get_settings().store_path)) == set(ids)


def test_scores_push_leaves_other_judges_runs_alone(tmp_path):
    """Only runs of the pushed card's identity move: another model's run still waits."""
    from scorer.jobs.ledger import record_push, run_key

    path = get_settings().store_path
    params = {"judge": "llm", "model": "claude-sonnet-5-5", "rubric_version": "1"}
    other = {**params, "model": "claude-opus-5"}
    mine, theirs = Ledger(path, run_key(params), params), Ledger(path, run_key(other), other)
    for ledger in (mine, theirs):
        ledger.add([("s1", None)])
        ledger.set_state("s1", "stored", "Langfuse push failed")
    assert record_push(path, "s1", "llm", "claude-sonnet-5-5", "1") == 1
    assert mine.get("s1")["state"] == "written" and theirs.get("s1")["state"] == "stored"
    assert record_push(tmp_path / "no-ledger.sqlite3", "s1", "llm", None, "1") == 0


# --- a dead run's attempts are given back ----------------------------------------------


def _cli_env(home: Path, server: FakeJudgeServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SCORER_"))}
    env.update(SCORER_HOME=str(home), ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url)
    env.update(SCORER_PREP_PROCESSES="0")
    return env


def _rows(db: Path) -> dict[str, dict]:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            conn.row_factory = sqlite3.Row
            return {
                r["session_id"]: dict(r) for r in conn.execute("SELECT * FROM backfill_sessions")
            }
    except sqlite3.OperationalError:  # not created yet
        return {}


def _kill_mid_call(cmd: list[str], env: dict[str, str], db: Path, n: int) -> dict[str, dict]:
    """Start the backfill, SIGKILL it once all `n` sessions are being judged (leased, in
    `fetched`, their calls held by the slow fake), and return the rows it left."""
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            rows = _rows(db)
            if len(rows) == n and all(r["state"] == "fetched" for r in rows.values()):
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.communicate()[1].decode()
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    return _rows(db)


@pytest.mark.slow
def test_kill_9_mid_call_twice_then_an_outage_does_not_exhaust_attempts(tmp_path):
    """The field report: kill -9 twice plus one 529 burst used up the default 3."""
    from scorer.judge import retry

    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    home = tmp_path / "home"
    db = home / "scores.sqlite3"
    cmd = [sys.executable, "-m", "scorer.cli.backfill", "--projects-root", str(root)]
    cmd += ["--concurrency", "3", "--json", "--no-progress"]
    with FakeJudgeServer(latency=30) as server:
        env = _cli_env(home, server)
        for kill in (1, 2):
            rows = _kill_mid_call(cmd, env, db, len(ids))
            # Each kill found the attempt counted and leased (after the first kill it was
            # given back at the start, then counted again).
            assert {r["attempts"] for r in rows.values()} == {1}, (kill, rows)
            assert all(r["owner"] for r in rows.values())
        server.latency = 0
        server.faults = [529] * (retry.MAX_ATTEMPTS * len(ids))
        outage = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
        summary = json.loads(outage.stdout.strip().splitlines()[-1])
        assert summary["failed"] == 3, outage.stderr
        assert "killed run" in " ".join(summary["notes"])
        rows = _rows(db)
        assert {r["attempts"] for r in rows.values()} == {1}  # only the outage counted
        assert {r["owner"] for r in rows.values()} == {None}
        healthy = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    summary = json.loads(healthy.stdout.strip().splitlines()[-1])
    assert (summary["scored"], summary["failed"]) == (3, 0), healthy.stderr
    assert {r["attempts"] for r in _rows(db).values()} == {2}
    assert set(score_counts(db).values()) == {7}


_HOLD_A_LEASE = """
import sys, time
from pathlib import Path
from scorer.jobs.leases import my_token
print(my_token(Path(sys.argv[1])), flush=True)
time.sleep(600)
"""


def test_a_live_runs_lease_is_kept_a_dead_ones_is_given_back(tmp_path):
    path = get_settings().store_path
    ledger = Ledger(path, "k", {})
    ledger.add([("live", None), ("dead", None), ("mine", None)])
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_A_LEASE, str(path)], cwd=REPO, stdout=subprocess.PIPE
    )
    try:
        other = holder.stdout.readline().decode().strip()
        for sid in ("live", "dead", "mine"):
            ledger.bump_attempts(sid)
        db = sqlite3.connect(path)
        with db:
            db.execute("UPDATE backfill_sessions SET owner = ? WHERE session_id = 'live'", (other,))
            db.execute("UPDATE backfill_sessions SET owner = '1-gone' WHERE session_id = 'dead'")
        assert ledger.reclaim() == ["dead"]  # this process and the holder are alive
        assert {s: ledger.get(s)["attempts"] for s in ("live", "dead", "mine")} == {
            "live": 1,
            "dead": 0,
            "mine": 1,
        }
        assert "interrupted" in ledger.get("dead")["reason"]
    finally:
        holder.kill()
        holder.wait()
    assert ledger.reclaim() == ["live"]  # killed: its lock went with it
    assert ledger.get("live")["attempts"] == 0 and ledger.get("live")["owner"] is None


def test_finished_sessions_hold_no_lease(tmp_path, judge_env):
    root = tmp_path / "projects"
    make_projects(root, 2)
    with FakeJudgeServer(faults=[400]) as server:
        judge_env(server)
        summary = run_backfill(BackfillOptions(projects_root=root, judge="llm", concurrency=1))
    assert (summary.scored, summary.failed) == (1, 1)
    rows = Ledger(get_settings().store_path, summary.run_key).rows()
    assert {r["owner"] for r in rows} == {None}
    assert Ledger(get_settings().store_path, summary.run_key).reclaim() == []


# --- the attempts cap says so ----------------------------------------------------------


def test_a_healthy_rerun_after_max_attempts_1_names_the_cap(tmp_path, judge_env):
    from scorer.cli.backfill import backfill_command
    from scorer.judge import retry
    from tests.jobs.test_backfill import typer_app

    root = tmp_path / "projects"
    make_projects(root, 2)
    run = typer_app(backfill_command)
    args = ["--projects-root", str(root), "--json", "--no-progress", "--max-attempts", "1"]
    with FakeJudgeServer(faults=[529] * (retry.MAX_ATTEMPTS * 2)) as server:
        judge_env(server)
        outage = json.loads(CliRunner().invoke(run, args).stdout)
        assert outage["failed"] == 2
        assert all("529" in f["reason"] for f in outage["failures"])
        calls = server.calls
        healthy = CliRunner().invoke(run, args)  # the outage is over; the cap is not
        assert healthy.exit_code == 1 and server.calls == calls
        for failure in json.loads(healthy.stdout)["failures"]:
            reason = failure["reason"]
            assert reason.startswith("not tried again: 1 of --max-attempts 1 used")
            assert "--max-attempts 2" in reason and "last failure:" in reason and "529" in reason
        raised = CliRunner().invoke(run, [*args[:-1], "2"])
        assert json.loads(raised.stdout)["scored"] == 2 and raised.exit_code == 0
