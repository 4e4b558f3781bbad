"""The local score store: one SQLite file (`$SCORER_HOME/scores.sqlite3`).

Two tables: `runs` (one judged session: provenance, usage, cost, Langfuse push state)
and `scores` (one row per dimension of a run). Every write is one transaction, so a
crash mid-write leaves nothing half-stored. Re-scoring a session with the same rubric
version, judge kind and model in the same collection replaces the earlier run; another
model or rubric version is kept beside it (calibration compares them), and so is a run
of the other collection: a `calibration` run never replaces, hides or stands in for a
`production` one (the default of every identity lookup here), nor the other way round.

Everything stored passes through `redact_value` first.

Threads: one connection guarded by a lock (`check_same_thread=False`). SQLite serialises
writes anyway and a worker pool spends its time waiting on the judge, not the store.
Other processes can read and write the same file concurrently (WAL mode, busy timeout).

Migrations (`_store_schema.py`): `_MIGRATIONS[i]` upgrades the schema from version i to
i+1, in place, in one transaction, when a store is opened. A store newer than this
scorer, or one that is not a score store, fails with a one-line `SinkError`.

The redacted rendered timeline a card carries (`Scorecard.timeline`) is saved beside the
run (table `timelines`, one per session), so the viewer can show the cited events.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
import threading
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scorer._sqlite import connect, transaction, write_lock
from scorer.errors import SinkError
from scorer.models import Scorecard, TimelineEvent
from scorer.settings import get_settings
from scorer.sinks._store_query import LIST_RUNS as _LIST_RUNS
from scorer.sinks._store_query import (
    RunFilter,
    RunSummary,
    ScoreValue,
    StoredRun,
    like_escape,
    recency,
)
from scorer.sinks._store_query import filters as _filters
from scorer.sinks._store_query import iso as _iso
from scorer.sinks._store_rows import (
    FIRST_SCORED,
    card_from,
    redacted,
    run_row,
    score_rows,
    timeline_row,
)
from scorer.sinks._store_schema import AFTER as _AFTER
from scorer.sinks._store_schema import MIGRATIONS as _MIGRATIONS

__all__ = ["FIRST_SCORED", "RunFilter", "RunSummary", "ScoreStore", "ScoreValue", "StoredRun"]

_HINT = "; set SCORER_HOME to another folder"
"""Ends an error opening the store: how to get past it."""


class ScoreStore:
    """The SQLite score store.

    Example:
        >>> store = ScoreStore()            # $SCORER_HOME/scores.sqlite3
        >>> run_id = store.save(card)
        >>> store.latest(card.session_id).overall
    """

    name = "store"
    remote = False
    """A `ScoreSink` that is the local record: `publish` writes it first."""

    def __init__(self, path: Path | None = None, *, open_now: bool = True) -> None:
        """Open the store (`open_now=False`: on first use, so a command that fails before
        writing leaves no file behind)."""
        self.path = Path(path) if path else get_settings().store_path
        self._lock = threading.RLock()
        """Guards the one connection (reads too)."""
        self._write_lock = write_lock(self.path)
        """Shared with the ledger, which writes the same file (see `scorer._sqlite`)."""
        self._conn: sqlite3.Connection | None = None
        if open_now:
            self._connect()

    @property
    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            self._connect()
        assert self._conn is not None
        return self._conn

    def _connect(self) -> None:
        with self._lock:
            if self._conn is not None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._conn = connect(self.path)
                self._conn.execute("PRAGMA foreign_keys=ON")
                self._migrate()
            except OSError as e:
                self.close()
                reason = (e.strerror or e.__class__.__name__).lower()
                raise SinkError(f"cannot open score store {self.path}: {reason}{_HINT}") from None
            except sqlite3.Error as e:
                self.close()
                raise SinkError(f"cannot open score store {self.path}: {e}{_HINT}") from None
            except BaseException:  # a store from a newer version, say
                self.close()
                raise

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> ScoreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tx(self) -> AbstractContextManager[sqlite3.Connection]:
        """One write transaction; rolled back entirely on any error."""
        return transaction(self._db, self._lock, self._write_lock)

    def _query(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as e:
                raise SinkError(f"score store query failed ({self.path}): {e}") from e

    @property
    def schema_version(self) -> int:
        return self._query("SELECT version FROM schema_version")[0]["version"]

    def _migrate(self) -> None:
        with self._tx() as db:
            db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            row = db.execute("SELECT version FROM schema_version").fetchone()
            version = row["version"] if row else 0
            if row is None:
                db.execute("INSERT INTO schema_version VALUES (0)")
            if version > len(_MIGRATIONS):
                raise SinkError(
                    f"{self.path} has schema v{version}, newer than this scorer "
                    f"(v{len(_MIGRATIONS)}); upgrade session-scorer"
                )
            for reached, script in enumerate(_MIGRATIONS[version:], start=version + 1):
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
                if reached in _AFTER:
                    _AFTER[reached](db)
            db.execute("UPDATE schema_version SET version = ?", (len(_MIGRATIONS),))

    # ---- writes ------------------------------------------------------------------------

    def write(self, card: Scorecard) -> str | None:
        """`ScoreSink.write`: save the card; returns the store's path."""
        self.save(card)
        return str(self.path)

    def save(self, scorecard: Scorecard) -> int:
        """Store a scorecard (redacted), replacing an earlier run of the same session,
        rubric version, judge kind, model and collection. Returns the new run id.

        Raises:
            SinkError: The database could not be written; nothing was stored.
        """
        scores = score_rows(scorecard)
        timeline = timeline_row(scorecard)
        card = scorecard
        key = (card.session_id, card.rubric_version, card.judge, card.model, card.collection)
        same_key = (
            "session_id = ? AND rubric_version = ? AND judge = ? AND model IS ? AND collection = ?"
        )
        try:
            with self._tx() as db:
                prev = db.execute(
                    f"SELECT created_at, meta FROM runs WHERE {same_key} ORDER BY created_at",
                    key,
                ).fetchone()
                # A re-score keeps the first score's time: Langfuse updates a score only
                # when both its id and its timestamp repeat (see sinks/langfuse.py).
                first = json.loads(prev["meta"] or "{}").get(FIRST_SCORED) if prev else None
                scorecard.meta[FIRST_SCORED] = first or (
                    prev["created_at"] if prev else _iso(scorecard.created_at)
                )
                row = run_row(scorecard)
                columns = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                db.execute(f"DELETE FROM runs WHERE {same_key}", key)
                run_id = db.execute(
                    f"INSERT INTO runs ({columns}) VALUES ({marks})", tuple(row.values())
                ).lastrowid
                assert run_id is not None  # a successful INSERT always sets lastrowid
                self._insert_scores(db, run_id, scores)
                if timeline is not None:
                    db.execute("INSERT OR REPLACE INTO timelines VALUES (?, ?, ?, ?, ?)", timeline)
        except sqlite3.Error as e:
            raise SinkError(f"cannot save scores for {scorecard.session_id}: {e}") from e
        return run_id

    def _insert_scores(
        self, db: sqlite3.Connection, run_id: int, rows: list[tuple[Any, ...]]
    ) -> None:
        db.executemany(
            "INSERT INTO scores (run_id, session_id, name, value, label, normalized, rationale,"
            " evidence, position) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(run_id, *r) for r in rows],
        )

    def mark_pushed(
        self,
        session_id: str,
        judge: str,
        model: str | None,
        rubric_version: str,
        *,
        error: str | None = None,
        lost: bool = False,
        collection: str = "production",
    ) -> int:
        """Record a Langfuse push: success sets `pushed_at`; `error` keeps it unpushed and
        stores the (redacted) reason; `lost` (with `error`) also clears `pushed_at`, for a
        push Langfuse accepted but did not keep. Returns how many runs were updated."""
        if error is None:
            sets, params = "pushed_at = ?, push_error = NULL", (_iso(datetime.now(UTC)),)
        elif lost:
            sets, params = "pushed_at = NULL, push_error = ?", (redacted(error),)
        else:
            sets, params = "push_error = ?", (redacted(error),)
        with self._tx() as db:
            cur = db.execute(
                f"UPDATE runs SET {sets} WHERE session_id = ? AND judge = ? AND model IS ? "
                "AND rubric_version = ? AND collection = ?",
                (*params, session_id, judge, model, rubric_version, collection),
            )
            return cur.rowcount

    # ---- reads -------------------------------------------------------------------------

    def _cards(self, where: str, params: tuple[Any, ...], tail: str = "") -> list[Scorecard]:
        return [card for _, card in self._load(where, params, tail)]

    def _load(
        self, where: str, params: tuple[Any, ...], tail: str = ""
    ) -> list[tuple[sqlite3.Row, Scorecard]]:
        runs = self._query(f"SELECT * FROM runs WHERE {where} {tail}", params)
        if not runs:
            return []
        ids = [r["id"] for r in runs]
        by_run: dict[int, list[sqlite3.Row]] = {i: [] for i in ids}
        for chunk_start in range(0, len(ids), 500):  # stay under SQLite's variable limit
            chunk = ids[chunk_start : chunk_start + 500]
            marks = ", ".join("?" for _ in chunk)
            for s in self._query(
                f"SELECT * FROM scores WHERE run_id IN ({marks}) ORDER BY run_id, position",
                tuple(chunk),
            ):
                by_run[s["run_id"]].append(s)
        return [(r, card_from(r, by_run[r["id"]])) for r in runs]

    def latest(
        self,
        session_id: str,
        *,
        judge: str | None = None,
        model: str | None = None,
        collection: str | None = None,
    ) -> Scorecard | None:
        """The most recent run of a session (optionally of one judge kind / model /
        collection; None: any)."""
        where, params = _filters(
            session_id=session_id, judge=judge, model=model, collection=collection
        )
        cards = self._cards(where, params, "ORDER BY created_at DESC, id DESC LIMIT 1")
        return cards[0] if cards else None

    def scorecards(
        self,
        judge: str | None = None,
        model: str | None = None,
        rubric_version: str | None = None,
        collection: str | None = None,
    ) -> list[Scorecard]:
        """Every stored run matching the filters, oldest first (for calibration: every
        collection unless `collection` is given)."""
        where, params = _filters(
            judge=judge, model=model, rubric_version=rubric_version, collection=collection
        )
        return self._cards(where, params, "ORDER BY created_at, id")

    def unpushed(self) -> list[Scorecard]:
        """Production runs not yet pushed to Langfuse (including ones whose push failed),
        oldest first. Calibration runs are never pushed: their scores would take the ids,
        hence the place, of the production scores of the same session."""
        return self._cards(
            "pushed_at IS NULL AND collection = 'production'", (), "ORDER BY created_at, id"
        )

    def is_scored(
        self,
        session_id: str,
        rubric_version: str,
        model: str | None,
        judge: str,
        collection: str = "production",
    ) -> bool:
        """True when a *scored* run exists for this identity in `collection` (unscored
        runs are retried; a calibration run never counts for production)."""
        rows = self._query(
            "SELECT 1 FROM runs WHERE session_id = ? AND rubric_version = ? AND model IS ? "
            "AND judge = ? AND collection = ? AND status = 'scored' LIMIT 1",
            (session_id, rubric_version, model, judge, collection),
        )
        return bool(rows)

    def list_runs(
        self,
        limit: int = 50,
        session_id: str | None = None,
        judge: str | None = None,
        since: datetime | None = None,
        where: RunFilter | None = None,
    ) -> list[RunSummary]:
        """The newest runs first, with overall, goal label and goal probability joined in.

        Args:
            limit: At most this many.
            session_id: Only this session.
            judge: Only this judge kind.
            since: Only runs scored at or after this time.
            where: More filters (project, source, search, collection...); None: every
                run of every collection.
        """
        clause, params = (where or RunFilter(collection=None)).sql("r.")
        extra, more = _filters("r.", session_id=session_id, judge=judge)
        clause, params = f"{clause} AND {extra}", (*params, *more)
        if since is not None:
            clause += " AND r.created_at >= ?"
            params += (_iso(since),)
        rows = self._query(
            f"{_LIST_RUNS} WHERE {clause} ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
            (*params, limit),
        )
        scores = self._score_values([r["id"] for r in rows])
        plain = [k for k in RunSummary.model_fields if k not in ("run_id", "scores", "session")]
        return [
            RunSummary(
                run_id=r["id"],
                scores=scores.get(r["id"], {}),
                session=json.loads(r["session_info"] or "{}"),
                **{k: r[k] for k in plain},
            )
            for r in rows
        ]

    def count_runs(self, where: RunFilter | None = None) -> int:
        """How many stored runs match `where` (None: every run of every collection)."""
        clause, params = (where or RunFilter(collection=None)).sql()
        return int(self._query(f"SELECT COUNT(*) AS n FROM runs WHERE {clause}", params)[0]["n"])

    def _score_values(self, run_ids: list[int]) -> dict[int, dict[str, ScoreValue]]:
        by_run: dict[int, dict[str, ScoreValue]] = {}
        for start in range(0, len(run_ids), 500):  # stay under SQLite's variable limit
            chunk = run_ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            for s in self._query(
                "SELECT run_id, name, value, label, normalized FROM scores "
                f"WHERE run_id IN ({marks}) ORDER BY run_id, position",
                tuple(chunk),
            ):
                by_run.setdefault(s["run_id"], {})[s["name"]] = ScoreValue(
                    value=s["value"], label=s["label"], normalized=s["normalized"]
                )
        return by_run

    def runs(self, where: RunFilter | None = None) -> list[StoredRun]:
        """Stored runs matching `where`, oldest session start first (viewer, export)."""
        clause, params = (where or RunFilter()).sql()
        order = "ORDER BY COALESCE(started_at, ended_at, created_at), created_at, id"
        stored = [
            StoredRun(run_id=r["id"], pushed_at=r["pushed_at"], push_error=r["push_error"], card=c)
            for r, c in self._load(clause, params, order)
        ]
        if where is not None and where.latest_per_session:
            newest = {r.card.session_id: r for r in sorted(stored, key=recency)}
            keep = {r.run_id for r in newest.values()}
            stored = [r for r in stored if r.run_id in keep]
        return stored

    def timeline(self, session_id: str) -> list[TimelineEvent] | None:
        """The redacted rendered timeline stored for a session, or None."""
        blob = self.timeline_blob(session_id)
        if blob is None:
            return None
        return [TimelineEvent(*e) for e in json.loads(gzip.decompress(blob))]

    def timeline_blob(self, session_id: str) -> bytes | None:
        """The stored timeline as gzip-compressed JSON `[[index, depth, text], ...]`."""
        rows = self._query("SELECT events FROM timelines WHERE session_id = ?", (session_id,))
        return bytes(rows[0]["events"]) if rows else None

    def session_ids(self) -> list[str]:
        """Every stored session id (calibration runs too), sorted: what a prefix must be
        unique among for `find_sessions` to name one session."""
        rows = self._query("SELECT DISTINCT session_id FROM runs ORDER BY session_id")
        return [r["session_id"] for r in rows]

    def find_sessions(self, prefix: str) -> list[str]:
        """Stored session ids starting with `prefix` (for short ids on the command line)."""
        rows = self._query(
            "SELECT DISTINCT session_id FROM runs WHERE session_id LIKE ? ESCAPE '\\' "
            "ORDER BY session_id",
            (like_escape(prefix) + "%",),
        )
        return [r["session_id"] for r in rows]
