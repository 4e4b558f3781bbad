"""The backfill run ledger: which session of which run reached which state.

It lives in the same SQLite file as the score store (own tables, created here), so one
file holds the scores and the record of the runs that produced them. A run is keyed by
a hash of what decides its result (window, filters, sampling, judge, model, rubric
version); running the same command again finds the same key and resumes.

States, in write order::

    discovered → fetched → judged → stored → written
                     ↘ skipped (already scored)   ↘ failed / unscored (reason, attempts)

`stored` is set right after the store's transactional save and `written` after the
Langfuse push (deterministic score ids, so a repeated push is a no-op). A kill between
any two steps leaves a state from which the next run finishes the session without a
second set of scores. Every write is its own short transaction in WAL mode, so worker
threads (each with its own connection) never block each other for long; a submitted
Message Batch and its sessions' `fetched` + `batch_id` are one transaction (`add_batch`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Iterable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from scorer._sqlite import write_lock
from scorer.jobs.leases import is_alive, my_token

State = Literal[
    "discovered", "fetched", "judged", "stored", "written", "skipped", "failed", "unscored"
]
DONE_STATES: frozenset[str] = frozenset({"written", "skipped"})
"""States a resumed run does not touch again."""
_JUDGING: frozenset[str] = frozenset({"fetched", "judged"})
"""States in which a session keeps the lease of the attempt being judged."""
_INTERRUPTED = "interrupted: the run judging it stopped (its attempt was given back)"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS backfill_runs (
    run_key TEXT PRIMARY KEY,
    params TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS backfill_sessions (
    run_key TEXT NOT NULL,
    session_id TEXT NOT NULL,
    origin TEXT,
    state TEXT NOT NULL,
    reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    batch_id TEXT,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    queued INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    traceback TEXT,
    owner TEXT,
    PRIMARY KEY (run_key, session_id)
);
CREATE TABLE IF NOT EXISTS backfill_batches (
    run_key TEXT NOT NULL,
    batch_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    status TEXT NOT NULL,
    custom_ids TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (run_key, batch_id)
);
CREATE TABLE IF NOT EXISTS backfill_batch_intents (
    run_key TEXT NOT NULL,
    intent_id TEXT NOT NULL,
    phase TEXT NOT NULL,
    custom_ids TEXT NOT NULL,
    session_ids TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL,
    state TEXT NOT NULL,
    batch_id TEXT,
    PRIMARY KEY (run_key, intent_id)
);
"""


def run_key(params: dict[str, Any]) -> str:
    """A stable 16-hex key of the parameters that decide a run's result."""
    blob = json.dumps(params, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _now() -> str:
    return datetime.now(UTC).isoformat()


class Ledger:
    """Run ledger tables in the store's SQLite file.

    Args:
        path: The SQLite file (normally `get_settings().store_path`).
        key: The run key (see `run_key`).
        params: The parameters the key was made from, recorded once for humans.
    """

    def __init__(self, path: Path, key: str, params: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.key = key
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        """Every thread's connection, so `close` can close them all (and SQLite can fold
        its WAL back into the file): a connection left to the collector stays open at
        exit, which the CLI skips (`freeze_at_exit`)."""
        self._conns_lock = threading.Lock()
        # Writers of this process, the score store's included, queue on one Python lock
        # per file (handed over at once) rather than on SQLite's busy handler.
        self._write_lock = write_lock(self.path)
        self._conn().executescript(_SCHEMA)
        self._add_columns()
        with self._tx() as db:
            db.execute(
                "INSERT INTO backfill_runs VALUES (?, ?, ?, ?) "
                "ON CONFLICT(run_key) DO UPDATE SET updated_at = excluded.updated_at",
                (key, json.dumps(params or {}, default=str), _now(), _now()),
            )

    def _add_columns(self) -> None:
        """Columns newer than a ledger file written by an older version."""
        have = {row[1] for row in self._conn().execute("PRAGMA table_info(backfill_sessions)")}
        for column in ("traceback", "owner"):
            if column in have:
                continue
            try:
                with self._tx() as db:
                    db.execute(f"ALTER TABLE backfill_sessions ADD COLUMN {column} TEXT")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def _conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            # Used by its own thread only; `close` may close it from another.
            conn = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.row_factory = sqlite3.Row
            self._local.conn = conn
            with self._conns_lock:
                self._conns.append(conn)
        return conn

    def _tx(self) -> _Tx:
        return _Tx(self._conn(), self._write_lock)

    def add(self, sessions: Iterable[tuple[str, str | None]]) -> int:
        """Record discovered `(session_id, origin)` pairs; known ones keep their state.

        Returns:
            How many were new to this run.
        """
        rows = [(self.key, sid, origin, "discovered", _now()) for sid, origin in sessions]
        with self._tx() as db:
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO backfill_sessions "
                "(run_key, session_id, origin, state, updated_at) VALUES (?, ?, ?, ?, ?)",
                rows,
            )
            return db.total_changes - before

    def states(self) -> dict[str, str]:
        """`session_id → state` for every session of this run."""
        cur = self._conn().execute(
            "SELECT session_id, state FROM backfill_sessions WHERE run_key = ?", (self.key,)
        )
        return {row["session_id"]: row["state"] for row in cur}

    def get(self, session_id: str) -> dict[str, Any] | None:
        """The ledger row of one session, or None."""
        row = (
            self._conn()
            .execute(
                "SELECT * FROM backfill_sessions WHERE run_key = ? AND session_id = ?",
                (self.key, session_id),
            )
            .fetchone()
        )
        return dict(row) if row else None

    def rows(self) -> list[dict[str, Any]]:
        """Every session row of this run, ordered by session id."""
        cur = self._conn().execute(
            "SELECT * FROM backfill_sessions WHERE run_key = ? ORDER BY session_id", (self.key,)
        )
        return [dict(row) for row in cur]

    def set_state(
        self, session_id: str, state: State, reason: str | None = None, **cols: Any
    ) -> None:
        """Move a session to `state` (and set extra columns like `cost_usd`, `batch_id`).

        A failure's `traceback` is kept only with its failure: any other move clears it.
        A move out of the judging states ends the attempt's lease (`owner`, see `reclaim`).
        """
        cols.setdefault("traceback", None)
        if state not in _JUDGING:
            cols["owner"] = None
        allowed = {
            "traceback",
            "batch_id",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "origin",
            "queued",
            "attempts",
            "owner",
        }
        extra = {k: v for k, v in cols.items() if k in allowed}
        sets = ", ".join(
            [f"{k} = ?" for k in extra] + ["state = ?", "reason = ?", "updated_at = ?"]
        )
        values = [*extra.values(), state, reason, _now(), self.key, session_id]
        with self._tx() as db:
            db.execute(
                f"UPDATE backfill_sessions SET {sets} WHERE run_key = ? AND session_id = ?",
                values,
            )

    def bump_attempts(self, session_id: str) -> int:
        """Count one more attempt at a session, leased to this process until the session
        leaves the judging states; returns the new count."""
        owner = my_token(self.path)
        with self._tx() as db:
            db.execute(
                "UPDATE backfill_sessions SET attempts = attempts + 1, owner = ?, updated_at = ? "
                "WHERE run_key = ? AND session_id = ?",
                (owner, _now(), self.key, session_id),
            )
            row = db.execute(
                "SELECT attempts FROM backfill_sessions WHERE run_key = ? AND session_id = ?",
                (self.key, session_id),
            ).fetchone()
        return int(row[0]) if row else 0

    def reclaim(self) -> list[str]:
        """Give back the attempts of sessions a dead run of this key was judging.

        A run killed mid-call (`kill -9`, OOM) never learnt the outcome, so the attempt it
        counted is not a failure: it must not use up `--max-attempts`. Rows leased by a
        process that is still running (another copy of the same command) are left alone.

        Returns:
            The sessions whose attempt was given back.
        """
        cur = self._conn().execute(
            "SELECT session_id, owner, state FROM backfill_sessions "
            "WHERE run_key = ? AND owner IS NOT NULL",
            (self.key,),
        )
        rows = [dict(r) for r in cur]
        alive = {o: is_alive(self.path, o) for o in {r["owner"] for r in rows}}
        dead = [r for r in rows if not alive[r["owner"]]]
        with self._tx() as db:
            db.executemany(
                "UPDATE backfill_sessions SET attempts = MAX(attempts - 1, 0), owner = NULL, "
                "reason = COALESCE(reason, ?), updated_at = ? "
                "WHERE run_key = ? AND session_id = ? AND owner = ?",
                [(_INTERRUPTED, _now(), self.key, r["session_id"], r["owner"]) for r in dead],
            )
        return [r["session_id"] for r in dead]

    def mark_queued(self, session_ids: Iterable[str]) -> None:
        """Remember that these sessions were put on the annotation queue."""
        with self._tx() as db:
            db.executemany(
                "UPDATE backfill_sessions SET queued = 1 WHERE run_key = ? AND session_id = ?",
                [(self.key, sid) for sid in session_ids],
            )

    def queued(self) -> set[str]:
        cur = self._conn().execute(
            "SELECT session_id FROM backfill_sessions WHERE run_key = ? AND queued = 1",
            (self.key,),
        )
        return {row[0] for row in cur}

    # --- Message Batches -------------------------------------------------------------

    def add_intent(
        self, phase: str, custom_ids: list[str], session_ids: list[str], fingerprint: str
    ) -> dict[str, Any]:
        """Record, before `create`, the batch about to be submitted (`jobs.batch_intents`).

        Returns:
            The intent row (`intent_id`, `created_at`, …) as `open_intents` gives it.
        """
        row = {
            "intent_id": uuid.uuid4().hex,
            "phase": phase,
            "custom_ids": list(custom_ids),
            "session_ids": list(session_ids),
            "fingerprint": fingerprint,
            "created_at": _now(),
            "state": "open",
            "batch_id": None,
        }
        with self._tx() as db:
            db.execute(
                "INSERT INTO backfill_batch_intents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.key,
                    row["intent_id"],
                    phase,
                    json.dumps(row["custom_ids"]),
                    json.dumps(row["session_ids"]),
                    fingerprint,
                    row["created_at"],
                    "open",
                    None,
                ),
            )
        return row

    def intents(self, state: str) -> list[dict[str, Any]]:
        """This run's batch intents in `state` (open, adopted, …), oldest first."""
        cur = self._conn().execute(
            "SELECT * FROM backfill_batch_intents WHERE run_key = ? AND state = ? "
            "ORDER BY created_at",
            (self.key, state),
        )
        return [
            {
                **dict(r),
                "custom_ids": json.loads(r["custom_ids"]),
                "session_ids": json.loads(r["session_ids"]),
            }
            for r in cur
        ]

    def set_intent(self, intent_id: str, state: str, batch_id: str | None = None) -> None:
        """Close an intent: `abandoned` (nothing found: resubmitted), `verified`, ..."""
        with self._tx() as db:
            db.execute(
                "UPDATE backfill_batch_intents SET state = ?, batch_id = COALESCE(?, batch_id) "
                "WHERE run_key = ? AND intent_id = ?",
                (state, batch_id, self.key, intent_id),
            )

    def reject_adoption(self, batch_id: str) -> None:
        """An adopted batch's results were not the intent's requests: not ours after all."""
        with self._tx() as db:
            db.execute(
                "UPDATE backfill_batch_intents SET state = 'rejected' "
                "WHERE run_key = ? AND batch_id = ? AND state = 'adopted'",
                (self.key, batch_id),
            )
            db.execute(
                "UPDATE backfill_batches SET status = 'rejected' WHERE run_key = ? AND batch_id = ?",
                (self.key, batch_id),
            )

    def known_batch_ids(self) -> set[str]:
        """Every batch id any run in this file recorded (none of them is an orphan)."""
        cur = self._conn().execute("SELECT batch_id FROM backfill_batches")
        return {row[0] for row in cur}

    def add_batch(
        self,
        batch_id: str,
        phase: str,
        custom_ids: list[str],
        session_ids: Iterable[str] = (),
        *,
        intent: str | None = None,
        how: str = "submitted",
    ) -> None:
        """Record a submitted (or adopted) batch, close its intent and move its sessions to
        `fetched` in ONE transaction.

        A kill before it leaves the intent open: the next start adopts the batch or, when
        the server never made one, submits again (`jobs.batch_intents`); after it, the
        rerun polls this batch. The attempt now belongs to the batch, which outlives this
        process: no lease. `how` is `submitted`, or `adopted` for a batch found by its
        request count and not yet checked against its custom ids.
        """
        now = _now()
        with self._tx() as db:
            db.execute(
                "INSERT OR REPLACE INTO backfill_batches VALUES (?, ?, ?, ?, ?, ?)",
                (self.key, batch_id, phase, "in_progress", json.dumps(custom_ids), now),
            )
            if intent is not None:
                db.execute(
                    "UPDATE backfill_batch_intents SET state = ?, batch_id = ? "
                    "WHERE run_key = ? AND intent_id = ?",
                    (how, batch_id, self.key, intent),
                )
            db.executemany(
                "UPDATE backfill_sessions SET state = 'fetched', reason = ?, batch_id = ?, "
                "owner = NULL, updated_at = ? WHERE run_key = ? AND session_id = ?",
                [(f"in batch {batch_id}", batch_id, now, self.key, sid) for sid in session_ids],
            )

    def batches(self, status: str | None = None) -> list[dict[str, Any]]:
        """Batches of this run (optionally only those with `status`), oldest first."""
        sql = "SELECT * FROM backfill_batches WHERE run_key = ?"
        args: list[Any] = [self.key]
        if status:
            sql += " AND status = ?"
            args.append(status)
        cur = self._conn().execute(sql + " ORDER BY created_at", args)
        return [{**dict(r), "custom_ids": json.loads(r["custom_ids"])} for r in cur]

    def set_batch_status(self, batch_id: str, status: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE backfill_batches SET status = ? WHERE run_key = ? AND batch_id = ?",
                (status, self.key, batch_id),
            )

    def close(self) -> None:
        """Close every thread's connection (call it when the run's threads are done)."""
        with self._conns_lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()
        self._local = threading.local()


def record_push(
    path: Path, session_id: str, judge: str, model: str | None, rubric_version: str
) -> int:
    """A card pushed outside a backfill (`scorer scores push`): every run of this judge
    identity that stored it and waits to push it moves to `written`, so its next start
    does not push the same seven scores again.

    Returns:
        How many ledger rows moved (0 when the file has no ledger).
    """
    with write_lock(path), closing(sqlite3.connect(path, timeout=30)) as db, db:
        if not db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'backfill_sessions'"
        ).fetchone():
            return 0
        cur = db.execute(
            "UPDATE backfill_sessions SET state = 'written', reason = ?, traceback = NULL, "
            "updated_at = ? WHERE session_id = ? AND state = 'stored' AND run_key IN ("
            "SELECT run_key FROM backfill_runs WHERE json_extract(params, '$.judge') = ? "
            "AND json_extract(params, '$.model') IS ? "
            "AND json_extract(params, '$.rubric_version') = ?)",
            ("pushed by scorer scores push", _now(), session_id, judge, model, rubric_version),
        )
        return cur.rowcount


class _Tx:
    """`with` block = one IMMEDIATE transaction on an autocommit connection, taken under
    the ledger's write lock."""

    def __init__(self, conn: sqlite3.Connection, lock: threading.RLock) -> None:
        self.conn = conn
        self.lock = lock

    def __enter__(self) -> sqlite3.Connection:
        self.lock.acquire()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except BaseException:
            self.lock.release()
            raise
        return self.conn

    def __exit__(self, exc_type: object, *rest: object) -> None:
        try:
            self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
        finally:
            self.lock.release()
