"""Score the labelled sessions calibration needs: concurrently, within a cost cap, resumable.

`score-calibrate --judge llm` is the one command a user with a key runs to measure the LLM
judge, so this is built for a long, paid run:

    resume       a session already scored in the store with the same judge, model, rubric
                 version and prompt version is reused, never paid for twice; re-running
                 after an interruption or a cost cap continues where it stopped
    apart        calibration runs are stored in the `calibration` collection, beside (never
                 in place of) production runs of the same session; a production card of
                 the same identity is copied there instead of judging the session again
    concurrency  sessions are judged by a thread pool (`--concurrency`)
    cost cap     a session starts only if spent + in-flight estimates + its own estimate
                 stay under `--max-cost`; the rest are reported as not started
    failures     an API outage or a bad transcript fails that session only (reported);
                 bad credentials stop the run
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from scorer.calibrate import Label
from scorer.errors import CredentialsError, RunInterrupted, ScorerError
from scorer.jobs.backfill_pool import drain
from scorer.jobs.run_state import failure_reason, is_verdict
from scorer.jobs.session_leases import SessionLeases
from scorer.jobs.step import Budget, JudgingStep
from scorer.prepare.prepared import PrepOptions

if TYPE_CHECKING:
    from scorer.jobs.estimate import Estimator
    from scorer.judge.base import Judge
    from scorer.models import Scorecard
    from scorer.prepare import Prepared
    from scorer.settings import Settings
    from scorer.sinks.store import ScoreStore

OnDone = Callable[[float], None]
"""Called once per finished session with the USD it cost (the progress bar)."""


@dataclass
class FillResult:
    """What filling the store for calibration did."""

    scored: int = 0
    reused: int = 0
    """Labelled sessions already scored for calibration with the same judge, model,
    rubric and prompt."""
    copied: int = 0
    """Labelled sessions whose production card (same identity) was copied into the
    calibration collection instead of being judged again."""
    not_started: int = 0
    """Left for the next run by the cost cap."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """`(session_id, reason)` of sessions whose judging failed now (an API outage, a bad
    key...): a rerun tries again."""
    left_out: list[tuple[str, str]] = field(default_factory=list)
    """`(session_id, reason)` of sessions that cannot be scored as they are (a transcript
    that cannot be loaded or prepared, one too long for the judge even re-chunked): the
    same file fails the same way, so they are left out of the report."""
    busy: list[tuple[str, str]] = field(default_factory=list)
    """`(session_id, "being scored by process N (...)")` of sessions another process
    held the lease of (`jobs.session_leases`): left to it, not judged here."""
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

    Each session goes through the judging step (`jobs.step`), as on every other path.

    Raises:
        CredentialsError: The judge's key is missing or rejected (nothing more would work).
    """
    from scorer.jobs.score import judge_from_settings
    from scorer.jobs.setup import run_settings
    from scorer.sinks.store import ScoreStore

    settings = run_settings()
    judge = judge_from_settings(
        opts.judge, settings, model=opts.model, effort=opts.effort,
        fallback_model=opts.fallback_model,
    )  # fmt: skip
    step = JudgingStep(Budget(opts.max_cost), _estimator(judge, settings))
    chunking = PrepOptions.from_settings(settings)
    result = FillResult()
    with (
        ScoreStore(settings.store_path) as store,
        SessionLeases(settings.store_path, "score-calibrate") as leases,
    ):
        wanted = todo(labels)
        current = _current(store, judge, "calibration")
        result.copied = _copy_production(store, judge, wanted, current)
        pending = [lab for lab in wanted if lab.session_id not in current]
        result.reused = len(wanted) - len(pending) - result.copied
        run = _Fill(judge, store, step, chunking, result, leases)

        def one(label: Label) -> None:
            run.leased(label)
            if on_done is not None:
                on_done(result.cost_usd)

        with ThreadPoolExecutor(max_workers=max(1, opts.concurrency)) as pool:
            futures = [pool.submit(one, label) for label in pending]
            try:
                for fut in as_completed(futures):
                    fut.result()
            except KeyboardInterrupt:  # the calls on the wire are stored; nothing new starts
                run.stopped.set()
                drain(pool, futures)
                raise RunInterrupted(result) from None
    return result


@dataclass
class _Fill:
    """What scoring one labelled session needs, shared by the pool's threads."""

    judge: Judge
    store: ScoreStore
    step: JudgingStep
    chunking: PrepOptions
    result: FillResult
    leases: SessionLeases
    stopped: threading.Event = field(default_factory=threading.Event)
    """Ctrl-C: sessions not yet judged are left (not started)."""

    def leased(self, label: Label) -> None:
        """Score the session under its lease: one a live process holds is left to it, and
        one another calibration stored meanwhile is reused."""
        sid = label.session_id
        holder = self.leases.take(sid)
        if holder is not None:
            with self.result._lock:
                self.result.busy.append((sid, holder.text()))
            return
        try:
            if self._calibrated(sid):
                with self.result._lock:
                    self.result.reused += 1
                return
            self._score(label)
        finally:
            self.leases.release(sid)

    def _score(self, label: Label) -> None:
        """Load, prepare, judge (the judging step) and store one session; a failure is
        recorded in the result, never raised (bad credentials stop the run)."""
        from scorer.sources import resolve

        sid, result = label.session_id, self.result
        try:
            source = resolve(str(label.meta["session_path"]), task=label.meta.get("instruction"))
            prepared = self.chunking.run(source.load())
        except Exception as exc:  # a bad transcript: no judge call was made for it
            with result._lock:
                result.left_out.append((sid, failure_reason(exc)))
            return
        if self.stopped.is_set():  # Ctrl-C while it was prepared
            with result._lock:
                result.not_started += 1
            return
        try:
            self._judge(prepared)
        except CredentialsError:
            raise
        except Exception as exc:  # one session never stops the calibration run
            with result._lock:
                (result.left_out if is_verdict(exc) else result.failed).append(
                    (sid, failure_reason(exc))
                )

    def _judge(self, prepared: Prepared) -> None:
        from scorer.sinks.base import publish

        result = self.result
        try:
            card = self.step.run(prepared, self.judge).card
        except ScorerError as exc:  # failed after some calls: they are billed all the same
            result.add_cost(exc.spent_usd, failed=True)
            raise
        if card is None:  # the cost cap
            with result._lock:
                result.not_started += 1
            return
        result.add_cost(card.cost_usd)
        card.collection = "calibration"  # kept out of production lists, trends and views
        publish(card, [self.store])
        with result._lock:
            result.scored += card.status == "scored"
            result.unscored += card.status != "scored"

    def _calibrated(self, sid: str) -> bool:
        card = self.store.latest(
            sid, judge=self.judge.kind, model=self.judge.model, collection="calibration"
        )
        return (
            card is not None
            and card.status == "scored"
            and card.prompt_version == self.judge.prompt_version
            and card.rubric_version == _rubric_version()
        )


def _estimator(judge: Judge, settings: Settings) -> Estimator | None:
    """Prices sessions for `--max-cost` (the LLM judge only)."""
    from scorer.judge.anthropic import AnthropicJudge

    if not isinstance(judge, AnthropicJudge):
        return None
    from scorer.jobs.estimate import Estimator
    from scorer.judge.token_counts import TokenCountCache

    return Estimator(judge, counts=TokenCountCache(settings.token_counts_path))


def _rubric_version() -> str:
    from scorer.judge.rubric import default_rubric

    return default_rubric().version


def _current_cards(store: ScoreStore, judge: Judge, collection: str) -> list[Scorecard]:
    """Scored cards of this judge, model, rubric version and prompt version in `collection`."""
    cards = store.scorecards(
        judge=judge.kind,
        model=judge.model,
        rubric_version=_rubric_version(),
        collection=collection,
    )
    return [c for c in cards if c.status == "scored" and c.prompt_version == judge.prompt_version]


def _current(store: ScoreStore, judge: Judge, collection: str) -> set[str]:
    """Sessions with a current card (`_current_cards`) in `collection`."""
    return {c.session_id for c in _current_cards(store, judge, collection)}


def _copy_production(
    store: ScoreStore, judge: Judge, wanted: list[Label], current: set[str]
) -> int:
    """Copy the production card of each wanted session without a calibration card into
    the calibration collection (adding it to `current`): the same judge already scored
    it, and calibration keeps its own runs without paying for them twice.

    Returns:
        How many were copied.
    """
    ids = {lab.session_id for lab in wanted} - current
    copied = 0
    for card in _current_cards(store, judge, "production"):
        if card.session_id in ids and card.session_id not in current:
            copy = card.model_copy(deep=True, update={"collection": "calibration"})
            copy.meta["copied_from"] = "production"
            store.save(copy)
            current.add(card.session_id)
            copied += 1
    return copied
