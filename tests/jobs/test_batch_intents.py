"""Exactly-once spend for `--batch-api` (issue 24 item 2): a kill anywhere around
`messages.batches.create` still bills one batch. Real SDK → loopback fake Batches API."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from scorer.jobs import batch_intents, batches
from scorer.jobs.backfill import BackfillOptions, default_services, run_backfill
from scorer.jobs.batch_requests import custom_id
from scorer.jobs.ledger import Ledger
from scorer.settings import get_settings
from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts
from tests.jobs.test_batches import long_projects

REPO = Path(__file__).resolve().parents[2]


class Crash(BaseException):
    """Stands in for a kill in the in-process tests: nothing in the run may catch it."""


@pytest.fixture(autouse=True)
def short_waits(monkeypatch):
    monkeypatch.setenv("SCORER_BATCH_POLL_SECONDS", "0")
    monkeypatch.setenv("SCORER_BATCH_ADOPT_SECONDS", "0.5")


def opts(root: Path) -> BackfillOptions:
    return BackfillOptions(source="claude-code", projects_root=root, judge="llm", batch_api=True)


def intents(db: Path) -> list[tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT state, batch_id FROM backfill_batch_intents ORDER BY created_at"
        )
        return [(state, bid) for state, bid in rows]


# --- real kills around create ------------------------------------------------------

# SIGKILL this very process at a chosen point of its N-th batch submission. "intent":
# the intent is committed, create not sent; "before_commit": create's reply was read,
# the ledger commit not made; "after_commit": the commit made. The fourth point (the
# server made the batch, the reply is not read yet) is the server's `on_create` hook.
_CHILD = """
import os, signal, sys
from scorer.jobs.ledger import Ledger
from scorer.cli.backfill import main
point, nth = os.environ["KILL_AT"], int(os.environ["KILL_NTH"])
calls = {"intent": 0, "batch": 0}
def die():
    os.kill(os.getpid(), signal.SIGKILL)
_intent, _add = Ledger.add_intent, Ledger.add_batch
def add_intent(self, *a, **k):
    row = _intent(self, *a, **k)
    calls["intent"] += 1
    if point == "intent" and calls["intent"] == nth:
        die()
    return row
def add_batch(self, *a, **k):
    calls["batch"] += 1
    if point == "before_commit" and calls["batch"] == nth:
        die()
    _add(self, *a, **k)
    if point == "after_commit" and calls["batch"] == nth:
        die()
Ledger.add_intent, Ledger.add_batch = add_intent, add_batch
sys.argv = ["score-backfill", *sys.argv[1:]]
main()
"""


def _env(home: Path, server: FakeJudgeServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SCORER_"))}
    env.update(SCORER_HOME=str(home), ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url)
    env.update(SCORER_BATCH_POLL_SECONDS="0.05", SCORER_BATCH_ADOPT_SECONDS="1", **extra)
    return env


def _argv(root: Path) -> list[str]:
    return ["--projects-root", str(root), "--batch-api", "--json", "--no-progress"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "nth", "ended"),
    [
        ("intent", 1, False),  # before the call: nothing made, submitted after the wait
        ("server", 1, True),  # made, reply never read; found ended: custom ids checked
        ("server", 1, False),  # made, reply never read; found running: adopted, checked later
        ("before_commit", 1, False),  # reply read, no ledger commit
        ("after_commit", 1, False),  # committed: plain resume
        ("before_commit", 2, False),  # the final requests' batch of chunked sessions
    ],
)
def test_a_kill_anywhere_around_create_bills_one_batch(tmp_path, point, nth, ended):
    root, home = tmp_path / "projects", tmp_path / "home"
    ids = make_projects(root, 4)
    extra: dict[str, str] = {}
    if nth == 2:  # two chunked sessions: notes batch, then a batch of final requests
        ids += long_projects(root, 2)
        extra = {"SCORER_CHUNK_BUDGET": "1500", "SCORER_CHUNK_OVERLAP": "0"}
    with FakeJudgeServer(batch_polls=0 if nth == 2 else 10_000) as server:
        env = _env(home, server, KILL_AT=point, KILL_NTH=str(nth), **extra)
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD, *_argv(root)],
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        if point == "server":
            server.on_create = lambda bid: os.kill(child.pid, signal.SIGKILL)
        _, err = child.communicate(timeout=120)
        assert child.returncode == -signal.SIGKILL, err.decode()
        server.on_create = None
        made_by_kill = 0 if point == "intent" else nth
        assert server.batch_creates == made_by_kill
        server.batch_polls = -1 if ended else 0  # the batch ends meanwhile / on its next poll
        rerun = subprocess.run(
            [sys.executable, "-m", "scorer.cli.backfill", *_argv(root)],
            env=_env(home, server, **extra),
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert rerun.returncode == 0, rerun.stderr
        summary = json.loads(rerun.stdout.strip().splitlines()[-1])
        assert summary["failed"] == summary["unscored"] == 0, summary
        assert server.batch_creates == nth  # one batch billed per phase, whatever the kill
        assert server.calls == 0
    counts = score_counts(home / "scores.sqlite3")
    assert set(counts) == set(ids) and set(counts.values()) == {7}
    states = [state for state, _ in intents(home / "scores.sqlite3")]
    assert "open" not in states
    assert states.count("abandoned") == (1 if point == "intent" else 0)


# --- adoption's choices, in process ---------------------------------------------------


def _crash_after_intent(monkeypatch) -> None:
    real = Ledger.add_intent

    def add_intent(self, *a, **k):
        real(self, *a, **k)
        raise Crash

    monkeypatch.setattr(Ledger, "add_intent", add_intent)


def test_batches_that_only_look_like_ours_are_not_adopted(tmp_path, judge_env, monkeypatch):
    """Same request count: an ended one fails the custom-id check at once; a running one
    is adopted, then rejected when its results come: the requests go out once, again."""
    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    with FakeJudgeServer(batch_polls=2) as server:
        judge_env(server)
        with monkeypatch.context() as m:
            _crash_after_intent(m)
            with pytest.raises(Crash):
                run_backfill(opts(root))
        assert server.batch_creates == 0
        others = [custom_id(f"other-{i}", "score") for i in range(3)]
        ended = server.add_batch(others, ended=True)
        running = server.add_batch(others, ended=False)
        server.batches[running]["polls"] = 0  # ends after its third retrieve
        server.add_batch(others[:2], ended=True)  # another count: never a candidate
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed) == (3, 0)
        assert server.batch_creates == 1
        db = get_settings().store_path
        assert [state for state, _ in intents(db)] == ["rejected", "submitted"]
        assert intents(db)[0][1] == running
        assert ended not in Ledger(db, summary.run_key).known_batch_ids()
    counts = score_counts(get_settings().store_path)
    assert set(counts) == set(ids) and set(counts.values()) == {7}


def test_the_batch_is_found_pages_back_behind_newer_ones(tmp_path, judge_env, monkeypatch):
    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    monkeypatch.setattr(batch_intents, "LIST_PAGE", 4)
    pages: list[str] = []
    with FakeJudgeServer(batch_polls=-1) as server:
        judge_env(server)
        real_list = server._list_batches

        def listing(query: str) -> dict:
            pages.append(query)
            return real_list(query)

        server._list_batches = listing  # type: ignore[method-assign]
        with monkeypatch.context() as m:
            real_add = Ledger.add_batch

            def add_batch(self, *a, **k):
                if k.get("how", "submitted") == "submitted":
                    raise Crash  # the reply was read, nothing committed
                real_add(self, *a, **k)

            m.setattr(Ledger, "add_batch", add_batch)
            with pytest.raises(Crash):
                run_backfill(opts(root))
        assert server.batch_creates == 1
        for i in range(10):  # newer batches of other sizes fill the first pages
            server.add_batch([custom_id(f"x-{i}", "score")], ended=True)
        server.add_batch(["old"], ended=True, ago=3600)  # older than the intent: not read
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed) == (3, 0)
        assert server.batch_creates == 1
    assert len(pages) == 3 and all("limit=4" in q for q in pages)
    assert "after_id" in pages[1] and "after_id" in pages[2]
    assert [s for s, _ in intents(get_settings().store_path)] == ["verified"]
    assert set(score_counts(get_settings().store_path).values()) == {7}
    assert set(score_counts(get_settings().store_path)) == set(ids)


def test_a_create_that_errs_after_making_the_batch_is_not_sent_twice(tmp_path, judge_env):
    """A 500 (or a timeout) does not prove the server made nothing: before the retry,
    the run looks for the batch and adopts it."""
    root = tmp_path / "projects"
    make_projects(root, 2)
    with FakeJudgeServer(batch_polls=0) as server:
        judge_env(server)
        server.create_faults = [500]
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed) == (2, 0)
        assert server.batch_creates == 1
    assert [s for s, _ in intents(get_settings().store_path)] == ["verified"]


def test_a_refused_create_is_retried_without_waiting_for_an_adoption(tmp_path, judge_env):
    """529 means nothing was made: the retry creates at once (no listing, no wait)."""
    root = tmp_path / "projects"
    make_projects(root, 2)
    with FakeJudgeServer(batch_polls=0) as server:
        judge_env(server)
        server.faults = []
        server.create_faults = []
        real = server._create_batch
        refused = {"n": 1}

        def create(body: dict):
            if refused["n"]:
                refused["n"] -= 1
                return 529, {"type": "error", "error": {"type": "overloaded_error"}}, {}
            return real(body)

        server._create_batch = create  # type: ignore[method-assign]
        listed = []
        server._list_batches = lambda q: listed.append(q) or {"data": [], "has_more": False}  # type: ignore[method-assign]
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed) == (2, 0)
        assert server.batch_creates == 1 and listed == []


def test_the_adoption_wait_comes_from_the_options_built_at_the_edge(
    tmp_path, judge_env, monkeypatch
):
    """`SCORER_BATCH_ADOPT_SECONDS` is read once, into `Services.batch_adopt`; the batch
    run takes its wait from there, never from the settings (here changed after the
    services were built, as a deep `get_settings()` would see)."""
    root = tmp_path / "projects"
    make_projects(root, 2)
    waits: list[float] = []

    class Spy(batch_intents.Adopter):
        def __init__(self, *a, wait: float, **k):
            waits.append(wait)
            super().__init__(*a, wait=wait, **k)

    monkeypatch.setattr(batches, "Adopter", Spy)
    with FakeJudgeServer(batch_polls=0) as server:
        judge_env(server)
        monkeypatch.setenv("SCORER_BATCH_ADOPT_SECONDS", "7")
        get_settings.cache_clear()
        services = default_services(opts(root), get_settings())
        assert services.batch_adopt == 7.0
        services.batch_adopt = 0.25
        monkeypatch.setenv("SCORER_BATCH_ADOPT_SECONDS", "3600")
        get_settings.cache_clear()
        summary = run_backfill(opts(root), services)
        assert (summary.scored, summary.failed) == (2, 0)
    assert waits == [0.25]
