"""How a card's goal probability was made, in words (pure).

Every place a user meets the probability says the same: the terminal's scorecard, the
hook's Markdown report and the Langfuse score's comment. The facts are on the card:
`goal_probability`, and in `meta` the model file's version (`goal_probability_model`),
the first verdict's probability and the second opinions when they were asked
(`first_goal_probability`, `second_opinions`), and the judge's own label when the
probability relabelled goal_achievement (`judge_goal`).
"""

from __future__ import annotations

from typing import Any

from scorer.models import Scorecard

__all__ = ["opinion_text", "probability_note", "second_opinions"]


def second_opinions(card: Scorecard) -> list[dict[str, Any]]:
    """The second opinions asked for this card (each a dict: kind, p, judge_goal, or
    error when it could not be had)."""
    return [o for o in card.meta.get("second_opinions") or [] if isinstance(o, dict)]


def _p(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, int | float) else "?"


def opinion_text(opinion: dict[str, Any]) -> str:
    """`adversarial 0.78 (partial)`, or `sample: none (overloaded)`."""
    kind = opinion.get("kind") or "?"
    if not isinstance(opinion.get("p"), int | float):
        return f"{kind}: none ({opinion.get('error') or 'no answer'})"
    label = f" ({opinion['judge_goal']})" if opinion.get("judge_goal") else ""
    return f"{kind} {_p(opinion['p'])}{label}"


def probability_note(card: Scorecard, *, value: bool = False) -> list[str]:
    """One line per fact: what the probability means and how it was made (the model's
    version), the second opinions it combines, and the judge's own label when it differs
    from the goal that follows from the probability. Empty without a probability.

    Args:
        value: Lead with the probability itself (`= 0.73`), for a place that does not
            show it beside the text.
    """
    p = card.goal_probability
    if p is None:
        return []
    meta = card.meta
    source = (
        "the heuristic judge's rules and the session's signals"
        if card.judge == "heuristic"
        else "the judge's requirement checklist and the session's outcome signals"
    )
    model = meta.get("goal_probability_model") or "(unversioned)"
    head = "P(the task's own acceptance checks pass)" + (f" = {_p(p)}" if value else "")
    lines = [f"{head}, from {source} by the fitted model {model}"]
    opinions = second_opinions(card)
    if opinions:
        asked = ", ".join(opinion_text(o) for o in opinions)
        first = _p(meta.get("first_goal_probability"))
        lines.append(f"after second opinions: {asked}; the mean with the first verdict's {first}")
    goal = card.scores.get("goal_achievement")
    if meta.get("judge_goal") and goal is not None and goal.label != meta["judge_goal"]:
        lines.append(
            f"goal_achievement follows from it: {goal.label} (the judge said {meta['judge_goal']})"
        )
    return lines
