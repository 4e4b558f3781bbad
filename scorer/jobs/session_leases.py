"""One writer per session across processes: a lease per session in the store's file.

Two backfills of one store (a cron job and a user's run, two shells), a backfill and a
calibration, or a backfill and the hook's background job would otherwise each judge, pay
for and store the same session. Before a process judges a session it takes the
session's lease, one row of `session_leases` in the store's SQLite file, in one
`BEGIN IMMEDIATE` transaction; every other process that wants the session while the
row stands skips it, "being scored by process N", and says so. The lease is given back
(the row deleted) when the session is done with, however it ended.

A lease never outlives its process: the row names the holder's token (`jobs.leases`),
whose `flock`ed file the kernel unlocks when the holder dies, `kill -9` included; the
next process that wants the session finds the token dead and takes the lease over.
Within one process, a session is held by one caller at a time too.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from scorer._sqlite import connect, transaction, write_lock
from scorer.errors import SinkError
from scorer.jobs.leases import is_alive, my_token

__all__ = ["Holder", "SessionLeases"]

log = logging.getLogger(__name__)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS session_leases (
    session_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    pid INTEGER NOT NULL,
    command TEXT NOT NULL,
    taken_at TEXT NOT NULL
)
"""

_mine: set[tuple[str, str]] = set()
"""(store file, session id) of every lease this process holds, whoever took it."""
_mine_guard = threading.Lock()


@dataclass(frozen=True)
class Holder:
    """The process that holds a session's lease."""

    pid: int
    command: str
    """What it runs: `score-backfill`, `score-calibrate`, `scorer hook`, ..."""

    def text(self) -> str:
        """`being scored by process 4242 (score-backfill)`."""
        return f"being scored by process {self.pid} ({self.command})"


class SessionLeases:
    """The session leases of one store file, for one command of this process.

    Thread-safe: a backfill's workers share one instance.

    Args:
        path: The store's SQLite file.
        command: Names this process to the others (`score-backfill`, ...).

    Raises:
        SinkError: The file cannot be opened or written (a read-only store, say).
    """

    def __init__(self, path: Path, command: str) -> None:
        self.path = Path(path)
        self.command = command
        self._key = os.path.realpath(self.path)
        self._lock = write_lock(self.path)
        self._taken: set[str] = set()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(self.path)
            with self._lock:
                self._db.execute(_SCHEMA)
        except (sqlite3.Error, OSError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            raise SinkError(f"cannot take session leases in {self.path}: {reason}") from None

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        return transaction(self._db, self._lock)

    def take(self, session_id: str) -> Holder | None:
        """Take the session's lease for this process.

        Returns:
            None when it is ours now; else the live process that holds it.
        """
        token = my_token(self.path)
        with _mine_guard:
            if (self._key, session_id) in _mine:  # another caller of this process
                return Holder(os.getpid(), "this process")
            with self._tx() as db:
                row = db.execute(
                    "SELECT owner, pid, command FROM session_leases WHERE session_id = ?",
                    (session_id,),
                ).fetchone()
                if row is not None and row["owner"] != token and is_alive(self.path, row["owner"]):
                    return Holder(int(row["pid"]), str(row["command"]))
                db.execute(
                    "INSERT OR REPLACE INTO session_leases VALUES (?, ?, ?, ?, ?)",
                    (session_id, token, os.getpid(), self.command, datetime.now(UTC).isoformat()),
                )
            _mine.add((self._key, session_id))
            self._taken.add(session_id)
        return None

    def release(self, session_id: str) -> None:
        """Give the session's lease back (nothing when this instance does not hold it)."""
        with _mine_guard:
            if session_id not in self._taken:
                return
            try:
                with self._tx() as db:
                    db.execute(
                        "DELETE FROM session_leases WHERE session_id = ? AND owner = ?",
                        (session_id, my_token(self.path)),
                    )
            except sqlite3.Error as exc:
                # The store is locked or broken: the row stays, naming this process's
                # token, so this process may take it again and others may once it ends.
                log.warning("session %s: its lease stays until this process ends: %s",
                            session_id, exc)  # fmt: skip
            finally:
                self._taken.discard(session_id)
                _mine.discard((self._key, session_id))

    def holder(self, session_id: str) -> Holder | None:
        """The live process other than this one holding the session's lease (a dry run
        looks without taking)."""
        with self._lock:
            row = self._db.execute(
                "SELECT owner, pid, command FROM session_leases WHERE session_id = ?",
                (session_id,),
            ).fetchone()
        if row is None or row["owner"] == my_token(self.path):
            return None
        return (
            Holder(int(row["pid"]), str(row["command"]))
            if is_alive(self.path, row["owner"])
            else None
        )

    def close(self) -> None:
        """Give back every lease still held (a run that stopped early) and close."""
        try:
            for session_id in list(self._taken):
                self.release(session_id)
        finally:
            self._db.close()

    def __enter__(self) -> SessionLeases:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
