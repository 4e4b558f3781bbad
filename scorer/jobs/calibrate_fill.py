"""Score the labelled sessions calibration needs: concurrently, within a cost cap, resumable.

`score-calibrate --judge llm` is the one command a user with a key runs to measure the LLM
judge, so this is built for a long, paid run:

    resume       a session already scored in the store with the same judge, model, rubric
                 version and prompt version is reused, never paid for twice; re-running
                 after an interruption or a cost cap continues where it stopped
    concurrency  sessions are judged by a thread pool (`--concurrency`)
    cost cap     a session starts only if spent + in-flight estimates + its own estimate
                 stay under `--max-cost`; the rest are reported as not started
    failures     an API outage or a bad transcript fails that session only (reported);
                 bad credentials stop the run
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scorer.calibrate import Label
from scorer.errors import CredentialsError, ScorerError
from scorer.jobs.run_state import Budget

OnDone = Callable[[float], None]
"""Called once per finished session with the USD it cost (the progress bar)."""


@dataclass
class FillResult:
    """What filling the store for calibration did."""

    scored: int = 0
    reused: int = 0
    """Labelled sessions already scored with the same judge, model, rubric and prompt."""
    not_started: int = 0
    """Left for the next run by the cost cap."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """`(session_id, reason)` of sessions that could not be scored now."""
    unscored: int = 0
    cost_usd: float = 0.0
    """Everything the judge calls cost, failed sessions' calls included."""
    failed_cost_usd: float = 0.0
    """The part of `cost_usd` spent on sessions that then failed."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_cost(self, usd: float, *, failed: bool = False) -> None:
        with self._lock:
            self.cost_usd = round(self.cost_usd + usd, 6)
            if failed:
                self.failed_cost_usd = round(self.failed_cost_usd + usd, 6)


@dataclass(frozen=True)
class FillOptions:
    """How to score the missing sessions."""

    judge: Literal["heuristic", "llm"]
    model: str | None = None
    effort: str | None = None
    fallback_model: str | None = None
    concurrency: int = 1
    max_cost: float | None = None


def todo(labels: list[Label]) -> list[Label]:
    """One label per session that has a transcript on disk."""
    unique = {lab.session_id: lab for lab in labels}.values()
    return [lab for lab in unique if (p := lab.meta.get("session_path")) and Path(p).exists()]


def fill(labels: list[Label], opts: FillOptions, on_done: OnDone | None = None) -> FillResult:
    """Score the labelled sessions the store has no current scorecard for.

    Raises:
        CredentialsError: The judge's key is missing or rejected (nothing more would work).
    """
    from scorer.judge.base import make_judge
    from scorer.sinks.store import ScoreStore

    judge = make_judge(
        opts.judge, model=opts.model, effort=opts.effort, fallback_model=opts.fallback_model
    )
    result, budget = FillResult(), Budget(opts.max_cost)
    with ScoreStore() as store:
        current = _current(store, judge)
        pending = [lab for lab in todo(labels) if lab.session_id not in current]
        result.reused = len(todo(labels)) - len(pending)

        def one(label: Label) -> None:
            _score_one(label, judge, store, budget, result, opts)
            if on_done is not None:
                on_done(result.cost_usd)

        with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
            for _ in pool.map(one, pending):
                pass
    return result


def _current(store: Any, judge: Any) -> set[str]:
    """Sessions scored by this judge, model, rubric version and prompt version."""
    from scorer.judge.rubric import default_rubric

    model = getattr(judge, "model", None)
    cards = store.scorecards(judge=judge.kind, model=model, rubric_version=default_rubric().version)
    prompt = getattr(getattr(judge, "prompts", None), "version", None)
    return {
        c.session_id
        for c in cards
        if c.status == "scored" and (prompt is None or c.prompt_version == prompt)
    }


def _score_one(
    label: Label, judge: Any, store: Any, budget: Budget, result: FillResult, opts: FillOptions
) -> None:
    from scorer.jobs.estimate import estimate_prepared
    from scorer.jobs.score import attach_session
    from scorer.prepare import prepare
    from scorer.sinks.base import publish
    from scorer.sources import resolve

    sid = label.session_id
    try:
        source = resolve(str(label.meta["session_path"]), task=label.meta.get("instruction"))
        prepared = prepare(source.load())
        estimate = 0.0
        if opts.judge == "llm" and opts.max_cost is not None:
            estimate = estimate_prepared(prepared, model=judge.model, judge=judge).cost_usd
        if not budget.reserve(estimate):
            with result._lock:
                result.not_started += 1
            return
        try:
            card = judge.judge(prepared)
        except ScorerError as exc:  # failed after some calls: they are billed all the same
            budget.settle(0.0, exc.spent_usd)
            result.add_cost(exc.spent_usd, failed=True)
            raise
        finally:
            budget.settle(estimate, 0.0)
        budget.settle(0.0, card.cost_usd)
        result.add_cost(card.cost_usd)
        card.meta.setdefault("redactions", prepared.redactions.total)
        card.meta.setdefault("origin", prepared.session.origin)
        card = attach_session(card, prepared)
        card.collection = "calibration"  # kept out of production lists, trends and views
        publish(card, [store])
        with result._lock:
            result.scored += card.status == "scored"
            result.unscored += card.status != "scored"
    except CredentialsError:
        raise
    except Exception as exc:  # one session never stops the calibration run
        with result._lock:
            result.failed.append((sid, " ".join(str(exc).split()) or type(exc).__name__))
