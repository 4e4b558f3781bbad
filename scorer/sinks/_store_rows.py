"""Rows of the score store and back: a `Scorecard` as its `runs`, `scores` and
`timelines` rows (secrets redacted, identity columns verbatim), and a card from its rows."""

from __future__ import annotations

import gzip
import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

from scorer.models import DimensionScore, JudgeUsage, Scorecard
from scorer.sinks._store_query import iso as _iso

__all__ = ["FIRST_SCORED", "card_from", "run_row", "score_rows", "timeline_row"]

_RUN_COLUMNS = (
    *("session_id", "source", "status", "unscored_reason", "raw_reply", "judge", "model"),
    *("prompt_version", "prompt_hash", "rubric_version", "rubric_hash", "package_version"),
    *("recommendation", "summary", "accomplishments", "failures", "unknown_refs", "n_chunks"),
    *("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests"),
    *("cost_usd", "created_at", "meta", "collection"),
)
_SESSION_COLUMNS = ("started_at", "ended_at", "project", "branch", "agent_model")
_JSON_COLUMNS = ("accomplishments", "failures", "unknown_refs", "meta")
_IN_META = (
    *("unscored_code", "answered_by", "effort", "backend", "refusals", "requirements"),
    "goal_probability",
)
"""Card fields without a column of their own: kept in `meta` under `_META_KEY`."""
_META_KEY = "_card"
_USAGE = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "requests")
_IDENTITY = ("session_id", "source", "judge", "model", "rubric_version", "rubric_hash",
             "prompt_version", "prompt_hash", "package_version", "status", "recommendation")  # fmt: skip


FIRST_SCORED = "first_scored_at"
"""Meta key: when this session was first scored with this rubric version, judge and model."""


def redacted(value: Any) -> Any:
    """`value` with its secrets redacted (the rules load on the first write: reading the
    store, as `scorer scores list` does, never needs them)."""
    from scorer.prepare.redact import redact_value

    return redact_value(value)[0]


def run_row(card: Scorecard) -> dict[str, Any]:
    """The run's columns, secrets redacted; identity columns are taken verbatim."""
    data = card.model_dump(mode="json", exclude={"scores"})
    clean = redacted(data)
    for key in _IDENTITY:
        clean[key] = data[key]
    row = {k: clean[k] for k in _RUN_COLUMNS if k in clean and k not in _USAGE}
    row.update({k: clean["usage"][k] for k in _USAGE})
    row["created_at"] = _iso(card.created_at)
    row["meta"] = {**row["meta"], _META_KEY: {k: clean[k] for k in _IN_META}}
    for key in _JSON_COLUMNS:
        row[key] = json.dumps(row[key], ensure_ascii=False)
    info = clean["session"]
    row.update({k: info[k] for k in (*_SESSION_COLUMNS, "title", "task")})
    for key in ("started_at", "ended_at"):
        when = getattr(card.session, key)
        row[key] = _iso(when) if when else None
    row["session_info"] = json.dumps(info, ensure_ascii=False)
    return row


def timeline_row(card: Scorecard) -> tuple[Any, ...] | None:
    """`timelines` row of the card's attached timeline (redacted again, gzip JSON)."""
    if card.timeline is None:
        return None
    clean = redacted([list(e) for e in card.timeline])
    blob = gzip.compress(json.dumps(clean, ensure_ascii=False).encode(), compresslevel=6)
    chars = sum(len(e[2]) for e in clean)
    return (card.session_id, len(clean), chars, blob, _iso(datetime.now(UTC)))


def score_rows(card: Scorecard) -> list[tuple[Any, ...]]:
    rows = []
    for position, (name, score) in enumerate(card.scores.items()):
        clean = redacted(score.model_dump(mode="json"))
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


def card_from(run: sqlite3.Row, scores: list[sqlite3.Row]) -> Scorecard:
    data = {k: run[k] for k in _RUN_COLUMNS if k not in _USAGE}
    for key in _JSON_COLUMNS:
        data[key] = json.loads(data[key])
    data.update(data["meta"].pop(_META_KEY, {}))
    data["usage"] = JudgeUsage(**{k: run[k] for k in _USAGE})
    data["session"] = json.loads(run["session_info"] or "{}")
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
