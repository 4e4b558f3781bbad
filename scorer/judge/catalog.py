"""What the judge knows about Claude models and thinking budgets (pure data, no SDK).

    context window   from `MODELS` (dated snapshots share their alias), overridden by
                     `SCORER_CONTEXT_WINDOW`; unknown models get `DEFAULT_CONTEXT_WINDOW`
    max_tokens       room for the JSON answer plus a thinking allowance per effort level,
                     capped at the model's maximum output
    estimates        the answer and thinking tokens a call typically bills, per effort
    deprecations     judging with a model past (or near) its end of life warns

Sonnet 5.5 thinks by default and thinking tokens count against `max_tokens` and are billed
as output, so both the request budget and the cost estimate depend on the effort level.
"""

from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from typing import Literal, get_args

from scorer.settings import DEFAULT_MODEL

log = logging.getLogger(__name__)

Effort = Literal["low", "medium", "high", "xhigh", "max"]
EFFORTS: tuple[str, ...] = get_args(Effort)
DEFAULT_EFFORT: Effort = "medium"
"""Judging is reading plus applying written anchors, not open-ended search: `medium`
thinks enough to walk the requirement checklist while costing far less than the model's
own default (`high`). Raise it with `--effort high` when calibration says it pays."""

DEFAULT_FALLBACK_MODEL = "claude-sonnet-4-6"
"""Where a refused request is retried (a different model generation, different classifiers)."""

CallKind = Literal["notes", "score"]

NONSTREAMING_MAX_TOKENS = 21_333
"""Above this `max_tokens` the SDK refuses a non-streaming call (it would outlast 10 min)."""


@dataclass(frozen=True)
class ModelSpec:
    """Limits of one model."""

    context_window: int
    max_output: int


MODELS: dict[str, ModelSpec] = {
    # From each model's overview page on platform.claude.com (November 2026).
    "claude-sonnet-5-5": ModelSpec(1_000_000, 128_000),
    "claude-opus-5-5": ModelSpec(1_000_000, 128_000),
    "claude-sonnet-5": ModelSpec(1_000_000, 128_000),
    "claude-sonnet-4-6": ModelSpec(1_000_000, 128_000),
    "claude-opus-4-6": ModelSpec(200_000, 128_000),
    "claude-sonnet-4-5": ModelSpec(200_000, 64_000),
    "claude-haiku-4-5": ModelSpec(200_000, 64_000),
}
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_MAX_OUTPUT = 32_000

ANSWER_ALLOWANCE: dict[CallKind, int] = {"notes": 4_000, "score": 8_000}
"""`max_tokens` room for the JSON answer itself (the checklist makes scoring replies long)."""
THINKING_ALLOWANCE: dict[str, int] = {
    "low": 2_000,
    "medium": 8_000,
    "high": 16_000,
    "xhigh": 32_000,
    "max": 48_000,
}
"""`max_tokens` room for thinking per effort (the model stops thinking early, not late)."""

EXPECTED_ANSWER: dict[CallKind, int] = {"notes": 700, "score": 2_400}
"""Typical billed answer tokens (estimates only)."""
EXPECTED_THINKING: dict[str, int] = {
    "low": 600,
    "medium": 2_500,
    "high": 6_000,
    "xhigh": 12_000,
    "max": 20_000,
}
"""Typical billed thinking tokens per call at each effort (estimates only)."""


def spec(model: str) -> ModelSpec | None:
    """The model's limits; dated snapshots (`claude-sonnet-5-5-20261001`) use their alias."""
    if model in MODELS:
        return MODELS[model]
    for name in sorted(MODELS, key=len, reverse=True):
        if model.startswith(name + "-"):
            return MODELS[name]
    return None


def context_window(model: str, override: int | None = None) -> int:
    """Tokens of prompt plus output the model accepts (`override`: `SCORER_CONTEXT_WINDOW`)."""
    if override:
        return override
    found = spec(model)
    return found.context_window if found else DEFAULT_CONTEXT_WINDOW


def max_output(model: str) -> int:
    """The largest `max_tokens` the model accepts."""
    found = spec(model)
    return found.max_output if found else DEFAULT_MAX_OUTPUT


def max_tokens_for(kind: CallKind, effort: str, model: str) -> int:
    """`max_tokens` of one call: answer room plus thinking room, within the model's limit."""
    return min(ANSWER_ALLOWANCE[kind] + THINKING_ALLOWANCE[effort], max_output(model))


def grown_budget(max_tokens: int, model: str) -> int | None:
    """The larger budget of a retry after `stop_reason: max_tokens` (None: already at the cap)."""
    bigger = min(max_tokens * 2, max_output(model))
    return bigger if bigger > max_tokens else None


def expected_output(kind: CallKind, effort: str) -> int:
    """Output tokens one call typically bills: answer plus thinking at `effort`."""
    return EXPECTED_ANSWER[kind] + EXPECTED_THINKING[effort]


DEPRECATED_MODELS: dict[str, str] = {
    "claude-sonnet-4-5": "2026-11-30",
    "claude-sonnet-4-5-20250929": "2026-11-30",
    "claude-sonnet-4-0": "2026-06-15",
    "claude-sonnet-4-20250514": "2026-06-15",
    "claude-opus-4-0": "2026-06-15",
    "claude-3-7-sonnet-latest": "2026-02-19",
    "claude-3-7-sonnet-20250219": "2026-02-19",
}
"""Model id → end-of-life date; judging with one of these warns."""


class ModelDeprecationWarning(UserWarning):
    """The configured judge model is deprecated or past its end of life."""


def warn_if_deprecated(model: str) -> None:
    """Warn (and log) when `model` is in the deprecation table."""
    eol = DEPRECATED_MODELS.get(model)
    if eol:
        msg = f"judge model {model} is deprecated (end of life {eol}); set SCORER_MODEL={DEFAULT_MODEL}"
        log.warning(msg)
        warnings.warn(msg, ModelDeprecationWarning, stacklevel=3)
