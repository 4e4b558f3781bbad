"""One write lock per SQLite file per process, shared by every writer of that file.

The score store and the backfill ledger write the same file through different
connections. Two writers of one process that meet inside SQLite do not queue: the
second one's `BEGIN IMMEDIATE` gets SQLITE_BUSY and SQLite's busy handler sleeps
(1, 2, 5, 10 … up to 100 ms) before it tries again, while the Python lock it holds keeps
every other thread of its kind waiting too. Taking this lock first makes writers of one
process hand over at once; the busy handler is left for other processes.

`connect` and `transaction` are how the store and the hook ledger open the file and write.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

_LOCKS: dict[str, threading.RLock] = {}
_GUARD = threading.Lock()


def write_lock(path: Path) -> threading.RLock:
    """The process's write lock for the SQLite file at `path` (same file, same lock).

    Re-entrant, so a thread that holds it for a transaction may also read under it.
    """
    key = os.path.realpath(path)
    with _GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.RLock()
        return lock


def connect(path: Path) -> sqlite3.Connection:
    """A connection to a store file as its writers use it: autocommit (transactions are
    explicit, `transaction`), rows by name, WAL, and no fsync per commit.

    In WAL mode with `synchronous=NORMAL` a commit survives a killed process; only an OS
    crash can lose the last few commits.
    """
    db = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None, check_same_thread=False)
    db.row_factory = sqlite3.Row
    _patiently(lambda: db.execute("PRAGMA journal_mode=WAL"))
    db.execute("PRAGMA synchronous=NORMAL")
    return db


BUSY_SECONDS = 30.0
"""How long a connection waits for another process's lock."""


def _patiently(step: Callable[[], object], seconds: float = BUSY_SECONDS) -> None:
    """Run `step`, again while SQLite answers "locked" at once, up to `seconds`.

    Switching a file to WAL, or opening one whose WAL another process is setting up,
    can fail with SQLITE_BUSY without SQLite's busy handler ever waiting: several
    processes opening a new store together (two backfills, a backfill and the hook) saw
    "database is locked" about once in 30 starts of six.
    """
    deadline = time.monotonic() + seconds
    pause = 0.01
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() + pause > deadline:
                raise
            time.sleep(pause)
            pause = min(0.25, pause * 2)


@contextmanager
def transaction(
    db: sqlite3.Connection, *locks: AbstractContextManager[Any]
) -> Iterator[sqlite3.Connection]:
    """One `BEGIN IMMEDIATE` write transaction under `locks` (taken in order); rolled
    back entirely on any error, `KeyboardInterrupt` included."""
    with ExitStack() as held:
        for lock in locks:
            held.enter_context(lock)
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
