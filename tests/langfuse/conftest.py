"""Langfuse test helpers: a scored scorecard factory."""

from __future__ import annotations

from datetime import UTC, datetime

from scorer.judge.rubric import default_rubric
from scorer.models import DimensionScore, EvidenceRef, JudgeUsage, Scorecard


def make_scorecard(session_id: str = "sess-1", **overrides) -> Scorecard:
    rubric = default_rubric()
    scores = {}
    for cfg in rubric.dimensions:
        if cfg.data_type == "CATEGORICAL":
            cat = cfg.categories[2]
            scores[cfg.name] = DimensionScore(
                name=cfg.name,
                value=cat.value,
                label=cat.label,
                normalized=rubric.normalize(cfg.name, cat.value),
                rationale=f"{cfg.name}: tests pass at #4; key sk-ant-api03-{'A' * 40}",
                evidence=[EvidenceRef(event=4, quote="3 passed")],
            )
        else:
            scores[cfg.name] = DimensionScore(
                name=cfg.name,
                value=4,
                normalized=rubric.normalize(cfg.name, 4),
                rationale=f"{cfg.name} was good",
                evidence=[EvidenceRef(event=2)],
            )
    overall = rubric.overall({n: s.normalized for n, s in scores.items()})
    scores["overall_quality"] = DimensionScore(
        name="overall_quality", value=overall, normalized=overall
    )
    data = dict(
        session_id=session_id,
        source="langfuse",
        judge="llm",
        model="claude-sonnet-5-5",
        prompt_version="v1",
        prompt_hash="p" * 16,
        rubric_version=rubric.version,
        rubric_hash=rubric.hash,
        package_version="0.1.0",
        scores=scores,
        n_chunks=2,
        usage=JudgeUsage(input_tokens=1000, output_tokens=200, requests=2),
        cost_usd=0.012,
        created_at=datetime(2026, 11, 22, 9, 30, tzinfo=UTC),
        recommendation="complete",
    )
    data.update(overrides)
    return Scorecard(**data)
