"""The score store and the backfill ledger share one write lock per SQLite file, so writers
of one process hand over at once instead of meeting SQLite's sleeping busy handler."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from scorer._sqlite import write_lock
from scorer.jobs.ledger import Ledger
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card


def test_one_lock_per_file_whatever_the_spelling(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "sub")
    lock = write_lock(tmp_path / "sub" / "scores.sqlite3")
    assert write_lock(tmp_path / "sub" / ".." / "sub" / "scores.sqlite3") is lock
    assert write_lock(tmp_path / "link" / "scores.sqlite3") is lock
    assert write_lock(tmp_path / "other.sqlite3") is not lock


def test_store_and_ledger_of_one_file_share_it(tmp_path):
    path = tmp_path / "scores.sqlite3"
    store, ledger = ScoreStore(path), Ledger(path, "run")
    assert store._write_lock is ledger._write_lock is write_lock(path)
    assert ScoreStore(tmp_path / "elsewhere.sqlite3")._write_lock is not store._write_lock


def test_a_ledger_write_waits_for_a_store_transaction_on_the_lock(tmp_path):
    """While the store's transaction is open, a ledger write queues on the shared lock,
    not inside SQLite: with SQLite's busy wait switched off for the writer's connection it
    would fail with "database is locked"; it lands as soon as the store commits."""
    path = tmp_path / "scores.sqlite3"
    store, ledger = ScoreStore(path), Ledger(path, "run")
    ledger.add([("s1", None)])
    inside, done = threading.Event(), threading.Event()

    errors: list[BaseException] = []

    def write() -> None:
        ledger._conn().execute("PRAGMA busy_timeout = 0")  # this thread's connection
        inside.wait()
        try:
            ledger.set_state("s1", "judged")
        except BaseException as exc:
            errors.append(exc)
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    with store._tx() as db:
        db.execute("SELECT 1")
        inside.set()
        assert not done.wait(0.3)  # blocked for as long as the transaction is open
    writer.join(10)
    assert errors == [] and ledger.get("s1")["state"] == "judged"


def test_many_threads_write_both_tables_without_a_lost_write(tmp_path):
    path = tmp_path / "scores.sqlite3"
    store, ledger = ScoreStore(path), Ledger(path, "run")
    ids = [f"s{i}" for i in range(24)]
    ledger.add([(sid, None) for sid in ids])

    def work(sid: str) -> None:
        ledger.bump_attempts(sid)
        store.save(make_card(session_id=sid))
        ledger.set_state(sid, "stored")

    threads = [threading.Thread(target=work, args=(sid,)) for sid in ids]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert ledger.states() == dict.fromkeys(ids, "stored")
    assert {r["attempts"] for r in ledger.rows()} == {1}
    assert {store.latest(sid).session_id for sid in ids} == set(ids)


def test_a_store_switched_to_wal_while_another_process_holds_it_is_asked_again(monkeypatch):
    """SQLITE_BUSY that SQLite's busy handler never waited for (a new store opened by
    several processes at once) is asked again, for up to the busy timeout; any other
    error is raised at once."""
    from scorer import _sqlite

    monkeypatch.setattr(_sqlite.time, "sleep", lambda s: None)
    answers = iter([sqlite3.OperationalError("database is locked")] * 3 + [None])
    calls = []

    def step():
        calls.append(1)
        answer = next(answers)
        if answer is not None:
            raise answer

    _sqlite._patiently(step)
    assert len(calls) == 4

    def fails(message: str):
        def step():
            calls.append(1)
            raise sqlite3.OperationalError(message)

        return step

    calls.clear()
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _sqlite._patiently(fails("disk I/O error"))
    assert len(calls) == 1
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _sqlite._patiently(fails("database is locked"), seconds=0)
