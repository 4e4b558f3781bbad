"""`JudgeConfig`: everything the LLM judge's result depends on, decided once at the edge.

The CLI and the job entry points build one from the options and the settings
(`JudgeConfig.from_settings`) and hand it down; the judge itself never reads the
environment. Frozen, so a run cannot change its judge half-way.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from scorer.errors import ConfigError
from scorer.judge.catalog import EFFORTS
from scorer.judge.cost import Pricing, load_pricing
from scorer.judge.probability import GoalModels, shipped_goal_models
from scorer.judge.prompts import PromptSet, default_prompts
from scorer.judge.rubric import Rubric, default_rubric
from scorer.settings import (
    DEFAULT_EFFORT,
    DEFAULT_ESTIMATE_FACTOR,
    DEFAULT_FALLBACK_MODEL,
    DEFAULT_MODEL,
)

if TYPE_CHECKING:
    from scorer.settings import Settings


@dataclass(frozen=True)
class JudgeConfig:
    """The LLM judge's model, effort, fallback, rubric, prompts, limits and prices.

    Raises:
        ConfigError: `effort` is not one of low, medium, high, xhigh, max.
    """

    model: str = DEFAULT_MODEL
    effort: str = DEFAULT_EFFORT
    """`output_config.effort`: low, medium, high, xhigh or max."""
    fallback_model: str | None = DEFAULT_FALLBACK_MODEL
    """Where a refused request is retried once; None (or "") for no fallback."""
    rubric: Rubric = field(default_factory=default_rubric)
    prompts: PromptSet = field(default_factory=default_prompts)
    context_window: int | None = None
    """Overrides the model table's context window (`SCORER_CONTEXT_WINDOW`)."""
    max_prompt_tokens: int | None = None
    """The single-call ceiling (`SCORER_MAX_PROMPT_TOKENS`); None: window − max_tokens."""
    estimate_factor: float = DEFAULT_ESTIMATE_FACTOR
    """Claude tokens per cl100k token, for estimates made without `count_tokens`."""
    pricing: Pricing = field(default_factory=Pricing)
    goal_models: GoalModels | None = field(default_factory=shipped_goal_models)
    """The goal-probability models (`score_configs/goal_probability.json`); None: no
    probability (a checkout without the fitted file)."""
    second_opinions: bool = True
    """Ask again (twice) when a first verdict's probability is in the uncertain band."""

    def __post_init__(self) -> None:
        if self.effort not in EFFORTS:
            raise ConfigError(f"effort must be one of {', '.join(EFFORTS)}, got {self.effort!r}")
        if not self.fallback_model:
            object.__setattr__(self, "fallback_model", None)

    @property
    def prompt_version(self) -> str:
        return self.prompts.version

    def with_options(
        self,
        *,
        model: str | None = None,
        effort: str | None = None,
        fallback_model: str | None = None,
        second_opinions: bool | None = None,
    ) -> JudgeConfig:
        """This config with the command's options applied (None keeps the value)."""
        return replace(
            self,
            model=model or self.model,
            effort=effort or self.effort,
            fallback_model=self.fallback_model if fallback_model is None else fallback_model,
            second_opinions=self.second_opinions if second_opinions is None else second_opinions,
        )

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        model: str | None = None,
        effort: str | None = None,
        fallback_model: str | None = None,
        rubric: Rubric | None = None,
        second_opinions: bool | None = None,
    ) -> JudgeConfig:
        """The config of a run: the command's options over the `SCORER_*` settings."""
        base = cls(
            model=settings.model,
            effort=settings.effort,
            fallback_model=settings.fallback_model,
            rubric=rubric or default_rubric(),
            context_window=settings.context_window,
            max_prompt_tokens=settings.max_prompt_tokens,
            estimate_factor=settings.estimate_factor,
            pricing=load_pricing(settings.prices_file),
            second_opinions=settings.second_opinions,
        )
        return base.with_options(
            model=model, effort=effort, fallback_model=fallback_model,
            second_opinions=second_opinions,
        )  # fmt: skip
