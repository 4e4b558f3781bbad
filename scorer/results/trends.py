"""Trends over time: per period (ISO week or day), each dimension's mean with its count
and a t confidence interval, plus the lowest-scoring sessions. Pure: runs in, numbers out.

A session is placed in the period of its start time (UTC), else of its end (a pane
capture's file time), else of when it was scored (runs stored before session times were
kept). Only scored runs count.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from scorer.judge.rubric import OVERALL, default_rubric
from scorer.results.rows import DIMENSIONS

if TYPE_CHECKING:
    from scorer.sinks.store import StoredRun

__all__ = ["DimensionStat", "LowSession", "PeriodTrend", "Trends", "compute_trends", "period_of"]

Period = Literal["week", "day"]
Scale = Literal["normalized", "raw"]
TREND_SCORES: list[str] = [OVERALL, *DIMENSIONS]


class DimensionStat(BaseModel):
    """One score's mean in one period."""

    n: int
    mean: float
    low: float | None = None
    """Lower bound of the confidence interval (None with fewer than two sessions)."""
    high: float | None = None


class LowSession(BaseModel):
    """One of a period's lowest-scoring sessions."""

    run_id: int
    title: str | None = None
    session_id: str
    project: str | None
    started_at: datetime
    overall: float
    goal: str | None
    recommendation: str | None


class PeriodTrend(BaseModel):
    """Everything about one period."""

    label: str
    """`2026-W47` for weeks, `2026-11-20` for days."""
    start: date
    n_sessions: int
    stats: dict[str, DimensionStat] = Field(default_factory=dict)
    lowest: list[LowSession] = Field(default_factory=list)


class Trends(BaseModel):
    """Per-period trends, oldest period first."""

    by: Period
    scale: Scale
    confidence: float
    periods: list[PeriodTrend] = Field(default_factory=list)


def when(run: StoredRun) -> datetime:
    """The time a run is filed under: session start, else its end, else scoring time (UTC)."""
    info = run.card.session
    moment = info.started_at or info.ended_at or run.card.created_at
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def period_of(moment: datetime, by: Period) -> tuple[date, str]:
    """The period's first day and its label."""
    day = moment.date()
    if by == "day":
        return day, day.isoformat()
    monday = day - timedelta(days=day.weekday())
    year, week, _ = monday.isocalendar()
    return monday, f"{year}-W{week:02d}"


def mean_ci(
    values: list[float],
    confidence: float = 0.95,
    bounds: tuple[float, float] | None = None,
) -> DimensionStat:
    """Mean with a Student-t confidence interval (none for a single value).

    `bounds` clips the interval to the score's scale: with few sessions the t interval of
    a bounded score can reach past it (e.g. below 0), which no mean can.
    """
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return DimensionStat(n=n, mean=mean)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    from scipy import stats  # 1 s to import: only when an interval is computed

    half = float(stats.t.ppf((1 + confidence) / 2, n - 1)) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds is not None:
        low, high = max(low, bounds[0]), min(high, bounds[1])
    return DimensionStat(n=n, mean=mean, low=low, high=high)


def _bounds(name: str, scale: Scale) -> tuple[float, float] | None:
    """The range a score can take on the chosen scale."""
    if scale == "normalized" or name == OVERALL:
        return (0.0, 1.0)
    dims = {d.name: d for d in default_rubric().dimensions}
    dim = dims.get(name)
    if dim is None:
        return None
    if dim.categories:
        values = [float(c.value) for c in dim.categories]
        return (min(values), max(values))
    if dim.min_value is None or dim.max_value is None:
        return None
    return (dim.min_value, dim.max_value)


def compute_trends(
    runs: list[StoredRun],
    *,
    by: Period = "week",
    lowest: int = 3,
    scale: Scale = "normalized",
    confidence: float = 0.95,
) -> Trends:
    """Group scored runs by period and summarise each score.

    Args:
        runs: Stored runs (one per session is what makes sense; see `RunFilter`).
        by: `week` (ISO weeks, starting Monday) or `day`, in UTC.
        lowest: How many lowest-overall sessions to list per period.
        scale: `normalized` (every score on 0..1) or `raw` (1-5 levels, category values).
        confidence: Level of the t interval.
    """
    groups: dict[tuple[date, str], list[StoredRun]] = defaultdict(list)
    for run in runs:
        if run.card.status == "scored" and run.card.overall is not None:
            groups[period_of(when(run), by)].append(run)
    periods = [
        _period(start, label, members, lowest, scale, confidence)
        for (start, label), members in sorted(groups.items())
    ]
    return Trends(by=by, scale=scale, confidence=confidence, periods=periods)


def _period(
    start: date,
    label: str,
    runs: list[StoredRun],
    lowest: int,
    scale: Scale,
    confidence: float,
) -> PeriodTrend:
    values: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        for name in TREND_SCORES:
            score = run.card.scores.get(name)
            if score is not None:
                values[name].append(score.normalized if scale == "normalized" else score.value)
    ranked = sorted(runs, key=lambda r: (r.card.overall or 0.0, r.card.session_id))[:lowest]
    return PeriodTrend(
        label=label,
        start=start,
        n_sessions=len(runs),
        stats={
            n: mean_ci(values[n], confidence, _bounds(n, scale)) for n in TREND_SCORES if values[n]
        },
        lowest=[_low(r) for r in ranked],
    )


def _low(run: StoredRun) -> LowSession:
    goal = run.card.scores.get("goal_achievement")
    return LowSession(
        run_id=run.run_id,
        title=run.card.title,
        session_id=run.card.session_id,
        project=run.card.session.project,
        started_at=when(run),
        overall=run.card.overall or 0.0,
        goal=goal.label if goal else None,
        recommendation=run.card.recommendation,
    )
