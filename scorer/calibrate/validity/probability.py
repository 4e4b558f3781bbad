"""A verdict as the product's card would carry it: its goal probability and its label.

The harness reports AUROC, Brier score, ECE and a reliability diagram of each judge's
`goal_probability` (`scorer.calibrate.probability`). A heuristic card carries its own
(`Scorecard.goal_probability`); a verdict is the judge's raw reply JSON, so its card is
made here the way the product makes it (`AnthropicJudge.make_card`), and the shipped
model (`score_configs/goal_probability.json`) gives its probability and, by the goal rule,
its goal_achievement. Without a shipped model the probability is None (`n/a`) and the
label is the verdict's own.

With second opinions (`<run>.second-1.json`, `<run>.second-2.json`: a plain sample and the
adversarial one), a first verdict whose probability is in the uncertain band gets the
mean of all three, as `judge.second` does.
"""

from __future__ import annotations

from functools import lru_cache
from statistics import fmean
from typing import TYPE_CHECKING, Any

from scorer.calibrate.validity.runs import BenchRun

if TYPE_CHECKING:
    from scorer.judge.probability import GoalModels
    from scorer.models import Scorecard
    from scorer.prepare import Prepared


@lru_cache(maxsize=1)
def _judge() -> Any:
    from scorer.judge.anthropic import AnthropicJudge

    return AnthropicJudge(verify_tokens=False)


def product_card(reply: dict[str, Any], prepared: Prepared) -> Scorecard:
    """The card the product makes of a reply (before its goal probability)."""
    from scorer.models import JudgeUsage

    judge = _judge()
    parsed = judge.reply_model.model_validate(reply)
    session = prepared.session
    return judge.make_card(
        session.session_id, session.source.value, prepared.chunks, JudgeUsage(), {}, reply=parsed
    )


def product_verdict(
    verdict: dict[str, Any],
    run: BenchRun,
    seconds: list[dict[str, Any]] | None = None,
    models: GoalModels | None = None,
) -> tuple[float | None, str]:
    """(goal probability, goal_achievement) of a verdict as the product's card has them.

    Args:
        verdict: The first verdict's reply JSON.
        run: Its run (its prepared session gives the outcome signals).
        seconds: Second-opinion replies; used only when the first is in the band.
        models: The goal models (default: the shipped ones).
    """
    from scorer.judge.probability import features, goal_label, in_band, shipped_goal_models

    models = models or shipped_goal_models()
    own = str(verdict["goal_achievement"]["value"])
    if models is None:
        return None, own
    prepared = run.prepared()
    card = product_card(verdict, prepared)
    p = models.llm.model.predict(features(card, prepared.signals))
    if seconds and in_band(p, models.llm):
        others = [product_card(s, prepared) for s in seconds]
        p = fmean([p, *(models.llm.model.predict(features(o, prepared.signals)) for o in others)])
    return p, goal_label(p, models.llm.rule, card.requirements, own)


def probability_of(verdict: dict[str, Any], run: BenchRun) -> float | None:
    """The probability that the run's own acceptance checks pass, given its verdict."""
    return product_verdict(verdict, run)[0]
