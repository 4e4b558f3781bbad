"""Batch mode as Claude Code runs it: real payloads piped into the `scorer` console script,
the detached worker queueing, sending and keeping the queue's time, `scorer hook --collect`
printing the collected sessions, and a real `kill -9` between a batch's `create` and its
record (Message Batches behind `FakeJudgeServer` on loopback)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess

import pytest

from tests.conftest import require
from tests.jobs.helpers import FakeJudgeServer
from tests.jobs.hook.helpers import (
    REAL,
    SCORER,
    _query,
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
)

pytestmark = pytest.mark.slow

NAMES = [r for r in REAL if not r.endswith("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")]


@pytest.fixture
def world(tmp_path):
    """The fake judge (a batch ends on its second poll) and a batch-mode environment."""
    for name in NAMES:
        require(real(name))
    with FakeJudgeServer(batch_polls=1) as judge:
        home = tmp_path / "home"
        env = hook_env(
            home, ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=judge.url,
            SCORER_HOOK_MODE="batch", SCORER_HOOK_BATCH_SIZE="2",
            SCORER_HOOK_BATCH_MINUTES="60", SCORER_BATCH_POLL_SECONDS="0",
            SCORER_BATCH_ADOPT_SECONDS="1",
        )  # fmt: skip
        yield home, env, judge
        for (pid,) in _query(home, "SELECT pid FROM hook_batch_timer"):
            _kill(pid)  # a timer still napping (it would quit within a minute anyway)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def _scorer(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCORER), *args], capture_output=True, text=True, env=env, timeout=180,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_hooks_queue_then_send_one_batch_and_collect_prints_a_line_each(world):
    home, env, judge = world
    (first, a), (second, b) = [(n, REAL[n]) for n in NAMES[:2]]
    assert_quick_and_silent(run_hook(payload(real(first), a), env))
    wait_log(home, f"{a}: queued: waiting for a Message Batch")
    wait_for(lambda: _query(home, "SELECT pid FROM hook_batch_timer") != [], what="a timer")
    assert judge.batch_creates == 0 and judge.calls == 0
    assert_quick_and_silent(run_hook(payload(real(second), b), env))
    wait_log(home, "sending 2 sessions as a Message Batch: 2 session(s) queued")
    wait_for(lambda: {r[0] for r in ledger(home).values()} == {"submitted"}, what="submitted")
    wait_for(lambda: "msgbatch_0001" in str(_query(home, "SELECT batch_id FROM hook_sessions")))
    assert judge.batch_creates == 1 and len(judge.batches["msgbatch_0001"]["requests"]) == 2

    done = _scorer(["hook", "--collect"], env)
    assert done.returncode == 0, done.stderr
    lines = sorted(done.stdout.splitlines())
    assert [line.split(":")[0] for line in lines] == sorted([a, b])
    assert all(
        ": scored overall" in line and "(Message Batch msgbatch_0001)" in line for line in lines
    )
    assert ledger(home) == {a: ("scored", 1), b: ("scored", 1)}
    assert stored_runs(home) == {a: 1, b: 1}
    again = _scorer(["hook", "--collect", "--json"], env)
    assert (again.returncode, again.stdout) == (0, "")
    assert "nothing waits for a Message Batch" in again.stderr
    assert judge.batch_creates == 1 and judge.calls == 0
    assert "Traceback" not in log_text(home)


def test_a_lone_session_goes_out_when_its_minutes_pass(world):
    home, env, judge = world
    env = {**env, "SCORER_HOOK_BATCH_SIZE": "10", "SCORER_HOOK_BATCH_MINUTES": "0.05"}
    name = NAMES[0]
    assert_quick_and_silent(run_hook(payload(real(name), REAL[name]), env))
    wait_log(home, "s (SCORER_HOOK_BATCH_MINUTES=0.05)")
    wait_for(lambda: ledger(home).get(REAL[name], ("",))[0] == "submitted", what="submitted")
    wait_for(lambda: _query(home, "SELECT pid FROM hook_batch_timer") == [], what="timer gone")
    assert judge.batch_creates == 1
    collected = json.loads(_scorer(["hook", "--collect", "--json"], env).stdout)
    assert (collected["session_id"], collected["state"]) == (REAL[name], "scored")
    assert collected["scorecard"]["backend"] == "batch"


def test_a_kill_between_create_and_its_record_is_adopted_not_paid_twice(world, tmp_path):
    home, env, judge = world
    env = {**env, "SCORER_HOOK_BATCH_SIZE": "1"}
    name = NAMES[1]
    args = ["hook", "--transcript", str(real(name)), "--session-id", "k", "--wait"]
    proc = subprocess.Popen(
        [str(SCORER), *args], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    judge.on_create = lambda batch_id: _kill(proc.pid)  # made, its reply never read
    proc.communicate(timeout=180)
    assert proc.returncode == -signal.SIGKILL
    judge.on_create = None
    assert judge.batch_creates == 1 and ledger(home)["k"] == ("submitted", 0)

    judge.batch_polls = 0  # it ends on the next poll
    done = _scorer(["hook", "--collect"], env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("k: scored overall") and "msgbatch_0001" in done.stdout
    assert judge.batch_creates == 1  # adopted, not submitted again
    assert ledger(home)["k"] == ("scored", 1) and stored_runs(home) == {"k": 1}
    assert "adopting batch msgbatch_0001" in log_text(home)
