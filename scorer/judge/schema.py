"""Pydantic models for the judge's structured output (the `output_config` JSON schema).

Field order is deliberate: in every dimension the model writes `evidence`, then `rationale`,
then `value`, so the score is conditioned on the evidence it has just written down.

The scoring model is built from the rubric (`scoring_model(rubric)`): each dimension becomes
its own object whose `value` is a `Literal` of the allowed values (1..5 for NUMERIC, the
category labels for CATEGORICAL). Enums are supported by structured outputs, unlike
`minimum`/`maximum`, which the SDK's `transform_schema` would only move into a description.
"""

from __future__ import annotations

import hashlib
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model, field_validator

from scorer.judge.rubric import Rubric, ScoreConfig
from scorer.models import Recommendation

_QUOTE_HELP = "A short verbatim quote (a few words to one line) copied from that event."


class Evidence(BaseModel):
    """One cited event: `#N` and a short verbatim quote from it."""

    model_config = ConfigDict(extra="forbid")

    event: int = Field(description="The event number N of `#N` in the transcript.")
    quote: str = Field(description=_QUOTE_HELP)


class RequirementReply(BaseModel):
    """One explicit requirement of the task, checked against the transcript.

    The statuses and the rule that turns them into goal_achievement are in
    `scorer.judge.checklist`.
    """

    model_config = ConfigDict(extra="forbid")

    requirement: str = Field(
        description="One explicit requirement from the task text, in its own words (short)."
    )
    core: bool = Field(
        description="true for a deliverable the task exists for (a file, a result, a working "
        "behaviour or service); false for a constraint on how, or a detail."
    )
    evidence: list[Evidence] = Field(
        description="Events showing it done, checked, contradicted or missing; empty if none."
    )
    status: Literal["met", "likely_met", "unmet", "not_attempted"] = Field(
        description="met: done and shown working; likely_met: done by a sound method and "
        "nothing contradicts it, but not re-checked; unmet: attempted but shown wrong, "
        "broken, incomplete, substituted or faked, or given up; not_attempted: nothing in "
        "the session addresses it."
    )
    confidence: int = Field(
        description="Your probability, 0 to 100, that a strict automated check of exactly "
        "this requirement, run on what the agent left behind, would pass."
    )

    @field_validator("confidence")
    @classmethod
    def _percent(cls, value: int) -> int:
        # Checked here, not as schema bounds, which structured outputs do not enforce.
        if not 0 <= value <= 100:
            raise ValueError(f"confidence must be 0 to 100, got {value}")
        return value


class ChunkNotes(BaseModel):
    """Structured notes about one chunk of a long session (no scores)."""

    model_config = ConfigDict(extra="forbid")

    progress: str = Field(description="What the agent achieved in this chunk, concretely.")
    errors_and_recoveries: list[str] = Field(
        description="Each error or failure and what the agent did about it."
    )
    tool_patterns: list[str] = Field(description="Notable patterns of tool and context use.")
    evidence: list[Evidence] = Field(description="The most telling events of this chunk.")
    open_questions: list[str] = Field(description="What cannot be decided from this chunk alone.")


class DimensionReply(BaseModel):
    """Base of the per-dimension reply models (`value` is added per dimension)."""

    model_config = ConfigDict(extra="forbid")

    evidence: list[Evidence] = Field(description="Events supporting the judgement, first.")
    rationale: str = Field(description="Two to four sentences tying the evidence to the anchors.")


class ScoringReplyBase(BaseModel):
    """Base of the scoring reply; `scoring_model()` adds one field per dimension."""

    model_config = ConfigDict(extra="forbid")

    requirements: list[RequirementReply] = Field(
        description="The task's explicit requirements, each checked, before any score."
    )
    accomplishments: list[str] = Field(description="What the agent achieved, with evidence.")
    failures: list[str] = Field(description="What went wrong or was left undone.")

    def dimensions(self) -> dict[str, DimensionReply]:
        """The per-dimension replies keyed by dimension name."""
        return {
            name: value
            for name, value in self
            if isinstance(value, DimensionReply)  # requirements, accomplishments etc. are not
        }


def _value_type(cfg: ScoreConfig, rubric: Rubric) -> Any:
    if cfg.data_type == "CATEGORICAL":
        return Literal[tuple(cfg.labels)]
    return Literal[tuple(range(rubric.numeric_min, rubric.numeric_max + 1))]


def _value_help(cfg: ScoreConfig, rubric: Rubric) -> str:
    if cfg.data_type == "CATEGORICAL":
        return f"One of: {', '.join(cfg.labels)}."
    return f"An integer from {rubric.numeric_min} to {rubric.numeric_max}."


def _class_name(name: str) -> str:
    return "".join(part.capitalize() for part in name.replace("-", "_").split("_")) + "Score"


@cache
def _scoring_model_cached(rubric_json: str) -> type[ScoringReplyBase]:
    rubric = Rubric.model_validate_json(rubric_json)
    fields: dict[str, Any] = {}
    for cfg in rubric.dimensions:
        dim_model = create_model(
            _class_name(cfg.name),
            __base__=DimensionReply,
            value=(_value_type(cfg, rubric), Field(description=_value_help(cfg, rubric))),
        )
        fields[cfg.name] = (dim_model, Field(description=cfg.description))
    fields["summary"] = (str, Field(description="One paragraph on how the session went."))
    fields["recommendation"] = (
        Recommendation,
        Field(description="What should happen next: continue, retry, escalate or complete."),
    )
    return create_model("ScoringReply", __base__=ScoringReplyBase, **fields)


def scoring_model(rubric: Rubric) -> type[ScoringReplyBase]:
    """The scoring reply model for `rubric`, cached per rubric content.

    Args:
        rubric: The loaded rubric; its six judged dimensions become fields.

    Returns:
        A pydantic model: `accomplishments`, `failures`, one object per dimension
        (`evidence`, `rationale`, `value`), then `summary` and `recommendation`.
    """
    return _scoring_model_cached(rubric.model_dump_json())


SHIPPED = Path(__file__).with_name("structured_schemas.json")
"""The SDK's `transform_schema` of the default rubric's reply models, keyed by
`schema_key`: loading the SDK for it costs a process about 3 s of CPU."""


def schema_key(model: type[BaseModel]) -> str:
    """A hash of `model`'s JSON schema (what `transform_schema` transforms)."""
    raw = json.dumps(model.model_json_schema(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:32]


@cache
def _shipped() -> dict[str, Any]:
    try:
        loaded: dict[str, Any] = json.loads(SHIPPED.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return loaded


def structured_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The SDK's `transform_schema(model)`: the shipped copy for the default rubric's
    models, else the SDK's own (imported then). `tests/judge/test_prompts_schema.py` keeps
    the shipped copies equal to what the installed SDK makes (`renew_shipped`)."""
    shipped = _shipped().get(schema_key(model))
    if shipped is not None:
        return json.loads(json.dumps(shipped))  # a copy: callers may not share it
    from scorer.judge.sdk import transform_schema

    return transform_schema(model)


def shipped_models() -> list[type[BaseModel]]:
    """The reply models whose schemas are shipped: the default rubric's."""
    from scorer.judge.rubric import default_rubric

    return [ChunkNotes, scoring_model(default_rubric())]


def renew_shipped() -> None:
    """Write the shipped schemas anew from the installed SDK (after a rubric change)."""
    from scorer.judge.sdk import transform_schema

    table = {schema_key(m): transform_schema(m) for m in shipped_models()}
    # Not sorted: the order of the properties is the order the model writes them in.
    SHIPPED.write_text(json.dumps(table, indent=1) + "\n", encoding="utf-8")
    _shipped.cache_clear()


@cache
def output_config(model: type[BaseModel]) -> dict[str, Any]:
    """The `output_config` request param asking for JSON matching `model`.

    Mirrors what `client.messages.parse(output_format=model)` sends; we call
    `messages.create` instead so the raw text and the usage survive a parse failure.
    Built once per reply model and process (treat the result as read-only).
    """
    return {"format": {"type": "json_schema", "schema": structured_schema(model)}}
