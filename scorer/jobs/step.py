"""The one judging step: estimate → reserve → judge → settle → finish the card.

Every path that judges a session runs this step: `score-session` (`jobs.score`), the
direct backfill (`jobs.pipeline`), Message Batches (`jobs.batches`) and calibration
(`jobs.calibrate_fill`). They only decide when, how many and through which transport;
none of them wires the step by hand, so a stored card carries the same fields whichever
path made it:

    estimate   what the LLM judge would spend (only when a cost cap needs it)
    reserve    that much of the cap, or "not started" (the cap is reached)
    judge      the judge's own call(s); a failure after some calls carries their cost
    settle     the reservation is released and the real cost (or the failed calls'
               cost) is counted, whatever happened
    finish     the card gets the session's description, its redacted timeline, its
               origin, the redaction count and the input warnings

Message Batches judge through their own transport, so they use the pieces (`start`,
`finish`, `fail`) around it instead of `run`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from scorer.errors import ScorerError
from scorer.models import SessionInfo, TimelineEvent

if TYPE_CHECKING:
    from scorer.judge.base import Judge
    from scorer.models import Scorecard
    from scorer.prepare.prepared import Prepared

Estimator = Callable[["Prepared"], float]
"""USD a judge would spend on a prepared session (`jobs.estimate.Estimator`)."""


class Budget:
    """Spent cost plus in-flight estimates against an optional cap (thread-safe)."""

    def __init__(self, cap: float | None = None) -> None:
        self.cap = cap
        self.spent = 0.0
        self.in_flight = 0.0
        self.stopped = False
        self._lock = threading.Lock()

    def reserve(self, estimate: float) -> bool:
        """Reserve `estimate` for a session about to be judged; False (and stop) if over cap."""
        with self._lock:
            if self.stopped:
                return False
            if self.cap is not None and self.spent + self.in_flight + estimate > self.cap:
                self.stopped = True
                return False
            self.in_flight += estimate
            return True

    def settle(self, estimate: float, actual: float) -> None:
        """Release a reservation of `estimate` and count `actual` USD as spent."""
        with self._lock:
            self.in_flight = max(0.0, self.in_flight - estimate)
            self.spent += actual


@dataclass(frozen=True)
class Outcome:
    """What the step did with one session."""

    card: Scorecard | None
    """The finished card (scored or unscored); None when the cost cap left it unstarted."""
    estimate_usd: float = 0.0
    """What was reserved for it."""

    @property
    def started(self) -> bool:
        return self.card is not None


def finish_card(card: Scorecard, prepared: Prepared) -> Scorecard:
    """Stamp what every stored card carries, whichever path judged it.

    The session's description (`SessionInfo`), its redacted rendered timeline (for the
    store and the viewer), `meta.origin` (calibration pairs cards to labels by it),
    `meta.redactions`, `meta.input_warnings` (lines skipped or decoded with
    replacements), `meta.notes` (re-chunks) and `meta.final_state` (whether the
    workspace's final state was read, when, and which events hold it; or why not). The versions (prompt, rubric, model,
    package) are the judge's own, set when it made the card.
    """
    session = prepared.session
    warnings = session.extra.get("warnings")
    if warnings:
        card.meta.setdefault("input_warnings", list(warnings))
    card.meta.setdefault("redactions", prepared.redactions.total)
    if session.origin:
        card.meta.setdefault("origin", session.origin)
    if prepared.notes:
        card.meta.setdefault("notes", list(prepared.notes))
    if isinstance(session.extra.get("final_state"), dict):
        card.meta.setdefault("final_state", dict(session.extra["final_state"]))
    card.describe(SessionInfo.of(session, n_events=len(prepared.events)))
    card.attach_timeline([TimelineEvent(*e) for e in prepared.events])
    return card


class JudgingStep:
    """The step for one run: its budget and how it estimates (thread-safe).

    Args:
        budget: The run's cost cap and spending (None: no cap, nothing counted).
        estimate: Prices a session for the cap; None (the heuristic judge, or no cap)
            reserves nothing.
    """

    def __init__(self, budget: Budget | None = None, estimate: Estimator | None = None) -> None:
        self.budget = budget or Budget()
        self.estimate = estimate

    def start(self, prepared: Prepared) -> float | None:
        """Estimate and reserve; the reserved USD, or None when the cap is reached."""
        cost = 0.0
        if self.estimate is not None and self.budget.cap is not None:
            cost = self.estimate(prepared)
        return cost if self.budget.reserve(cost) else None

    def finish(self, prepared: Prepared, card: Scorecard, reserved: float) -> Scorecard:
        """Settle the judged card's cost and finish it (`finish_card`)."""
        self.budget.settle(reserved, card.cost_usd)
        return finish_card(card, prepared)

    def fail(self, reserved: float, spent_usd: float) -> None:
        """Settle a session that failed or stopped after calls costing `spent_usd`."""
        self.budget.settle(reserved, spent_usd)

    def run(self, prepared: Prepared, judge: Judge) -> Outcome:
        """The whole step with `judge` judging in this thread.

        Raises:
            ScorerError: From the judge (its `spent_usd` is counted first).
        """
        reserved = self.start(prepared)
        if reserved is None:
            return Outcome(None)
        try:
            card = judge.judge(prepared)
        except ScorerError as exc:  # stopped or failed after some calls: they count
            self.fail(reserved, exc.spent_usd)
            raise
        except BaseException:
            self.fail(reserved, 0.0)
            raise
        return Outcome(self.finish(prepared, card, reserved), reserved)


def judge_session(
    prepared: Prepared,
    judge: Judge,
    budget: Budget | None = None,
    estimate: Estimator | None = None,
) -> Outcome:
    """Run the judging step on one prepared session (see the module docstring)."""
    return JudgingStep(budget, estimate).run(prepared, judge)
