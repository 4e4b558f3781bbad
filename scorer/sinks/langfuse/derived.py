"""Scores computed in code beside the rubric (`goal_probability`), as Langfuse gets them.

A derived score config (`score_configs/goal_probability.toml`, `derived = true`) takes its
value from the scorecard field of the same name; a card without one (judged before the
probability existed, or unscored) has no such score, and its push writes the seven.
Pure: the push builds the requests, these say what goes in them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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


def _opinions(card: Scorecard) -> list[dict[str, Any]]:
    return [o for o in card.meta.get("second_opinions") or [] if isinstance(o, dict)]


def _p(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "?"


def probability_comment(card: Scorecard) -> str:
    """How the goal probability was made: from what, by which model version, and after
    which second opinions; and the judge's own label when the probability relabelled it."""
    meta = card.meta
    source = (
        "the heuristic judge's rules and the session's signals"
        if card.judge == "heuristic"
        else "the judge's requirement checklist and the session's outcome signals"
    )
    model = meta.get("goal_probability_model") or "(unversioned)"
    text = (
        f"P(the task's own acceptance checks pass) = {_p(card.goal_probability)}, "
        f"from {source} by the fitted model {model}"
    )
    opinions = _opinions(card)
    if opinions:
        asked = ", ".join(
            f"{o.get('kind')} {_p(o['p'])}" if "p" in o else f"{o.get('kind')} failed"
            for o in opinions
        )
        first = _p(meta.get("first_goal_probability"))
        text += f", after second opinions (first verdict {first}; {asked}; mean of those had)"
    text += "."
    goal = card.scores.get("goal_achievement")
    if meta.get("judge_goal") and goal is not None:
        text += (
            f" goal_achievement follows from it: {goal.label} "
            f"(the judge said {meta['judge_goal']})."
        )
    return text


def probability_details(card: Scorecard) -> dict[str, Any]:
    """What the probability depends on beyond the card's versions: the model file's
    version, the first verdict's probability and each second opinion (no checklists)."""
    meta = card.meta
    return {
        "goal_probability_model": meta.get("goal_probability_model"),
        "first_goal_probability": meta.get("first_goal_probability"),
        "second_opinions": [
            {k: o[k] for k in ("kind", "p", "judge_goal", "error") if k in o}
            for o in _opinions(card)
        ],
        "judge_goal": meta.get("judge_goal"),
    }
