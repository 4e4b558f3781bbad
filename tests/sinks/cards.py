"""Scorecards built by hand for the store and `scorer scores` tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scorer.judge.rubric import OVERALL, default_rubric
from scorer.models import DimensionScore, EvidenceRef, JudgeUsage, Scorecard

# One value per dimension: a label for CATEGORICAL, a 1-5 level for NUMERIC.
DEFAULT_VALUES: dict[str, Any] = {
    "goal_achievement": "complete",
    "error_handling": "recovered",
    "process_adherence": 4,
    "tool_efficiency": 3,
    "context_efficiency": 5,
    "output_quality": 4,
}


def make_card(
    session_id: str = "sess-1",
    *,
    model: str | None = "claude-sonnet-5-5",
    judge: str = "llm",
    rubric_version: str | None = None,
    created_at: datetime | None = None,
    values: dict[str, Any] | None = None,
    rationale: str = "Ran the tests at #12 and they passed.",
    **overrides: Any,
) -> Scorecard:
    """A scored card with all seven scores, computed like the real judge does."""
    rubric = default_rubric()
    values = {**DEFAULT_VALUES, **(values or {})}
    scores: dict[str, DimensionScore] = {}
    for dim in rubric.dimensions:
        raw = values[dim.name]
        label = raw if isinstance(raw, str) else None
        value = float(dim.category(raw).value) if label else float(raw)
        scores[dim.name] = DimensionScore(
            name=dim.name,
            value=value,
            label=label,
            normalized=rubric.normalize(dim.name, value),
            rationale=f"{dim.name}: {rationale}\nsecond line",
            evidence=[EvidenceRef(event=12, quote="3 passed"), EvidenceRef(event=99, valid=False)],
        )
    overall = rubric.overall({n: s.normalized for n, s in scores.items()})
    scores[OVERALL] = DimensionScore(name=OVERALL, value=overall, normalized=overall)
    fields: dict[str, Any] = dict(
        session_id=session_id,
        source="claude-code",
        judge=judge,
        model=model,
        prompt_version="v1",
        prompt_hash="abc123",
        rubric_version=rubric_version or rubric.version,
        rubric_hash=rubric.hash,
        package_version="0.1.0",
        scores=scores,
        recommendation="complete",
        accomplishments=["fixed the bug"],
        failures=["no docs"],
        summary="Fixed the failing test.",
        n_chunks=2,
        unknown_refs=[99],
        usage=JudgeUsage(input_tokens=1000, output_tokens=200, cache_read_tokens=50, requests=2),
        cost_usd=0.0123,
        created_at=created_at or datetime(2026, 11, 20, 12, 0, tzinfo=UTC),
        meta={"redactions": 0},
    )
    fields.update(overrides)
    return Scorecard(**fields)


def unscored_card(session_id: str = "sess-u", **overrides: Any) -> Scorecard:
    card = make_card(session_id, **overrides)
    return card.model_copy(
        update={
            "status": "unscored",
            "scores": {},
            "unscored_reason": "judge reply was not JSON",
            "raw_reply": "Sorry, I cannot",
            "recommendation": None,
        }
    )
