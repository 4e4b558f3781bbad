"""The hook ledger: claims, dedup by transcript fingerprint, takeover, the daily spend."""

from __future__ import annotations

import multiprocessing
import os
from datetime import UTC, datetime, timedelta

import pytest

from scorer.jobs.hook.ledger import STALE_AFTER, HookLedger, decide

NOW = datetime(2026, 11, 25, 12, tzinfo=UTC)
ID = "llm|claude-sonnet-5-5|v3|abc"


def _row(state: str, fingerprint: str = "fp1", **kw) -> dict:
    row = {"state": state, "fingerprint": fingerprint, "pid": 4242, "retry": 0, "reason": None}
    row["started_at"] = kw.pop("started_at", NOW - timedelta(minutes=5)).isoformat()
    return {**row, **kw}


@pytest.mark.parametrize(
    ("row", "alive", "force", "granted", "why"),
    [
        (None, False, False, True, "first time"),
        (_row("scored"), False, False, False, "unchanged since it was scored"),
        (_row("unscored"), False, False, False, "unchanged since it was unscored"),
        (_row("skipped"), False, False, False, "unchanged since it was skipped"),
        (_row("scored", "fp0"), False, False, True, "the transcript changed"),
        (_row("scored"), False, True, True, "asked for"),
        (_row("running"), True, False, False, "being scored by process 4242"),
        (_row("running"), True, True, False, "being scored by process 4242"),
        (_row("running"), False, False, True, "took over from process 4242"),
        (_row("running", started_at=NOW - STALE_AFTER), True, False, True, "took over"),
        (_row("failed", reason="bad file"), False, False, False, "since it failed (bad file)"),
        (_row("failed", retry=1), False, False, True, "retrying after failed"),
        (_row("capped"), False, False, True, "retrying after capped"),
        (_row("queued"), False, False, False, "already queued for a Message Batch"),
        (_row("queued", "fp0"), False, False, True, "the transcript changed"),
        (_row("submitted", batch_id="mb_1"), False, False, False, "in Message Batch mb_1"),
        (_row("submitted", "fp0", batch_id="mb_1"), False, True, False, "in Message Batch"),
    ],
)
def test_decide(row, alive, force, granted, why):
    got = decide(row, "fp1", now=NOW, alive=alive, force=force)
    assert got[0] is granted and why in got[1]


@pytest.mark.parametrize(
    ("state", "granted"),
    [("scored", False), ("unscored", False), ("skipped", True), ("capped", True), ("failed", True),
     ("queued", True), ("submitted", False)],
)  # fmt: skip
def test_an_explicit_request_stops_only_at_a_card_of_this_transcript(state, granted):
    row = _row(state, reason="x", batch_id="mb_1")
    assert decide(row, "fp1", now=NOW, alive=False, force=False, explicit=True)[0] is granted


@pytest.fixture
def ledger(tmp_path):
    with HookLedger(tmp_path / "scores.sqlite3") as db:
        yield db


def _claim(ledger, fp="fp1", **kw):
    return ledger.claim("s-1", ID, fp, trigger="SessionEnd", transcript="/t.jsonl", **kw)


def test_scored_once_per_transcript(ledger):
    assert _claim(ledger).granted
    assert ledger.finish("s-1", ID, "scored", cost_usd=0.06) is None
    again = _claim(ledger)
    assert not again.granted and again.previous == "scored"
    assert _claim(ledger, "fp2").granted  # resumed: more events
    ledger.finish("s-1", ID, "scored", cost_usd=0.07)
    row = ledger.row("s-1", ID)
    assert (row["state"], row["runs"], row["fingerprint"], row["pid"]) == ("scored", 2, "fp2", None)
    assert ledger.spent_today() == pytest.approx(0.13)


def test_a_newer_transcript_seen_while_running_is_scored_after(ledger):
    assert _claim(ledger).granted
    # Another process's hook for the same session, after more events were written:
    other = ledger.row("s-1", ID)
    ledger._db.execute("UPDATE hook_sessions SET pid = ? WHERE session_id = 's-1'", (os.getppid(),))
    busy = _claim(ledger, "fp2")
    assert not busy.granted and "scores the newer transcript when done" in busy.reason
    ledger._db.execute("UPDATE hook_sessions SET pid = ? WHERE session_id = 's-1'", (other["pid"],))
    assert ledger.finish("s-1", ID, "scored") == "fp2"  # the claimer goes again
    assert ledger.row("s-1", ID)["pending"] is None


def test_a_claim_taken_over_is_not_closed_by_the_old_owner(ledger):
    assert _claim(ledger).granted
    ledger._db.execute("UPDATE hook_sessions SET pid = 999999999 WHERE session_id = 's-1'")
    assert ledger.finish("s-1", ID, "scored", cost_usd=0.05) is None
    assert ledger.row("s-1", ID)["state"] == "running"  # left to its new owner
    assert ledger.spent_today() == pytest.approx(0.05)  # the money was spent all the same


def test_the_daily_cap_counts_spend_and_what_running_claims_hold(ledger):
    assert _claim(ledger).granted
    assert ledger.reserve("s-1", ID, 0.4, cap=1.0) == (True, 0.0)
    ledger.claim("s-2", ID, "fpx", trigger="SessionEnd", transcript="/u.jsonl")
    assert ledger.reserve("s-2", ID, 0.5, cap=1.0) == (True, pytest.approx(0.4))
    ledger.claim("s-3", ID, "fpy", trigger="SessionEnd", transcript="/v.jsonl")
    assert ledger.reserve("s-3", ID, 0.2, cap=1.0) == (False, pytest.approx(0.9))
    ledger.finish("s-1", ID, "scored", cost_usd=0.3)  # less than estimated
    assert ledger.reserve("s-3", ID, 0.2, cap=1.0)[0]
    ledger.finish("s-2", ID, "scored", cost_usd=0.5, automatic=False)  # /score: not counted
    assert ledger.spent_today() == pytest.approx(0.3)


def _race(path, fingerprint, barrier, results):
    with HookLedger(path) as ledger:
        barrier.wait()
        claim = ledger.claim("s-1", ID, fingerprint, trigger="SessionEnd", transcript="/t")
        results.put(claim.granted)
        barrier.wait()  # stay alive until all have tried: a dead claimer is taken over


def test_processes_racing_for_a_session_get_one_claim(tmp_path):
    path = tmp_path / "scores.sqlite3"
    HookLedger(path).close()
    ctx = multiprocessing.get_context("fork")
    barrier, results = ctx.Barrier(6), ctx.Queue()
    procs = [ctx.Process(target=_race, args=(path, "fp1", barrier, results)) for _ in range(6)]
    for proc in procs:
        proc.start()
    granted = [results.get(timeout=30) for _ in procs]
    for proc in procs:
        proc.join(30)
    assert granted.count(True) == 1


def test_a_file_that_is_not_a_database_is_a_sink_error(tmp_path):
    from scorer.errors import SinkError

    path = tmp_path / "scores.sqlite3"
    path.write_bytes(b"not a database at all" * 100)
    with pytest.raises(SinkError, match="cannot open the hook ledger"):
        HookLedger(path)


def test_the_batch_queue_reserves_at_batch_prices_and_requeues_what_grew(ledger):
    from scorer.jobs.hook.queue import BatchQueue

    queue = BatchQueue(ledger)
    for sid, fp in (("s-1", "fp1"), ("s-2", "fp2")):
        ledger.claim(sid, ID, fp, trigger="SessionEnd", transcript=f"/{sid}.jsonl")
        assert ledger.finish(sid, ID, "queued") is None
    waiting = queue.rows("queued")
    assert [r["session_id"] for r in waiting] == ["s-1", "s-2"] and queue.oldest() is not None
    assert queue.submit(waiting[0], "fp1b", 0.6, cap=1.0) == (True, 0.0)
    assert queue.submit(waiting[1], "fp2", 0.6, cap=1.0) == (False, pytest.approx(0.6))
    assert ledger.row("s-2", ID)["state"] == "capped" and ledger.row("s-2", ID)["retry"] == 1
    claim = ledger.claim("s-1", ID, "fp1c", trigger="SessionEnd", transcript="/s-1.jsonl")
    assert not claim.granted and ledger.row("s-1", ID)["pending"] == "fp1c"
    newer = queue.collected("s-1", ID, "scored", reason=None, cost_usd=0.25, batch_id="mb_1")
    assert newer == "fp1c"
    row = ledger.row("s-1", ID)
    assert (row["state"], row["fingerprint"], row["runs"], row["reserved_usd"]) == (
        "queued",
        "fp1c",
        1,
        0,
    )
    assert ledger.spent_today() == pytest.approx(0.25)
    assert queue.keep(datetime.now(UTC)) and not queue.release()  # s-1 waits: keep going
