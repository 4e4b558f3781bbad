"""The hook ledger: which session was scored from which transcript, who is scoring it
now, and what automatic scoring spent today.

It lives in the score store's SQLite file (own tables, created here, like the backfill
ledger), so hooks of different Claude Code windows, which are different processes,
agree through SQLite's locking: a claim is one `BEGIN IMMEDIATE` transaction.

One row per (session, judge identity). `identity` names what makes a score comparable
(judge kind, model, rubric version and hash); `fingerprint` is a hash of the transcript
(and its subagent files) the row's run was made from. So:

- the same transcript and identity again → not judged again;
- a resumed session (more events, another fingerprint) → judged again when it ends;
- a hook that arrives while another process is judging the session → does not judge;
  if it saw a newer transcript, the running process judges once more when it finishes
  (`pending`);
- a `running` row whose process is gone (or older than `STALE_AFTER`) is taken over.

States::

    running → scored | unscored | skipped (too small) | capped (cost cap) | failed
            → queued → submitted → scored | unscored | failed   (SCORER_HOOK_MODE=batch)

A `queued` session waits for a Message Batch (`jobs.hook.queue`): a hook with more work
updates its fingerprint, an unchanged one leaves it. A `submitted` one is in a batch
(`batch_id`) and holds its cost reservation until it is collected; a hook that saw more
work meanwhile leaves the newer fingerprint `pending`, and the collector queues it again.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from scorer._sqlite import connect, transaction, write_lock
from scorer.errors import SinkError

State = Literal[
    "running", "scored", "unscored", "skipped", "capped", "failed", "queued", "submitted"
]
STALE_AFTER = timedelta(hours=3)
"""A `running` claim this old is abandoned even if its pid is alive (pids get reused)."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS hook_sessions (
    session_id TEXT NOT NULL,
    identity TEXT NOT NULL,
    state TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    pending TEXT,
    pid INTEGER,
    trigger TEXT NOT NULL,
    transcript TEXT,
    reason TEXT,
    retry INTEGER NOT NULL DEFAULT 0,
    reserved_usd REAL NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    runs INTEGER NOT NULL DEFAULT 0,
    started_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    queued_at TEXT,
    batch_id TEXT,
    PRIMARY KEY (session_id, identity)
);
CREATE TABLE IF NOT EXISTS hook_spend (
    day TEXT NOT NULL,
    session_id TEXT NOT NULL,
    cost_usd REAL NOT NULL,
    automatic INTEGER NOT NULL,
    at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS hook_spend_day ON hook_spend (day);
CREATE TABLE IF NOT EXISTS hook_triggers (
    session_id TEXT PRIMARY KEY,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    at TEXT NOT NULL
);
"""

_DONE: frozenset[str] = frozenset({"scored", "unscored", "skipped"})
"""States that stand while the transcript is unchanged."""
_CARDS: frozenset[str] = frozenset({"scored", "unscored"})
"""States with a stored card (what an explicit request shows instead of judging again)."""
_WORKING: frozenset[str] = frozenset({"running", "submitted"})
"""States in which the session is being judged: a newer transcript waits as `pending`."""
_NEWER = ("queued_at", "batch_id")
"""Columns newer than a ledger file written by an older version (added on open)."""


def _now() -> datetime:
    return datetime.now(UTC)


def today() -> str:
    """The UTC day the daily cost cap counts in."""
    return _now().date().isoformat()


def pid_alive(pid: int | None) -> bool:
    """True when a process with this id exists (ours or another user's)."""
    if not pid or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class Claim:
    """The answer to `HookLedger.claim`."""

    granted: bool
    reason: str = ""
    """Why not (or, when granted, what was there before)."""
    previous: State | None = None


def decide(
    row: dict[str, Any] | None,
    fingerprint: str,
    *,
    now: datetime,
    alive: bool,
    force: bool,
    explicit: bool = False,
) -> tuple[bool, str]:
    """Whether a process may score a session given its ledger row (pure).

    Args:
        row: The session's row for this judge identity, or None.
        fingerprint: The transcript's fingerprint now.
        now: The current time.
        alive: Whether the row's process is still running.
        force: Score even an unchanged transcript (`--rescore`).
        explicit: Asked for by name (`--now`): only a card of this very transcript
            stands; a skip, a cap or a failure of the automatic path does not.

    Returns:
        (granted, reason).
    """
    if row is None:
        return True, "first time"
    same = row["fingerprint"] == fingerprint
    if row["state"] == "running":
        started = datetime.fromisoformat(row["started_at"])
        if alive and now - started < STALE_AFTER:
            return False, f"being scored by process {row['pid']}"
        return True, f"took over from process {row['pid']} (gone)"
    if row["state"] == "submitted":  # already paid for: even `--rescore` waits for it
        return False, f"in Message Batch {row['batch_id'] or '(being sent)'}"
    if force:
        return True, "asked for"
    if not same:
        return True, "the transcript changed"
    if row["state"] in (_CARDS if explicit else _DONE):
        return False, f"unchanged since it was {row['state']}"
    if row["state"] == "queued" and not explicit:
        return False, "already queued for a Message Batch"
    if explicit:
        return True, f"asked for after {row['state']}"
    if row["state"] == "failed" and not row["retry"]:
        return False, f"unchanged since it failed ({row['reason']})"
    return True, f"retrying after {row['state']}"


def committed_today(db: sqlite3.Connection, session_id: str, identity: str) -> float:
    """USD automatic scoring spent today plus what other sessions hold: those being judged
    now (`running`, unless abandoned) and those in a Message Batch (`submitted`)."""
    horizon = (_now() - STALE_AFTER).isoformat()
    spent = db.execute(
        "SELECT COALESCE(SUM(cost_usd), 0) FROM hook_spend WHERE day = ? AND automatic",
        (today(),),
    ).fetchone()[0]
    held = db.execute(
        "SELECT COALESCE(SUM(reserved_usd), 0) FROM hook_sessions WHERE ((state = 'running' "
        "AND started_at > ?) OR state = 'submitted') AND NOT (session_id = ? AND identity = ?)",
        (horizon, session_id, identity),
    ).fetchone()[0]
    return float(spent + held)


class HookLedger:
    """The hook tables in the score store's SQLite file.

    Args:
        path: The SQLite file (normally `get_settings().store_path`).

    Raises:
        SinkError: The file cannot be opened or is not an SQLite database.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._write_lock = write_lock(self.path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = connect(self.path)
            with self._write_lock:
                self._db.executescript(_SCHEMA)
                self._add_columns()
        except (sqlite3.Error, OSError) as exc:
            raise SinkError(f"cannot open the hook ledger in {self.path}: {exc}") from exc

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> HookLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; SQLite's errors (a lock held past its wait, a broken
        file) become `SinkError`, which the worker answers with a retry file."""
        try:
            with transaction(self._db, self._write_lock) as db:
                yield db
        except sqlite3.Error as exc:
            raise SinkError(f"the hook ledger in {self.path} failed: {exc}") from exc

    def _one(self, sql: str, params: tuple[Any, ...]) -> sqlite3.Row | None:
        try:
            row: sqlite3.Row | None = self._db.execute(sql, params).fetchone()
        except sqlite3.Error as exc:
            raise SinkError(f"the hook ledger in {self.path} failed: {exc}") from exc
        return row

    def _add_columns(self) -> None:
        have = {r[1] for r in self._db.execute("PRAGMA table_info(hook_sessions)")}
        for column in (c for c in _NEWER if c not in have):
            try:
                self._db.execute(f"ALTER TABLE hook_sessions ADD COLUMN {column} TEXT")
            except sqlite3.OperationalError as exc:  # another process added it first
                if "duplicate column" not in str(exc):
                    raise

    def tx(self) -> AbstractContextManager[sqlite3.Connection]:
        """One `BEGIN IMMEDIATE` transaction on the ledger (for `jobs.hook.queue`)."""
        return self._tx()

    def select(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        """Rows of a read-only query, as dicts (for `jobs.hook.queue`)."""
        return [dict(r) for r in self._db.execute(sql, args).fetchall()]

    # ---- triggers (the Stop debounce) -----------------------------------------------

    def trigger(self, session_id: str, event: str) -> int:
        """Record a hook call for the session; returns its sequence number."""
        with self._tx() as db:
            db.execute(
                "INSERT INTO hook_triggers VALUES (?, 1, ?, ?) ON CONFLICT(session_id) DO "
                "UPDATE SET seq = seq + 1, event = excluded.event, at = excluded.at",
                (session_id, event, _now().isoformat()),
            )
            return int(
                db.execute(
                    "SELECT seq FROM hook_triggers WHERE session_id = ?", (session_id,)
                ).fetchone()[0]
            )

    def latest_trigger(self, session_id: str) -> int:
        row = self._one("SELECT seq FROM hook_triggers WHERE session_id = ?", (session_id,))
        return int(row[0]) if row else 0

    # ---- claims ---------------------------------------------------------------------

    def row(self, session_id: str, identity: str) -> dict[str, Any] | None:
        found = self._one(
            "SELECT * FROM hook_sessions WHERE session_id = ? AND identity = ?",
            (session_id, identity),
        )
        return dict(found) if found else None

    def claim(
        self,
        session_id: str,
        identity: str,
        fingerprint: str,
        *,
        trigger: str,
        transcript: str,
        force: bool = False,
        explicit: bool = False,
    ) -> Claim:
        """Take the session for this process, or say why not (one transaction; the
        arguments after `fingerprint` are `decide`'s and what the row records)."""
        now = _now()
        with self._tx() as db:
            row = self.row(session_id, identity)
            # A claim of this very process left running is one whose close failed (the
            # store was locked then): this process is not scoring it any more.
            alive = row is not None and row["pid"] != os.getpid() and pid_alive(row["pid"])
            granted, reason = decide(
                row, fingerprint, now=now, alive=alive, force=force, explicit=explicit
            )
            if not granted:
                if (
                    row is not None
                    and row["state"] in _WORKING
                    and row["fingerprint"] != fingerprint
                ):
                    db.execute(
                        "UPDATE hook_sessions SET pending = ?, updated_at = ? "
                        "WHERE session_id = ? AND identity = ?",
                        (fingerprint, now.isoformat(), session_id, identity),
                    )
                    reason += "; it scores the newer transcript when done"
                return Claim(False, reason, row["state"] if row else None)
            db.execute(
                "INSERT INTO hook_sessions (session_id, identity, state, fingerprint, pid, "
                "trigger, transcript, started_at, updated_at) "
                "VALUES (?, ?, 'running', ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(session_id, identity) DO UPDATE SET state = 'running', "
                "fingerprint = excluded.fingerprint, pending = NULL, pid = excluded.pid, "
                "trigger = excluded.trigger, transcript = excluded.transcript, reason = NULL, "
                "retry = 0, reserved_usd = 0, started_at = excluded.started_at, "
                "updated_at = excluded.updated_at",
                (session_id, identity, fingerprint, os.getpid(), trigger, transcript,
                 now.isoformat(), now.isoformat()),
            )  # fmt: skip
        return Claim(True, reason, row["state"] if row else None)

    def reserve(
        self, session_id: str, identity: str, estimate: float, cap: float
    ) -> tuple[bool, float]:
        """Hold `estimate` USD of today's cap for this session, if it fits.

        Returns:
            (reserved, what automatic scoring spent or holds today without this session).
        """
        with self._tx() as db:
            committed = committed_today(db, session_id, identity)
            if committed + estimate > cap:
                return False, committed
            db.execute(
                "UPDATE hook_sessions SET reserved_usd = ? WHERE session_id = ? AND identity = ?",
                (estimate, session_id, identity),
            )
        return True, committed

    def finish(
        self,
        session_id: str,
        identity: str,
        state: State,
        *,
        reason: str | None = None,
        retry: bool = False,
        cost_usd: float = 0.0,
        automatic: bool = True,
    ) -> str | None:
        """Close this process's claim; returns a newer fingerprint to score, if one came.

        `queued` keeps the time the session first joined the queue (the batch timer)."""
        now = _now()
        with self._tx() as db:
            row = self.row(session_id, identity)
            if row is None or row["pid"] != os.getpid():
                row = None  # another process took the claim over: leave its row alone
            pending = row["pending"] if row else None
            db.execute(
                "UPDATE hook_sessions SET state = ?, reason = ?, retry = ?, pending = NULL, "
                "reserved_usd = 0, cost_usd = ?, runs = runs + ?, pid = NULL, updated_at = ?, "
                "queued_at = CASE WHEN ? THEN COALESCE(queued_at, ?) END "
                "WHERE session_id = ? AND identity = ? AND pid = ?",
                (state, reason, int(retry), cost_usd, int(state in ("scored", "unscored")),
                 now.isoformat(), state == "queued", now.isoformat(), session_id, identity,
                 os.getpid()),
            )  # fmt: skip
            if cost_usd > 0:
                db.execute(
                    "INSERT INTO hook_spend VALUES (?, ?, ?, ?, ?)",
                    (today(), session_id, cost_usd, int(automatic), now.isoformat()),
                )
        if row is None or pending is None or pending == row["fingerprint"]:
            return None
        return str(pending)

    def spent_today(self) -> float:
        """USD automatic scoring spent today (UTC)."""
        row = self._one(
            "SELECT COALESCE(SUM(cost_usd), 0) FROM hook_spend WHERE day = ? AND automatic",
            (today(),),
        )
        return float(row[0]) if row else 0.0
