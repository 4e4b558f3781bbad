"""A locked or broken store (issue 32 item 6): the hook logs one line, keeps the job in the
retry folder beside the store (the ledger is in the store's own file, so it cannot), and
the next hook run finishes it; a card judged before the store failed is stored as it is,
not judged (and paid for) again. The lock is a real second process holding SQLite's write
lock past the 30 s the scorer waits for it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from scorer.jobs.hook.deferred import retry_deferred
from scorer.jobs.hook.ledger import HookLedger
from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.retry import MAX_ATTEMPTS, retry_dir
from scorer.jobs.hook.worker import HookEnv, HookJob
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.conftest import require
from tests.fakes.anthropic import FakeJudgeServer
from tests.jobs.hook.helpers import (
    REAL,
    assert_quick_and_silent,
    hook_env,
    ledger,
    log_text,
    payload,
    real,
    run_hook,
    stored_runs,
    wait_for,
    wait_log,
    wait_settled,
)

TOOL_HEAVY, SUBAGENT, SAMPLE = (
    next(r for r in REAL if r.endswith(name))
    for name in ("/tool_heavy.jsonl", "/subagent.jsonl", "/sample_main_transcript.jsonl")
)
_HOLD = (
    "import sqlite3, sys\n"
    "db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)\n"
    "db.execute('BEGIN IMMEDIATE')\n"
    "print('held', flush=True)\n"
    "sys.stdin.read()\n"
)


class StoreLock:
    """Another process holding the store's write lock until `release`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.proc: subprocess.Popen[bytes] | None = None

    def hold(self) -> StoreLock:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _HOLD, str(self.path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stdout is not None and self.proc.stdout.readline() == b"held\n"
        return self

    def release(self) -> None:
        if self.proc is not None and self.proc.stdin is not None:
            self.proc.stdin.close()
            self.proc.wait(60)


def retry_files(store: Path) -> list[Path]:
    folder = retry_dir(store)
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_a_store_held_locked_is_one_log_line_and_the_next_hook_run_stores_it(tmp_path, cc_projects):
    home = tmp_path / "home"
    env = hook_env(home, SCORER_HOOK_JUDGE="heuristic")
    store = home / "scores.sqlite3"
    run_hook(payload(require(real(TOOL_HEAVY)), "first"), env)
    wait_settled(home, ["first"])
    lock = StoreLock(store).hold()
    try:
        assert_quick_and_silent(run_hook(payload(real(SUBAGENT), "locked"), env))
        wait_log(home, "locked: failed: ", timeout=180)  # after SQLite's 30 s wait
    finally:
        lock.release()
    log = log_text(home)
    assert "Traceback" not in log
    (line,) = [line for line in log.splitlines() if "locked:" in line and "WARNING" in line]
    assert "database is locked" in line and "the next hook run retries it" in line
    assert len(retry_files(store)) == 1
    # The next hook run, for another session, stores that one too.
    run_hook(payload(real(SAMPLE), "later"), env)
    wait_for(lambda: stored_runs(home) == {"first": 1, "locked": 1, "later": 1}, 180.0)
    wait_for(lambda: not retry_files(store), 60.0, "the retry file to go")
    assert ledger(home)["locked"] == ("scored", 1)
    assert "locked: retrying, try 2" in log_text(home) and "Traceback" not in log_text(home)


def _env(clean_env: Path) -> HookEnv:
    return replace(HookEnv.from_settings(get_settings()), projects_root=clean_env / "projects")


def _job(path: Path, env: HookEnv, session_id: str = "s-broken") -> HookJob:
    request = HookRequest(session_id, path, event="SessionEnd", cwd="/workspace")
    return HookJob(request, HookPolicy(), env)


@pytest.fixture
def transcript(tmp_path, cc_projects) -> Path:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(require(real(TOOL_HEAVY)), path)
    return path


def test_a_broken_store_is_kept_for_a_retry_and_stored_once_it_is_mended(
    transcript, clean_env, caplog
):
    env = _env(clean_env)
    env.store_path.parent.mkdir(parents=True)
    env.store_path.write_bytes(b"this is not an SQLite database\n" * 200)
    outcome = _job(transcript, env).run()
    assert outcome.state == "failed" and outcome.deferred
    assert "not a database" in outcome.reason and "the next hook run retries it" in outcome.reason
    assert [r.levelname for r in caplog.records if "s-broken" in r.getMessage()] == ["WARNING"]
    # Still broken: the retry goes back, one more try counted, not due at once.
    (again,) = retry_deferred(HookPolicy(), env)
    assert again.deferred and retry_deferred(HookPolicy(), env) == []
    env.store_path.rename(env.store_path.with_suffix(".broken"))  # the user mends it
    (retried,) = retry_deferred(HookPolicy(), env, now=9e9)
    assert retried.state == "scored" and not retry_files(env.store_path)
    with ScoreStore(env.store_path) as store:
        assert store.latest("s-broken") is not None


def test_a_card_judged_before_the_store_failed_is_stored_without_judging_again(
    transcript, clean_env, monkeypatch
):
    env = _env(clean_env)
    lock = StoreLock(env.store_path)

    class LockingJudge(FakeJudgeServer):
        """Answers the judge, but first has another process lock the store."""

        def handle_post(self, path: str, body: dict):
            if path.endswith("/v1/messages") and lock.proc is None:
                lock.hold()
            return super().handle_post(path, body)

    with LockingJudge() as judge:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        get_settings.cache_clear()
        env = replace(_env(clean_env), anthropic_configured=True)
        try:
            outcome = _job(transcript, env, "s-judged").run()
        finally:
            lock.release()
        assert outcome.deferred and "the judged card is kept" in outcome.reason
        calls = judge.calls
        (retried,) = retry_deferred(HookPolicy(), env)
        assert retried.state == "scored" and judge.calls == calls == 1
    assert retried.card is not None and retried.card.judge == "llm"
    with HookLedger(env.store_path) as hook_ledger:
        assert hook_ledger.spent_today() == pytest.approx(retried.card.cost_usd)
    with ScoreStore(env.store_path) as store:
        assert store.latest("s-judged").cost_usd == retried.card.cost_usd


def test_a_job_the_store_keeps_refusing_is_given_up_with_one_line(transcript, clean_env):
    env = _env(clean_env)
    env.store_path.parent.mkdir(parents=True)
    env.store_path.write_bytes(b"this is not an SQLite database\n" * 200)
    assert _job(transcript, env).run().deferred
    (path,) = retry_files(env.store_path)
    job = json.loads(path.read_text())
    path.write_text(json.dumps({**job, "attempts": MAX_ATTEMPTS}))
    (last,) = retry_deferred(HookPolicy(), env, now=9e9)
    assert last.state == "failed" and not last.deferred
    assert f"given up after {MAX_ATTEMPTS} retries" in last.reason
    assert not retry_files(env.store_path)
