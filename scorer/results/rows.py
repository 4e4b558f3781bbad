"""Flat rows: one row per stored run with every dimension, the judge, versions, cost and
the session's metadata in columns. The CSV and Parquet exports, `scores list --json` and
`to_dataframe(store)` all use these columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from scorer.errors import ConfigError
from scorer.judge.rubric import OVERALL, default_rubric

if TYPE_CHECKING:
    from scorer.models import Scorecard
    from scorer.sinks.store import RunFilter, ScoreStore, StoredRun

__all__ = [
    "COLUMNS",
    "DIMENSIONS",
    "SHORT_NAMES",
    "flat_row",
    "flat_rows",
    "probability_columns",
    "require",
    "to_dataframe",
]

DIMENSIONS: list[str] = [
    d.name for d in sorted(default_rubric().dimensions, key=lambda d: -d.weight)
]
"""The six dimensions, heaviest weight first."""
SHORT_NAMES: dict[str, str] = {
    "overall_quality": "overall",
    "goal_achievement": "goal",
    "tool_efficiency": "tools",
    "process_adherence": "process",
    "context_efficiency": "context",
    "error_handling": "errors",
    "output_quality": "output",
    "goal_probability": "p(goal)",
}
"""Column headings for narrow tables and the viewer's index."""
CATEGORICAL: list[str] = [
    d.name for d in default_rubric().dimensions if d.data_type == "CATEGORICAL"
]

_SESSION = ("project", "branch", "agent_model", "started_at", "ended_at", "times_from", "n_events")
_CARD = ("status", "unscored_reason", "judge", "model")
_VERSIONS = ("prompt_version", "prompt_hash", "rubric_version", "rubric_hash", "package_version")
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests")

_TYPES = {"n_events": "int", "started_at": "datetime", "ended_at": "datetime"}
_PROBABILITY = {
    "goal_probability": "float",
    "first_goal_probability": "float",
    "second_opinions": "int",
    "goal_probability_model": "str",
    "judge_goal": "str",
}
"""The goal probability's columns (`probability_columns`)."""


def _columns() -> dict[str, str]:
    """Column name → kind (str, int, float, datetime), in export order."""
    cols: dict[str, str] = {"title": "str", "run_id": "int", "session_id": "str", "source": "str"}
    cols["collection"] = "str"
    cols.update({k: _TYPES.get(k, "str") for k in _SESSION})
    cols["agent_models"] = "str"
    cols.update(dict.fromkeys(_CARD, "str"))
    cols[OVERALL] = "float"
    for name in DIMENSIONS:
        cols[name] = "float"
        if name in CATEGORICAL:
            cols[f"{name}_label"] = "str"
    cols.update(_PROBABILITY)
    cols["recommendation"] = "str"
    cols.update(dict.fromkeys(_VERSIONS, "str"))
    cols["n_chunks"] = "int"
    cols.update(dict.fromkeys(_USAGE, "int"))
    cols.update(cost_usd="float", created_at="datetime", pushed_at="datetime")
    cols.update(langfuse_url="str", summary="str", task="str")
    return cols


COLUMNS: dict[str, str] = _columns()
"""Every flat column and its kind."""


def flat_row(run: StoredRun) -> dict[str, Any]:
    """One run as a flat dict with exactly `COLUMNS`, in that order (pure)."""
    card, info = run.card, run.card.session
    row: dict[str, Any] = {"title": card.title, "run_id": run.run_id}
    row.update(session_id=card.session_id, source=card.source, collection=card.collection)
    row.update({k: getattr(info, k) for k in _SESSION})
    row["agent_models"] = ", ".join(info.agent_models) or None
    row.update({k: getattr(card, k) for k in _CARD})
    row[OVERALL] = card.overall
    for name in DIMENSIONS:
        score = card.scores.get(name)
        row[name] = score.value if score else None
        if name in CATEGORICAL:
            row[f"{name}_label"] = score.label if score else None
    row.update(probability_columns(card))
    row["recommendation"] = card.recommendation
    row.update({k: getattr(card, k) for k in _VERSIONS})
    row["n_chunks"] = card.n_chunks
    row.update({k: getattr(card.usage, k) for k in _USAGE})
    row.update(cost_usd=card.cost_usd, created_at=card.created_at, pushed_at=run.pushed_at)
    row.update(langfuse_url=info.langfuse_url, summary=card.summary, task=info.task)
    return {k: row[k] for k in COLUMNS}


def probability_columns(card: Scorecard) -> dict[str, Any]:
    """The goal probability, the first verdict's (before second opinions; the same when
    none were asked), how many second opinions were asked, the model file's version and
    the judge's own goal label when the probability relabelled it (pure)."""
    meta = card.meta
    p = card.goal_probability
    first = meta.get("first_goal_probability")
    asked = meta.get("second_opinions")
    return {
        "goal_probability": p,
        "first_goal_probability": first if isinstance(first, int | float) else p,
        "second_opinions": len(asked) if isinstance(asked, list) else 0,
        "goal_probability_model": meta.get("goal_probability_model"),
        "judge_goal": meta.get("judge_goal"),
    }


def flat_rows(runs: list[StoredRun]) -> list[dict[str, Any]]:
    return [flat_row(r) for r in runs]


def jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A flat row with datetimes as ISO text (for JSON and CSV)."""
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def require(module: str, extra: str = "export") -> Any:
    """Import an optional dependency or raise a one-line `ConfigError` naming the extra."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"{module} is not installed: pip install 'session-scorer[{extra}]'"
        ) from None


def to_dataframe(source: ScoreStore | Sequence[StoredRun], where: RunFilter | None = None) -> Any:
    """The runs as a pandas DataFrame with `COLUMNS` (datetimes as UTC timestamps).

    Example:
        >>> from scorer import ScoreStore, to_dataframe
        >>> with ScoreStore() as store:
        ...     frame = to_dataframe(store)

    Args:
        source: A store (its runs matching `where`) or runs already read.
        where: Filters for a store (project, dates, judge, model, ...).

    Raises:
        ConfigError: pandas is not installed.
    """
    from scorer.sinks.store import ScoreStore

    runs = source.runs(where) if isinstance(source, ScoreStore) else list(source)
    pd = require("pandas")
    frame = pd.DataFrame(flat_rows(runs), columns=list(COLUMNS))
    for name, kind in COLUMNS.items():
        if kind == "datetime":
            frame[name] = pd.to_datetime(frame[name], utc=True)
    return frame
