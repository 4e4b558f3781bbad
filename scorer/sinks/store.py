"""The local score store: one SQLite file (`$SCORER_HOME/scores.sqlite3`).

Two tables: `runs` (one judged session: provenance, usage, cost, Langfuse push state)
and `scores` (one row per dimension of a run). Every write is one transaction, so a
crash mid-write leaves nothing half-stored. Re-scoring a session with the same rubric
version, judge kind and model replaces the earlier run; another model or rubric version
is kept beside it (calibration compares them).

Everything stored passes through `redact_value` first.

Threads: one connection guarded by a lock (`check_same_thread=False`). SQLite serialises
writes anyway and a worker pool spends its time waiting on the judge, not the store.
Other processes can read and write the same file concurrently (WAL mode, busy timeout).

Migrations: `_MIGRATIONS[i]` upgrades the schema from version i to i+1. A later table
(e.g. a backfill ledger) is one more entry at the end of the list.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from scorer.errors import SinkError
from scorer.models import DimensionScore, JudgeUsage, Scorecard
from scorer.prepare.redact import redact_value
from scorer.settings import get_settings

__all__ = ["RunSummary", "ScoreStore"]

_MIGRATIONS: list[str] = [
    """
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id      TEXT NOT NULL,
        source          TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
        unscored_reason TEXT,
        raw_reply       TEXT,
        judge           TEXT NOT NULL,
        model           TEXT,
        prompt_version  TEXT NOT NULL,
        prompt_hash     TEXT NOT NULL,
        rubric_version  TEXT NOT NULL,
        rubric_hash     TEXT NOT NULL,
        package_version TEXT NOT NULL,
        recommendation  TEXT,
        summary         TEXT NOT NULL DEFAULT '',
        accomplishments TEXT NOT NULL DEFAULT '[]',
        failures        TEXT NOT NULL DEFAULT '[]',
        unknown_refs    TEXT NOT NULL DEFAULT '[]',
        n_chunks        INTEGER NOT NULL DEFAULT 0,
        input_tokens    INTEGER NOT NULL DEFAULT 0,
        output_tokens   INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        requests        INTEGER NOT NULL DEFAULT 0,
        cost_usd        REAL NOT NULL DEFAULT 0,
        created_at      TEXT NOT NULL,
        meta            TEXT NOT NULL DEFAULT '{}',
        pushed_at       TEXT,
        push_error      TEXT
    );
    CREATE INDEX runs_session ON runs (session_id, created_at);
    CREATE INDEX runs_identity ON runs (session_id, rubric_version, judge, model);
    CREATE INDEX runs_unpushed ON runs (pushed_at) WHERE pushed_at IS NULL;
    CREATE TABLE scores (
        run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        session_id  TEXT NOT NULL,
        name        TEXT NOT NULL,
        value       REAL NOT NULL,
        label       TEXT,
        normalized  REAL NOT NULL,
        rationale   TEXT NOT NULL DEFAULT '',
        evidence    TEXT NOT NULL DEFAULT '[]',
        position    INTEGER NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    CREATE INDEX scores_name ON scores (name);
    """,
]

_RUN_COLUMNS = (
    *("session_id", "source", "status", "unscored_reason", "raw_reply", "judge", "model"),
    *("prompt_version", "prompt_hash", "rubric_version", "rubric_hash", "package_version"),
    *("recommendation", "summary", "accomplishments", "failures", "unknown_refs", "n_chunks"),
    *("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests"),
    *("cost_usd", "created_at", "meta"),
)
_JSON_COLUMNS = ("accomplishments", "failures", "unknown_refs", "meta")
_IN_META = ("unscored_code", "answered_by", "effort", "refusals", "requirements")
"""Card fields without a column of their own: kept in `meta` under `_META_KEY`."""
_META_KEY = "_card"
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests")
_IDENTITY = ("session_id", "source", "judge", "model", "rubric_version", "rubric_hash",
             "prompt_version", "prompt_hash", "package_version", "status", "recommendation")  # fmt: skip


class RunSummary(BaseModel):
    """One stored run, as `scorer scores list` shows it."""

    run_id: int
    session_id: str
    source: str
    status: str
    judge: str
    model: str | None
    rubric_version: str
    overall: float | None
    goal: str | None
    """The goal_achievement label (e.g. `complete`)."""
    recommendation: str | None
    cost_usd: float
    created_at: datetime
    pushed_at: datetime | None
    push_error: str | None


def _iso(dt: datetime) -> str:
    """UTC ISO text, so SQLite's string order is time order."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat()


FIRST_SCORED = "first_scored_at"
"""Meta key: when this session was first scored with this rubric version, judge and model."""


def _run_row(card: Scorecard) -> dict[str, Any]:
    """The run's columns, secrets redacted; identity columns are taken verbatim."""
    data = card.model_dump(mode="json", exclude={"scores"})
    clean, _ = redact_value(data)
    for key in _IDENTITY:
        clean[key] = data[key]
    row = {k: clean[k] for k in _RUN_COLUMNS if k in clean and k not in _USAGE}
    row.update({k: clean["usage"][k] for k in _USAGE})
    row["created_at"] = _iso(card.created_at)
    row["meta"] = {**row["meta"], _META_KEY: {k: clean[k] for k in _IN_META}}
    for key in _JSON_COLUMNS:
        row[key] = json.dumps(row[key], ensure_ascii=False)
    return row


def _score_rows(card: Scorecard) -> list[tuple[Any, ...]]:
    rows = []
    for position, (name, score) in enumerate(card.scores.items()):
        clean, _ = redact_value(score.model_dump(mode="json"))
        evidence = json.dumps(clean["evidence"], ensure_ascii=False)
        rows.append(
            (
                card.session_id,
                name,
                score.value,
                score.label,
                score.normalized,
                clean["rationale"],
                evidence,
                position,
            )
        )
    return rows


def _card_from(run: sqlite3.Row, scores: list[sqlite3.Row]) -> Scorecard:
    data = {k: run[k] for k in _RUN_COLUMNS if k not in _USAGE}
    for key in _JSON_COLUMNS:
        data[key] = json.loads(data[key])
    data.update(data["meta"].pop(_META_KEY, {}))
    data["usage"] = JudgeUsage(**{k: run[k] for k in _USAGE})
    data["scores"] = {
        s["name"]: DimensionScore(
            name=s["name"],
            value=s["value"],
            label=s["label"],
            normalized=s["normalized"],
            rationale=s["rationale"],
            evidence=json.loads(s["evidence"]),
        )
        for s in scores
    }
    return Scorecard.model_validate(data)


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

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path) if path else get_settings().store_path
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(
                self.path, timeout=30, isolation_level=None, check_same_thread=False
            )
            self._db.row_factory = sqlite3.Row
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except (sqlite3.Error, OSError) as e:
            raise SinkError(f"cannot open score store {self.path}: {e}") from e

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ScoreStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; rolled back entirely on any error."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

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
            for script in _MIGRATIONS[version:]:
                for statement in filter(str.strip, script.split(";")):
                    db.execute(statement)
            db.execute("UPDATE schema_version SET version = ?", (len(_MIGRATIONS),))

    # ---- writes ------------------------------------------------------------------------

    def write(self, card: Scorecard) -> str | None:
        """`ScoreSink.write`: save the card; returns the store's path."""
        self.save(card)
        return str(self.path)

    def save(self, scorecard: Scorecard) -> int:
        """Store a scorecard (redacted), replacing an earlier run of the same session,
        rubric version, judge kind and model. Returns the new run id.

        Raises:
            SinkError: The database could not be written; nothing was stored.
        """
        scores = _score_rows(scorecard)
        key = (scorecard.session_id, scorecard.rubric_version, scorecard.judge, scorecard.model)
        same_key = "session_id = ? AND rubric_version = ? AND judge = ? AND model IS ?"
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
                row = _run_row(scorecard)
                columns = ", ".join(row)
                marks = ", ".join("?" for _ in row)
                db.execute(f"DELETE FROM runs WHERE {same_key}", key)
                run_id = db.execute(
                    f"INSERT INTO runs ({columns}) VALUES ({marks})", tuple(row.values())
                ).lastrowid
                assert run_id is not None  # a successful INSERT always sets lastrowid
                self._insert_scores(db, run_id, scores)
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
    ) -> int:
        """Record a Langfuse push: success sets `pushed_at`; `error` keeps it unpushed and
        stores the (redacted) reason. Returns how many runs were updated."""
        if error is None:
            sets, params = "pushed_at = ?, push_error = NULL", (_iso(datetime.now(UTC)),)
        else:
            sets, params = "push_error = ?", (redact_value(error)[0],)
        with self._tx() as db:
            cur = db.execute(
                f"UPDATE runs SET {sets} WHERE session_id = ? AND judge = ? AND model IS ? "
                "AND rubric_version = ?",
                (*params, session_id, judge, model, rubric_version),
            )
            return cur.rowcount

    # ---- reads -------------------------------------------------------------------------

    def _cards(self, where: str, params: tuple[Any, ...], tail: str = "") -> list[Scorecard]:
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
        return [_card_from(r, by_run[r["id"]]) for r in runs]

    def latest(
        self, session_id: str, *, judge: str | None = None, model: str | None = None
    ) -> Scorecard | None:
        """The most recent run of a session (optionally of one judge kind / model)."""
        where, params = _filters(session_id=session_id, judge=judge, model=model)
        cards = self._cards(where, params, "ORDER BY created_at DESC, id DESC LIMIT 1")
        return cards[0] if cards else None

    def scorecards(
        self,
        judge: str | None = None,
        model: str | None = None,
        rubric_version: str | None = None,
    ) -> list[Scorecard]:
        """Every stored run matching the filters, oldest first (for calibration)."""
        where, params = _filters(judge=judge, model=model, rubric_version=rubric_version)
        return self._cards(where, params, "ORDER BY created_at, id")

    def unpushed(self) -> list[Scorecard]:
        """Runs not yet pushed to Langfuse (including ones whose push failed), oldest first."""
        return self._cards("pushed_at IS NULL", (), "ORDER BY created_at, id")

    def is_scored(
        self, session_id: str, rubric_version: str, model: str | None, judge: str
    ) -> bool:
        """True when a *scored* run exists for this identity (unscored runs are retried)."""
        rows = self._query(
            "SELECT 1 FROM runs WHERE session_id = ? AND rubric_version = ? AND model IS ? "
            "AND judge = ? AND status = 'scored' LIMIT 1",
            (session_id, rubric_version, model, judge),
        )
        return bool(rows)

    def list_runs(
        self,
        limit: int = 50,
        session_id: str | None = None,
        judge: str | None = None,
        since: datetime | None = None,
    ) -> list[RunSummary]:
        """The newest runs first, with overall and goal label joined in."""
        where, params = _filters("r.", session_id=session_id, judge=judge)
        if since is not None:
            where += " AND r.created_at >= ?"
            params += (_iso(since),)
        rows = self._query(
            "SELECT r.*, o.value AS overall, g.label AS goal FROM runs r "
            "LEFT JOIN scores o ON o.run_id = r.id AND o.name = 'overall_quality' "
            "LEFT JOIN scores g ON g.run_id = r.id AND g.name = 'goal_achievement' "
            f"WHERE {where} ORDER BY r.created_at DESC, r.id DESC LIMIT ?",
            (*params, limit),
        )
        return [
            RunSummary(
                run_id=r["id"], **{k: r[k] for k in RunSummary.model_fields if k != "run_id"}
            )
            for r in rows
        ]

    def find_sessions(self, prefix: str) -> list[str]:
        """Stored session ids starting with `prefix` (for short ids on the command line)."""
        escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        rows = self._query(
            "SELECT DISTINCT session_id FROM runs WHERE session_id LIKE ? ESCAPE '\\' "
            "ORDER BY session_id",
            (escaped + "%",),
        )
        return [r["session_id"] for r in rows]


def _filters(table: str = "", **conds: str | None) -> tuple[str, tuple[Any, ...]]:
    """`a = ? AND b = ?` for the given non-None conditions (columns of `runs`)."""
    parts = ["1 = 1"]
    params: list[Any] = []
    for column, value in conds.items():
        if value is not None:
            parts.append(f"{table}{column} = ?")
            params.append(value)
    return " AND ".join(parts), tuple(params)
