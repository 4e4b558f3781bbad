"""Pure helpers of the LLM judge: reply validation, usage tally, scores from a reply.

Shared by the direct judge (`judge.anthropic`) and the Message Batches path
(`jobs.batches`); nothing here talks to the API.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from scorer._text import plural
from scorer.judge.rubric import Rubric, with_overall
from scorer.judge.schema import ScoringReplyBase
from scorer.models import (
    Chunk,
    DimensionScore,
    EvidenceRef,
    JudgeUsage,
    Refusal,
    RequirementCheck,
    UnscoredCode,
)

M = TypeVar("M", bound=BaseModel)


class Unscored(Exception):
    """The judge could not score this content (becomes an unscored card, never low scores).

    Only content reasons: invalid output twice, a refusal on the fallback model too, a
    session too long even after re-chunking. API outages are `JudgeError`s instead.
    """

    def __init__(
        self, reason: str, raw: str | None = None, code: UnscoredCode = "invalid_output"
    ) -> None:
        super().__init__(reason)
        self.reason, self.raw, self.code = reason, raw, code


class UsageTally:
    """Thread-safe record of every call of one `judge()` (or one batch session): summed
    usage, the models that answered, and the refusals met on the way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.usage = JudgeUsage()
        self.answered_by: list[str] = []
        """`response.model` of every reply, in arrival order (the last is the scoring one)."""
        self.refusals: list[Refusal] = []

    def answered(self, model: str) -> None:
        with self._lock:
            self.answered_by.append(model)

    def refused(self, refusal: Refusal) -> None:
        with self._lock:
            self.refusals.append(refusal)

    def add(self, usage: Any) -> None:
        one = JudgeUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_write_tokens=usage.cache_creation_input_tokens or 0,
            requests=1,
        )
        with self._lock:
            self.usage = self.usage.add(one)


class InvalidReply(ValueError):
    """The model's reply is not a usable structured output."""


def reply_text(response: Any) -> str:
    """The concatenated text blocks of a Messages API response."""
    return "".join(b.text for b in response.content if getattr(b, "type", None) == "text")


def validate_reply(stop_reason: str | None, raw: str, model: type[M]) -> M:
    """Parse `raw` into `model`, or raise InvalidReply with a short reason."""
    if stop_reason == "refusal":
        raise InvalidReply("the model refused to answer (stop_reason=refusal)")
    if stop_reason == "max_tokens":
        raise InvalidReply("the reply was cut off at max_tokens; be more concise")
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "reply"
        raise InvalidReply(
            f"{plural(e.error_count(), 'schema error')}; first at {loc}: {first['msg']}"
        ) from e


def known_events(chunks: Sequence[Chunk]) -> set[int]:
    """Every event number rendered in any chunk."""
    return {i for c in chunks for i in c.event_indices}


def build_checklist(reply: ScoringReplyBase, known: set[int]) -> list[RequirementCheck]:
    """The requirement checklist of a reply, evidence refs validated like the scores'."""
    return [
        RequirementCheck(
            requirement=r.requirement,
            status=r.status,
            core=r.core,
            confidence=r.confidence / 100,
            evidence=[
                EvidenceRef(event=e.event, quote=e.quote, valid=e.event in known)
                for e in r.evidence
            ],
        )
        for r in reply.requirements
    ]


def build_scores(
    reply: ScoringReplyBase, rubric: Rubric, known: set[int]
) -> tuple[dict[str, DimensionScore], list[int]]:
    """Dimension scores from a validated reply plus the computed overall.

    Returns:
        The scores keyed by name (six dimensions and `overall_quality`) and the sorted
        event numbers cited that were never rendered (those refs get `valid=False`).
    """
    scores: dict[str, DimensionScore] = {}
    unknown: set[int] = set()
    for name, dim in reply.dimensions().items():
        cfg = rubric.get(name)
        raw_value = dim.value  # type: ignore[attr-defined]
        label = raw_value if cfg.data_type == "CATEGORICAL" else None
        value = float(cfg.category(raw_value).value if label else raw_value)
        refs = [
            EvidenceRef(event=e.event, quote=e.quote, valid=e.event in known) for e in dim.evidence
        ]
        unknown |= {r.event for r in refs if not r.valid}
        scores[name] = DimensionScore(
            name=name,
            value=value,
            label=label,
            normalized=rubric.normalize(name, value),
            rationale=dim.rationale,
            evidence=refs,
        )
    return with_overall(scores, rubric), sorted(unknown)
