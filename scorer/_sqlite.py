"""One write lock per SQLite file per process, shared by every writer of that file.

The score store and the backfill ledger write the same file through different
connections. Two writers of one process that meet inside SQLite do not queue: the
second one's `BEGIN IMMEDIATE` gets SQLITE_BUSY and SQLite's busy handler sleeps
(1, 2, 5, 10 … up to 100 ms) before it tries again, while the Python lock it holds keeps
every other thread of its kind waiting too. Taking this lock first makes writers of one
process hand over at once; the busy handler is left for other processes.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

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
