"""What the score store's queries return and take: run summaries, stored runs, filters."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from scorer.models import Scorecard, SessionInfo

__all__ = [
    "LIST_RUNS",
    "RunFilter",
    "RunSummary",
    "ScoreValue",
    "StoredRun",
    "filters",
    "iso",
    "like_escape",
]


class StoredRun(BaseModel):
    """A stored scorecard with the store's own bookkeeping."""

    run_id: int
    pushed_at: datetime | None = None
    push_error: str | None = None
    card: Scorecard


class RunFilter(BaseModel):
    """Which runs to read (every field optional; None means any).

    `since`/`until` apply to the session's start time, else its end (a pane capture's
    file time), else when it was scored (runs stored before session times were kept).
    """

    session_id: str | None = None
    session_ids: list[str] | None = None
    """Only these sessions."""
    project: str | None = None
    judge: str | None = None
    model: str | None = None
    rubric_version: str | None = None
    status: str | None = None
    source: str | None = None
    collection: str | None = "production"
    """`production` (the default: sessions people ran), `calibration`, or None for both."""
    since: datetime | None = None
    until: datetime | None = None
    search: str | None = None
    """Words that must all appear (case-insensitive) in the title, task, project,
    session id, branch, agent model or summary."""
    latest_per_session: bool = False
    """Keep only each session's newest run (after the other filters)."""

    def sql(self, table: str = "") -> tuple[str, tuple[Any, ...]]:
        """The WHERE clause over `runs` (aliased `table`, e.g. `r.`) and its parameters."""
        where, params = filters(
            table,
            session_id=self.session_id,
            project=self.project,
            judge=self.judge,
            model=self.model,
            rubric_version=self.rubric_version,
            status=self.status,
            source=self.source,
            collection=self.collection,
        )
        if self.session_ids is not None:
            marks = ", ".join("?" for _ in self.session_ids) or "NULL"
            where, params = (
                f"{where} AND {table}session_id IN ({marks})",
                (
                    *params,
                    *self.session_ids,
                ),
            )
        when = f"COALESCE({table}started_at, {table}ended_at, {table}created_at)"
        if self.since is not None:
            where, params = f"{where} AND {when} >= ?", (*params, iso(self.since))
        if self.until is not None:
            where, params = f"{where} AND {when} < ?", (*params, iso(self.until))
        for word in (self.search or "").split():
            fields = " OR ".join(f"{table}{c} LIKE ? ESCAPE '\\'" for c in SEARCHED)
            where = f"{where} AND ({fields})"
            params = (*params, *[f"%{like_escape(word)}%"] * len(SEARCHED))
        return where, params


SEARCHED = ("title", "task", "project", "session_id", "branch", "agent_model", "summary")
"""The `runs` columns a search looks in."""


def like_escape(text: str) -> str:
    """`text` with LIKE's wildcards escaped (for `ESCAPE '\\'`)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


class RunSummary(BaseModel):
    """One stored run, as `scorer scores list` shows it."""

    run_id: int
    title: str | None = None
    """The session's human title (`session.title`)."""
    session_id: str
    source: str
    collection: str = "production"
    status: str
    judge: str
    model: str | None
    rubric_version: str
    overall: float | None
    goal: str | None
    """The goal_achievement label (e.g. `complete`)."""
    goal_probability: float | None = None
    """The probability that the task's own acceptance checks pass (None: judged before
    it existed, or unscored)."""
    recommendation: str | None
    cost_usd: float
    created_at: datetime
    pushed_at: datetime | None
    push_error: str | None
    scores: dict[str, ScoreValue] = Field(default_factory=dict)
    """All seven scores of the run (empty when unscored)."""
    session: SessionInfo = Field(default_factory=SessionInfo)


class ScoreValue(BaseModel):
    """One score in a `RunSummary`: value, category label and the 0..1 normalised value."""

    value: float
    label: str | None = None
    normalized: float


LIST_RUNS = (
    "SELECT r.*, o.value AS overall, g.label AS goal, "
    "json_extract(r.meta, '$._card.goal_probability') AS goal_probability FROM runs r "
    "LEFT JOIN scores o ON o.run_id = r.id AND o.name = 'overall_quality' "
    "LEFT JOIN scores g ON g.run_id = r.id AND g.name = 'goal_achievement'"
)
"""`RunSummary` rows: each run with its overall, goal label and goal probability (kept
in the run's meta, `store._IN_META`), before its WHERE clause."""


def iso(dt: datetime) -> str:
    """UTC ISO text, so SQLite's string order is time order."""
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).isoformat()


def recency(run: StoredRun) -> tuple[datetime, int]:
    return run.card.created_at, run.run_id


def filters(table: str = "", **conds: str | None) -> tuple[str, tuple[Any, ...]]:
    """`a = ? AND b = ?` for the given non-None conditions (columns of `runs`)."""
    parts = ["1 = 1"]
    params: list[Any] = []
    for column, value in conds.items():
        if value is not None:
            parts.append(f"{table}{column} = ?")
            params.append(value)
    return " AND ".join(parts), tuple(params)
