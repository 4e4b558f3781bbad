"""The success probability of a verdict: the seam the fitted goal model plugs into.

The harness reports AUROC, Brier score, ECE and a reliability diagram of each judge's
`goal_probability` (`scorer.calibrate.probability`). A heuristic card carries its own
(`Scorecard.goal_probability`); a verdict is the judge's raw reply JSON, so its
probability is computed here, from the reply and its run, the way the product turns a
reply into a card. Until the fitted model exists this returns None, and the report says
`n/a` for the LLM judge's probability figures.
"""

from __future__ import annotations

from typing import Any

from scorer.calibrate.validity.runs import BenchRun


def probability_of(verdict: dict[str, Any], run: BenchRun) -> float | None:
    """The probability that the run's own acceptance checks pass, given its verdict.

    Args:
        verdict: The judge's reply JSON (its checklist, goal label, ...), as ingested.
        run: The verdict's run; `run.prepared()` gives its prepared session (header,
            outcome signals), loaded only if asked for.

    Returns:
        A probability in [0, 1], or None when there is no model to compute it.
    """
    del verdict, run  # no fitted model yet
    return None
