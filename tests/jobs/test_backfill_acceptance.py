"""Backfill acceptance: 50 Langfuse sessions with faults in both APIs, and kill -9 with
the Langfuse sink.

1. In process: the respx `FakeLangfuse` holds 50 plugin-shaped sessions cloned from the
   real transcripts (plus one whose judge reply never parses); the real `AnthropicJudge`
   talks to a loopback fake Messages API. Everything in between is the real pipeline
   from `default_services`. Faults: Anthropic 429 (retry-after) / 529 / 500, Langfuse 429
   (Retry-After) / 500 on every route used, and a 207 with one transient and one
   permanent rejection.
2. Subprocesses: `python -m scorer.cli.backfill --source langfuse` against a FakeLangfuse
   served over real HTTP, killed with SIGKILL right after Langfuse stored its 1st, 5th and
   10th score batch (the response held back), then resumed and compared with a clean run.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.settings import get_settings
from tests.conftest import CC_PROJECTS, require
from tests.jobs.acceptance_helpers import (
    INVALID_MARKER,
    FaultyJudge,
    LoopbackLangfuse,
    clone_sessions,
    synthetic_session,
)
from tests.jobs.helpers import fake_clock_limiters, score_counts
from tests.jobs.test_backfill_langfuse import batches_by_session
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
START = datetime(2026, 11, 19, 0, 0, tzinfo=UTC)
N = 50
POISONED = "poisoned-session"
TRANSIENT = "clone-007"  # prefixes: one 207 item rejected once, then accepted
PERMANENT = "clone-013"  # one 207 item rejected for good: the session fails, stays stored


def stored_runs(path: Path) -> Counter[str]:
    with sqlite3.connect(path) as db:
        return Counter(dict(db.execute("SELECT session_id, COUNT(*) FROM runs GROUP BY 1")))


def failure_tracebacks(key: str) -> str:
    """Every failed session's reason and traceback from the ledger (for assert messages)."""
    ledger = Ledger(get_settings().store_path, key)
    rows = [r for r in ledger.rows() if r["traceback"]]
    ledger.close()
    return "\n".join(f"{r['session_id']}: {r['reason']}\n{r['traceback']}" for r in rows)


def by_prefix(ids: set[str], prefix: str) -> str:
    return next(s for s in ids if s.startswith(prefix))


# --- 1. 50 sessions, faults in both APIs ----------------------------------------------


@pytest.fixture
def world(tmp_path) -> dict[str, list[dict]]:
    """49 clones of real transcripts and one poisoned synthetic session: 50 to score."""
    require(CC_PROJECTS)
    sessions = clone_sessions(N - 1, last_end=NOW - timedelta(hours=1))
    sessions[POISONED] = synthetic_session(
        tmp_path, POISONED, NOW - timedelta(hours=3, minutes=30), task=f"fix it {INVALID_MARKER}"
    )
    return sessions


@pytest.fixture
def both_env(monkeypatch, fast_retry_waits):
    """Langfuse and Anthropic env pointing at the fakes; every retry wait is recorded."""
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    waits = fast_retry_waits

    fake_clock_limiters(monkeypatch)  # the shared limiters pause in fake time
    get_settings.cache_clear()
    yield waits
    get_settings.cache_clear()


def llm_run(**kw: Any):
    opts = BackfillOptions(
        source="langfuse", start=START, end=NOW, judge="llm", concurrency=6, idle_minutes=30
    )
    return run_backfill(opts.model_copy(update=kw), now=NOW)


def test_50_sessions_with_faults_in_both_apis(world, both_env, monkeypatch):
    waits = both_env
    everyone = set(world)
    transient, permanent = by_prefix(everyone, TRANSIENT), by_prefix(everyone, PERMANENT)
    rejected_once: set[str] = set()

    def reject(item: dict) -> str | None:
        # `transient`: one item rejected once. `permanent`: one 207 rejecting one item for
        # a transient reason (re-sent alone, accepted) and one for good.
        sid, name = item["sessionId"], item["name"]
        first_time = sid not in rejected_once
        if sid in (transient, permanent) and name == "tool_efficiency" and first_time:
            rejected_once.add(sid)  # one worker per session: no race
            return "tool_efficiency: internal server error, try again"
        if sid == permanent and name == "goal_achievement":
            return "Score value out of range for config goal_achievement"
        return None

    anthropic_faults = [
        (429, {"retry-after": "3"}),
        (529, {}),
        (500, {}),
        (429, {"retry-after": "2"}),
        (500, {}),
    ]
    with (
        FaultyJudge(anthropic_faults) as judge,
        FakeLangfuse([o for obs in world.values() for o in obs]) as fake,
    ):
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        get_settings.cache_clear()
        fake.fail("observations", httpx.Response(429, headers={"Retry-After": "7"}))
        fake.fail(
            "scores_v3",
            httpx.Response(429, headers={"Retry-After": "4"}),
            httpx.Response(500, json={"message": "boom"}),
        )
        fake.fail(
            "scores",
            httpx.Response(429, headers={"Retry-After": "5"}, json={"message": "slow down"}),
            httpx.Response(500, json={"message": "boom"}),
        )
        fake.reject = reject

        first = llm_run()
        assert (first.discovered, first.selected) == (N, N)
        outcome = (first.scored, first.unscored, first.incomplete, first.failed)
        assert outcome == (N - 2, 1, 1, 0), failure_tracebacks(first.run_key)
        assert first.scored + first.unscored + first.incomplete + first.skipped == N
        assert first.not_started == 0
        reasons = {f.session_id: f.reason for f in first.failures}
        assert set(reasons) == {POISONED, permanent}
        assert "invalid structured output after one repair" in reasons[POISONED]
        assert "goal_achievement" in reasons[permanent] and "out of range" in reasons[permanent]
        # Faults were met and waited out as the servers asked.
        assert sum(judge.fault_count.values()) == 5 and judge.invalid_replies == 2
        assert {3.0, 2.0} <= set(waits.anthropic)
        assert {7.0, 4.0, 5.0} <= set(waits.langfuse)
        assert first.rate_limit_pauses["anthropic"] >= 2
        assert first.rate_limit_pauses["langfuse"] >= 3

        scored = everyone - {POISONED, permanent}
        ids = fake.session_score_ids()
        # Eight Langfuse scores a session: the seven and goal_probability.
        assert {s: len(v) for s, v in ids.items() if s != permanent} == dict.fromkeys(scored, 8)
        assert len(ids[permanent]) == 7 and POISONED not in ids  # nothing for the unscored
        sent = batches_by_session(fake)
        assert [len(b) for b in sent[transient]] == [8, 1] == [len(b) for b in sent[permanent]]
        assert {i["name"] for i in sent[permanent][1]} == {"tool_efficiency"}
        store = get_settings().store_path
        assert dict(stored_runs(store)) == dict.fromkeys(scored | {permanent}, 1)
        assert dict(score_counts(store)) == dict.fromkeys(scored | {permanent}, 7)
        ledger = Ledger(store, first.run_key)
        states = ledger.states()
        ledger.close()
        assert states[permanent] == "stored" and states[POISONED] == "unscored"
        assert Counter(states.values())["written"] == N - 2

        # The config was fixed: the re-run only finishes the failed push, judging nothing.
        fake.reject = None
        calls, batches = judge.calls, len(fake.score_batches)
        second = llm_run()
        assert judge.calls == calls
        assert (second.scored, second.skipped, second.unscored, second.failed) == (1, N - 2, 1, 0)
        assert [len(b) for b in fake.score_batches[batches:]] == [8]
        assert {f.session_id for f in second.failures} == {POISONED}
        ids = fake.session_score_ids()
        assert {s: len(v) for s, v in ids.items()} == dict.fromkeys(scored | {permanent}, 8)
        assert dict(stored_runs(store)) == dict.fromkeys(scored | {permanent}, 1)

        # And once more (through the Message Batches path, same run key): nothing to do.
        batches = len(fake.score_batches)
        third = llm_run(batch_api=True)
        assert third.run_key == first.run_key
        assert judge.calls == calls and judge.batch_creates == 0
        assert len(fake.score_batches) == batches
        assert (third.scored, third.skipped, third.unscored) == (0, N - 1, 1)


# --- 2. kill -9 with the Langfuse sink, over real HTTP --------------------------------


def _env(home: Path, lf: LoopbackLangfuse) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LANGFUSE_"))}
    env.update(
        SCORER_HOME=str(home),
        LANGFUSE_PUBLIC_KEY=PUBLIC_KEY,
        LANGFUSE_SECRET_KEY=SECRET_KEY,
        LANGFUSE_BASE_URL=lf.url,
    )
    return env


def _cmd(start: datetime, end: datetime) -> list[str]:
    return [
        sys.executable,
        "-m",
        "scorer.cli.backfill",
        "--source",
        "langfuse",
        "--from",
        start.isoformat(),
        "--to",
        end.isoformat(),
        "--judge",
        "heuristic",
        "--concurrency",
        "3",
        "--json",
        "--no-progress",
    ]


def _finish(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _store_values(home: Path) -> dict[tuple[str, str], float]:
    with sqlite3.connect(home / "scores.sqlite3") as db:
        return {(s, n): v for s, n, v in db.execute("SELECT session_id, name, value FROM scores")}


def _ledger(home: Path) -> list[tuple[str, str, str | None]]:
    with sqlite3.connect(home / "scores.sqlite3") as db:
        return db.execute("SELECT session_id, state, reason FROM backfill_sessions").fetchall()


@pytest.mark.slow
def test_kill_9_with_langfuse_sink_resumes_to_one_set_per_session(tmp_path):
    require(CC_PROJECTS)
    now = datetime.now(UTC).replace(microsecond=0)
    world = clone_sessions(15, last_end=now - timedelta(hours=1), spacing=timedelta(minutes=90))
    observations = [o for obs in world.values() for o in obs]
    start, end = now - timedelta(days=2), now
    killed_home, clean_home = tmp_path / "killed", tmp_path / "clean"
    with LoopbackLangfuse(FakeLangfuse(observations)) as lf:
        env, kills = _env(killed_home, lf), 0
        for batches in (1, 5, 10):  # kill right after Langfuse stored this many batches
            lf.arm(batches)
            proc = subprocess.Popen(
                _cmd(start, end), env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
            while not lf.held.wait(0.01) and proc.poll() is None:
                pass
            if lf.held.is_set() and proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
            lf.release()
            assert len(lf.fake.score_batches) >= batches
        assert kills == 3
        summary = _finish(_cmd(start, end), env)
        assert summary["failed"] == summary["unscored"] == 0
        assert summary["scored"] + summary["skipped"] == len(world)
        killed = lf.fake
    with LoopbackLangfuse(FakeLangfuse(observations)) as clean_lf:
        clean = _finish(_cmd(start, end), _env(clean_home, clean_lf))
        assert clean["scored"] == len(world)
        uninterrupted = clean_lf.fake

    # Langfuse: eight distinct score ids per session (the seven and goal_probability), the
    # same ids and values as a clean run.
    ids = killed.session_score_ids()
    assert {sid: len(v) for sid, v in ids.items()} == dict.fromkeys(world, 8)
    assert len(killed.scores) == 8 * len(world)
    assert {i: s["value"] for i, s in killed.scores.items()} == {
        i: s["value"] for i, s in uninterrupted.scores.items()
    }
    assert len(killed.score_batches) > len(world)  # the held batches were sent again
    # The store: one run of seven scores per session, equal to the clean run's.
    assert dict(stored_runs(killed_home / "scores.sqlite3")) == dict.fromkeys(world, 1)
    assert dict(score_counts(killed_home / "scores.sqlite3")) == dict.fromkeys(world, 7)
    assert _store_values(killed_home) == _store_values(clean_home)
    rows = _ledger(killed_home)
    assert {state for _, state, _ in rows} == {"written"} and len(rows) == len(world)
    # Each killed session was in `stored` (push sent, answer lost): finished from the
    # store on resume, never judged twice.
    assert sum(reason == "resumed after interruption" for _, _, reason in rows) >= 1
