"""Scores computed in code beside the rubric (`goal_probability`), as Langfuse gets them.

A derived score config (`score_configs/goal_probability.toml`, `derived = true`) takes its
value from the scorecard field of the same name; a card without one (judged before the
probability existed, or unscored) has no such score, and its push writes the seven.
Pure: the push builds the requests, these say what goes in them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scorer.goal_note import probability_note, second_opinions

if TYPE_CHECKING:
    from scorer.judge.rubric import Rubric
    from scorer.models import Scorecard

__all__ = ["derived_values", "probability_comment", "probability_details", "pushed_names"]


def derived_values(scorecard: Scorecard, rubric: Rubric) -> dict[str, float]:
    """The derived scores this card has: name → value."""
    values = {cfg.name: getattr(scorecard, cfg.name, None) for cfg in rubric.derived}
    return {name: float(v) for name, v in values.items() if isinstance(v, int | float)}


def pushed_names(scorecard: Scorecard, rubric: Rubric) -> list[str]:
    """The names of the scores a push of this card writes, in the order it writes them."""
    return [*(s.name for s in rubric.scores), *derived_values(scorecard, rubric)]


def probability_comment(card: Scorecard) -> str:
    """The Langfuse comment: the probability, how it was made (the model's version), the
    second opinions it combines and the judge's own label when it was relabelled."""
    return "\n".join(probability_note(card, value=True))


def probability_details(card: Scorecard) -> dict[str, Any]:
    """What the probability depends on beyond the card's versions: the model file's
    version, the first verdict's probability and each second opinion (no checklists)."""
    meta = card.meta
    return {
        "goal_probability_model": meta.get("goal_probability_model"),
        "first_goal_probability": meta.get("first_goal_probability"),
        "second_opinions": [
            {k: o[k] for k in ("kind", "p", "judge_goal", "error") if k in o}
            for o in second_opinions(card)
        ],
        "judge_goal": meta.get("judge_goal"),
    }
