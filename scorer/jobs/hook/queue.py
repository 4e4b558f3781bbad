"""The hook's Message Batches queue: rows of the hook ledger in batch mode (pure SQL).

    queued ─(due: SCORER_HOOK_BATCH_SIZE waiting, or the oldest waited
             SCORER_HOOK_BATCH_MINUTES)─► submitted ─(its batch ended)─► scored | unscored
             | failed, and queued again when the session gained work while in the batch

A session joins the queue through the worker's claim (`HookLedger.finish(state="queued")`
keeps the time it first joined). `submit` moves it on in one transaction with its
batch-priced reservation of today's cap (or `capped`), `collected` closes it with what
the batch really cost, and the one process that keeps the queue's time while sessions
wait is recorded in `hook_batch_timer` (`keep` / `release`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from scorer.jobs.hook.ledger import HookLedger, committed_today, pid_alive, today

TIMER_GRACE = timedelta(minutes=10)
"""A timer this long past its deadline is abandoned even if its pid is alive (reuse)."""

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS hook_batch_timer "
    "(id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, until TEXT NOT NULL)"
)


def _now() -> datetime:
    return datetime.now(UTC)


class BatchQueue:
    """The queue's rows and timer in a hook ledger.

    Args:
        ledger: An open hook ledger.
        now: The current time (tests pass a fake clock).
    """

    def __init__(self, ledger: HookLedger, now: Callable[[], datetime] = _now) -> None:
        self.ledger, self.now = ledger, now

    def rows(self, state: str) -> list[dict[str, Any]]:
        """Every row in `state` (`queued` or `submitted`), the longest waiting first."""
        return self.ledger.select(
            "SELECT * FROM hook_sessions WHERE state = ? "
            "ORDER BY COALESCE(queued_at, updated_at), session_id",
            (state,),
        )

    def oldest(self) -> datetime | None:
        """When the longest-waiting queued session joined the queue (None: nothing queued)."""
        queued = [r["queued_at"] or r["updated_at"] for r in self.rows("queued")]
        return datetime.fromisoformat(min(queued)) if queued else None

    def submit(
        self, row: dict[str, Any], fingerprint: str, estimate: float, cap: float
    ) -> tuple[bool | None, float]:
        """Send a queued session: reserve its batch-priced `estimate` of today's cap and
        mark it `submitted` under the work `fingerprint` it is judged on, or `capped`.

        Args:
            row: The queued row as `rows` gave it.
            fingerprint: The work fingerprint of the snapshot about to be sent.
            estimate: Its batch-priced cost estimate (USD).
            cap: `SCORER_HOOK_DAILY_COST_CAP`.

        Returns:
            (True: submitted, False: capped, None: the row changed meanwhile and was left
            alone; what automatic scoring spent or holds today without it).
        """
        sid, identity = row["session_id"], row["identity"]
        now = self.now().isoformat()
        with self.ledger.tx() as db:
            current = db.execute(
                "SELECT state, fingerprint FROM hook_sessions WHERE session_id = ? "
                "AND identity = ?",
                (sid, identity),
            ).fetchone()
            if current is None or current["state"] != "queued":
                return None, 0.0  # taken by `/score` meanwhile
            if current["fingerprint"] not in (row["fingerprint"], fingerprint):
                return None, 0.0  # it grew again meanwhile: the next round sends it
            committed = committed_today(db, sid, identity)
            if committed + estimate > cap:
                db.execute(
                    "UPDATE hook_sessions SET state = 'capped', retry = 1, queued_at = NULL, "
                    "reason = ?, updated_at = ? WHERE session_id = ? AND identity = ?",
                    ("over the daily cost cap at batch prices", now, sid, identity),
                )
                return False, committed
            db.execute(
                "UPDATE hook_sessions SET state = 'submitted', fingerprint = ?, "
                "reserved_usd = ?, batch_id = NULL, reason = 'being sent', pid = NULL, "
                "updated_at = ? WHERE session_id = ? AND identity = ?",
                (fingerprint, estimate, now, sid, identity),
            )
        return True, committed

    def in_batch(self, session_id: str, identity: str, batch_id: str) -> None:
        """Record the batch a submitted session is in."""
        with self.ledger.tx() as db:
            db.execute(
                "UPDATE hook_sessions SET batch_id = ?, reason = ?, updated_at = ? "
                "WHERE session_id = ? AND identity = ? AND state = 'submitted'",
                (batch_id, f"in Message Batch {batch_id}", self.now().isoformat(),
                 session_id, identity),
            )  # fmt: skip

    def give_up(self, session_id: str, identity: str, state: str, reason: str) -> None:
        """A queued session that cannot be sent (`skipped`: no work; `failed`: unreadable)."""
        with self.ledger.tx() as db:
            db.execute(
                "UPDATE hook_sessions SET state = ?, reason = ?, retry = 0, queued_at = NULL, "
                "updated_at = ? WHERE session_id = ? AND identity = ? AND state = 'queued'",
                (state, reason, self.now().isoformat(), session_id, identity),
            )

    def collected(
        self,
        session_id: str,
        identity: str,
        state: str,
        *,
        reason: str | None,
        cost_usd: float,
        batch_id: str | None,
    ) -> str | None:
        """Close a submitted session with its batch's outcome and count what it cost today.

        A `failed` one is retried by its next hook, like a failed direct judgement.

        Returns:
            The newer work fingerprint it was queued again under, when a hook saw the
            session grow while it was in the batch (None otherwise).
        """
        now = self.now().isoformat()
        with self.ledger.tx() as db:
            row = db.execute(
                "SELECT * FROM hook_sessions WHERE session_id = ? AND identity = ?",
                (session_id, identity),
            ).fetchone()
            if cost_usd > 0:  # billed whatever became of the row (`--rescore` took it over)
                db.execute(
                    "INSERT INTO hook_spend VALUES (?, ?, ?, 1, ?)",
                    (today(), session_id, cost_usd, now),
                )
            if row is None or row["state"] != "submitted":
                return None
            db.execute(
                "UPDATE hook_sessions SET state = ?, reason = ?, retry = ?, pending = NULL, "
                "reserved_usd = 0, cost_usd = ?, runs = runs + ?, batch_id = ?, "
                "queued_at = NULL, updated_at = ? WHERE session_id = ? AND identity = ?",
                (state, reason, int(state == "failed"), cost_usd,
                 int(state in ("scored", "unscored")), batch_id, now, session_id, identity),
            )  # fmt: skip
            newer = row["pending"]
            if not newer or newer == row["fingerprint"]:
                return None
            db.execute(
                "UPDATE hook_sessions SET state = 'queued', fingerprint = ?, queued_at = ?, "
                "reason = 'gained work while in a Message Batch' "
                "WHERE session_id = ? AND identity = ?",
                (newer, now, session_id, identity),
            )
        return str(newer)

    # ---- the timer: one process keeps the queue's time --------------------------------

    def keep(self, until: datetime) -> bool:
        """Keep the queue's time until `until`, unless another live process does."""
        now = self.now()
        with self.ledger.tx() as db:
            db.execute(_SCHEMA)
            timer = db.execute("SELECT pid, until FROM hook_batch_timer").fetchone()
            if (
                timer is not None
                and timer["pid"] != os.getpid()
                and pid_alive(timer["pid"])
                and datetime.fromisoformat(timer["until"]) + TIMER_GRACE > now
            ):
                return False
            db.execute(
                "INSERT INTO hook_batch_timer VALUES (1, ?, ?) ON CONFLICT(id) DO UPDATE "
                "SET pid = excluded.pid, until = excluded.until",
                (os.getpid(), until.isoformat()),
            )
        return True

    def release(self) -> bool:
        """Stop keeping time if nothing is queued (True); False: something is."""
        with self.ledger.tx() as db:
            if db.execute("SELECT 1 FROM hook_sessions WHERE state = 'queued'").fetchone():
                return False
            db.execute(_SCHEMA)
            db.execute("DELETE FROM hook_batch_timer WHERE pid = ?", (os.getpid(),))
        return True
