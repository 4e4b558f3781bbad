"""Small builders for scorecards and labels used by the calibration tests."""

from __future__ import annotations

from datetime import UTC, datetime

from scorer.calibrate.ground_truth import Label
from scorer.models import DimensionScore, EvidenceRef, Scorecard

T0 = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def card(
    session_id: str,
    values: dict[str, float],
    *,
    judge: str = "llm",
    model: str | None = "claude-sonnet",
    prompt_version: str = "v1",
    created_at: datetime = T0,
    status: str = "scored",
    meta: dict | None = None,
    evidence: list[int] | None = None,
    goal_probability: float | None = None,
) -> Scorecard:
    scores = {
        name: DimensionScore(
            name=name,
            value=v,
            normalized=0.0,
            rationale=f"{name} rationale",
            evidence=[EvidenceRef(event=e, quote=f"quote {e}") for e in (evidence or [])],
        )
        for name, v in values.items()
    }
    return Scorecard(
        session_id=session_id,
        source="stream-json",
        status=status,
        judge=judge,
        model=model,
        prompt_version=prompt_version,
        prompt_hash="ph",
        rubric_version="r1",
        rubric_hash="rh",
        package_version="0.1.0",
        scores=scores,
        goal_probability=goal_probability,
        created_at=created_at,
        meta=meta or {},
    )


def label(session_id: str, dimension: str, value: float, annotator: str = "alice") -> Label:
    return Label(
        session_id=session_id, dimension=dimension, value=value, annotator=annotator, source="test"
    )


def paired_data(dimension: str, judge: list[float], human: list[float], **card_kw):
    """Scorecards and labels for sessions s00, s01, ... with the given values."""
    cards = [card(f"s{i:02d}", {dimension: j}, **card_kw) for i, j in enumerate(judge)]
    labels = [label(f"s{i:02d}", dimension, h) for i, h in enumerate(human)]
    return cards, labels
