"""Backfill run state: options, per-session results, the summary, budget and ledger gating.

Everything here is shared by the direct path (`jobs.pipeline`) and the Message Batches path
(`jobs.batches`); neither imports the run loop (`jobs.backfill`), so there is no cycle.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypedDict

from pydantic import BaseModel, Field

from scorer.errors import ScorerError
from scorer.jobs.discovery import SessionRef
from scorer.jobs.forecast import Forecast
from scorer.jobs.ledger import DONE_STATES, Ledger
from scorer.jobs.ratelimit import RateLimiter, StopSignal
from scorer.jobs.session_leases import SessionLeases
from scorer.jobs.step import Budget, JudgingStep
from scorer.models import Session
from scorer.prepare.prepared import PrepOptions

if TYPE_CHECKING:
    from scorer.jobs.account import ChunkPlan
    from scorer.jobs.account_limits import PacingStatus
    from scorer.jobs.estimate import Estimator
    from scorer.jobs.prep_pool import PrepPool
    from scorer.judge.base import BatchJudge, Judge
    from scorer.langfuse_client import LangfuseClient
    from scorer.sinks.base import ScoreSink
    from scorer.sinks.store import ScoreStore

log = logging.getLogger(__name__)

PREP_THREADS = 2
"""Threads preparing sessions at once (the rest of the look-ahead workers queue)."""

SourceName = Literal["claude-code", "langfuse"]
Outcome = Literal[
    "scored", "incomplete", "skipped", "unscored", "failed", "not_started", "estimated", "busy"
]
"""`incomplete`: judged and stored, but Langfuse did not take all seven scores yet;
`busy`: another live process holds the session's lease (`jobs.session_leases`) and is
scoring it."""


class BackfillOptions(BaseModel):
    """Everything a backfill run is told (the CLI builds this from its flags)."""

    source: SourceName = "claude-code"
    start: datetime | None = None
    """Window start (inclusive). Local: file mtime; Langfuse: root observation start."""
    end: datetime | None = None
    """Window end (exclusive); defaults to now."""
    tags: list[str] = Field(default_factory=list)
    environment: str | None = None
    user: str | None = None
    project: str | None = None
    sample: int | None = None
    fraction: float | None = None
    seed: int = 0
    limit: int | None = None
    concurrency: int = 4
    max_cost: float | None = None
    dry_run: bool = False
    rescore: bool = False
    judge: Literal["llm", "heuristic"] = "llm"
    backend: Literal["api", "claude-code"] = "api"
    """How the LLM judge's requests travel: the Messages API, or the user's `claude -p`."""
    model: str | None = None
    effort: str | None = None
    """The LLM judge's `output_config.effort` (None: `SCORER_EFFORT`)."""
    fallback_model: str | None = None
    """Where the LLM judge retries a refusal (None: `SCORER_FALLBACK_MODEL`)."""
    second_opinions: bool | None = None
    """Ask again when a goal verdict is uncertain (None: `SCORER_SECOND_OPINIONS`)."""
    final_state: bool | None = None
    """Add each local session's workspace final state (None: `SCORER_FINAL_STATE`)."""
    projects_root: Path | None = None
    shard: tuple[int, int] | None = None
    batch_api: bool = False
    escalate_below: float | None = None
    calibration_sample: int = 0
    queue: str = "session-scorer-review"
    idle_minutes: float = 30.0
    push: bool | None = None
    """Write scores to Langfuse; None means "when the source is Langfuse"."""
    max_attempts: int = 3
    """A session failed this many times (over runs) is not retried again."""
    verify_sample: int = 5
    """Sessions pushed this run whose scores are read back from Langfuse (0: none)."""

    def key_params(self, rubric_version: str, model: str) -> dict[str, Any]:
        """What decides the run's result, hence its ledger key."""
        return {
            "source": self.source,
            "start": self.start,
            "end": self.end,
            "tags": sorted(self.tags),
            "environment": self.environment,
            "user": self.user,
            "project": self.project,
            "sample": self.sample,
            "fraction": self.fraction,
            "seed": self.seed,
            "limit": self.limit,
            "shard": self.shard,
            "judge": self.judge,
            "model": model if self.judge == "llm" else None,
            "rubric_version": rubric_version,
            "rescore": self.rescore,
        }

    @property
    def should_push(self) -> bool:
        return self.source == "langfuse" if self.push is None else self.push


class TokenCounts(TypedDict):
    """A scorecard's token usage, as keyword arguments of the ledger and `SessionResult`."""

    input_tokens: int
    output_tokens: int


class SessionResult(BaseModel):
    """What happened to one session in this run."""

    session_id: str
    outcome: Outcome
    reason: str | None = None
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    overall: float | None = None
    recommendation: str | None = None
    requests: int = 0
    """Judge calls a dry run expects for the session (its estimate)."""
    second_opinions: float = 0.0
    """Second-opinion calls a dry run expects for the session (a share of two)."""
    title: str | None = None
    """The session's title, from its stored card (None when it never got one)."""
    goal: str | None = None
    """The goal_achievement label of its stored card."""


class BackfillSummary(BaseModel):
    """The final report (printed as a table, or as JSON with `--json`)."""

    run_key: str
    dry_run: bool = False
    interrupted: bool = False
    """Ctrl-C ended the run early (the counts are what it did until then)."""
    discovered: int = 0
    active: int = 0
    """Sessions left alone because they were active within the idle threshold."""
    selected: int = 0
    scored: int = 0
    incomplete: int = 0
    """Scored and stored, but not (fully) in Langfuse: the next run or `scorer scores push`
    finishes them."""
    skipped: int = 0
    unscored: int = 0
    failed: int = 0
    not_started: int = 0
    """Left for the next run (cost cap reached, or interrupted)."""
    busy: int = 0
    """Left to another process that was scoring them and had not stored them when this
    run ended (a session it stored meanwhile is `skipped`, saying so)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    estimated_input_tokens: int = 0
    estimated_output_tokens: int = 0
    estimated_cost_usd: float = 0.0
    estimate_basis: list[str] = Field(default_factory=list)
    """How the dry-run estimate was reached (input tokens; output tokens), see `estimate`."""
    estimate_note: str | None = None
    """Why a dry run's figures are not what the run would pay, or not counted by Claude
    (the heuristic judge; no key), see `forecasting.dry_run_note`."""
    escalated: list[str] = Field(default_factory=list)
    calibration: list[str] = Field(default_factory=list)
    not_queued: list[str] = Field(default_factory=list)
    """Picked for review but local-only (never traced to Langfuse): not queued."""
    verified: int = 0
    """Pushed sessions read back from Langfuse (`verify_sample`); missing ones are failed."""
    verify_error: str | None = None
    """Why the read-back itself failed (the pushes may still be fine)."""
    rate_limit_pauses: dict[str, int] = Field(default_factory=dict)
    rate_limits: dict[str, dict[str, float]] = Field(default_factory=dict)
    """The account's limits the run learned from the API, by model (RPM, ITPM, OTPM, the
    refill time and the median call latency), remembered for the next run's plan."""
    forecast: Forecast | None = None
    """A dry run's wall time and cost at the account's limits (`jobs.forecast`)."""
    failures: list[SessionResult] = Field(default_factory=list)
    """Failed, unscored and incomplete sessions with their reasons."""
    sessions: list[SessionResult] = Field(default_factory=list)
    """Every selected session's result, with its title and goal (the results table)."""
    notes: list[str] = Field(default_factory=list)
    """Files discovery skipped or guessed about (symlinks, FIFOs, id clashes, clocks)."""
    wall_seconds: float = 0.0

    def add(self, result: SessionResult) -> None:
        counter = {"estimated": "scored"}.get(result.outcome, result.outcome)
        setattr(self, counter, getattr(self, counter) + 1)
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost_usd = round(self.cost_usd + result.cost_usd, 6)
        if result.outcome in ("failed", "unscored", "incomplete"):
            self.failures.append(result)
        if (
            result.outcome == "estimated"
            and result.reason
            and result.reason not in self.estimate_basis
        ):
            self.estimate_basis.append(result.reason)


class Tracker(Protocol):
    """A progress display the run loop advances once per finished session."""

    def advance(self, result: SessionResult) -> None: ...

    def watch_pacing(self, status: Callable[[], PacingStatus | None]) -> None:
        """Show the account limit that paces the run (`status` is polled while drawing)."""


class NoProgress:
    """The silent `Tracker` (library use, tests, `--json`)."""

    def __enter__(self) -> NoProgress:
        return self

    def advance(self, result: SessionResult) -> None:
        """Ignore the result."""

    def watch_pacing(self, status: Callable[[], PacingStatus | None]) -> None:
        """Ignore the pacing."""

    def __exit__(self, *exc: object) -> None:
        return None


@dataclass
class Services:
    """The world a backfill talks to; tests swap any piece for a fake.

    Attributes:
        load: Fetch a discovered session.
        judge: The judge (LLM or heuristic) of every session.
        store: The score store: the local sink, the skip check and the push record.
        sinks: Remote sinks each scored card is published to (Langfuse, or none).
        langfuse: A `LangfuseClient` for discovery, skip checks and the annotation queue.
        limiters: Shared rate limiters by API name (reported in the summary).
        prep: Worker processes that load and prepare local sessions (None: in the
            worker threads); the run shuts it down when it ends.
        estimator: Prices a session for `--max-cost` and `--dry-run` (None: the
            heuristic judge, nothing to price).
        batch_judge: The same LLM judge seen as `BatchJudge` (`--batch-api` runs).
        chunking: How sessions are chunked (`SCORER_CHUNK_*`).
        batch_poll: Seconds between Message Batches polls (`SCORER_BATCH_POLL_SECONDS`).
        batch_adopt: How long after a batch intent a resumed run looks for the batch it
            may have created before submitting again (`SCORER_BATCH_ADOPT_SECONDS`).
    """

    load: Callable[[SessionRef], Session]
    judge: Judge
    store: ScoreStore
    sinks: list[ScoreSink] = field(default_factory=list)
    langfuse: LangfuseClient | None = None
    limiters: dict[str, RateLimiter] = field(default_factory=dict)
    prep: PrepPool | None = None
    estimator: Estimator | None = None
    batch_judge: BatchJudge | None = None
    chunking: PrepOptions = field(default_factory=PrepOptions)
    batch_poll: float = 30.0
    batch_adopt: float = 60.0


@dataclass(frozen=True)
class RunEvent:
    """A step of one session in a backfill run, reported to `run_backfill(events=...)`
    from the worker thread that made it, before the run goes on (tests order threads
    with them instead of sleeping; a front end can show them)."""

    kind: Literal["prepared", "finished"]
    """`prepared`: loaded, redacted and chunked, about to be judged (a stop set now
    keeps it from being judged); `finished`: its result for this run is final."""
    session_id: str
    result: SessionResult | None = None
    """The session's result (`finished` only)."""


RunListener = Callable[[RunEvent], None]


@dataclass
class Context:
    """Shared, read-mostly state of a run, handed to every worker."""

    opts: BackfillOptions
    services: Services
    ledger: Ledger
    budget: Budget
    model: str
    rubric_version: str
    stop: StopSignal = field(default_factory=StopSignal)
    interrupted: bool = False
    """Ctrl-C stopped the run (`run_backfill` raises `RunInterrupted` with the summary)."""
    events: RunListener | None = None
    """Told each `RunEvent` (`run_backfill(events=...)`)."""
    leases: SessionLeases | None = None
    """The sessions' leases in the store's file: one writer per session across processes
    (None: no other process to keep out, e.g. a dry run)."""
    plan: ChunkPlan | None = None
    """The chunk budget under the account's rate limit (None: the configured one)."""
    prep_gate: threading.BoundedSemaphore = field(
        default_factory=lambda: threading.BoundedSemaphore(PREP_THREADS)
    )
    """Held while a thread loads (local files) and prepares a session: pure Python under
    the GIL, so many at once only finish all late, and the first judge call waits."""
    step: JudgingStep = field(init=False)
    """The judging step (estimate → reserve → judge → settle → finish) with this run's
    budget."""

    def __post_init__(self) -> None:
        self.step = JudgingStep(self.budget, self.services.estimator)

    def emit(
        self, kind: Literal["prepared", "finished"], sid: str, result: SessionResult | None = None
    ) -> None:
        if self.events is not None:
            self.events(RunEvent(kind, sid, result))

    @property
    def judge_model(self) -> str | None:
        return self.model if self.opts.judge == "llm" else None


def ledger_gate(ctx: Context, row: dict[str, Any], sid: str) -> SessionResult | None:
    """The result for a session this run must not judge (done, out of attempts, unscored,
    stopped), or None to go on. Shared by the direct and the Message Batches paths."""
    state = row.get("state", "discovered")
    if state in DONE_STATES and not _card_gone(ctx, state, sid):
        return SessionResult(
            session_id=sid, outcome="skipped", reason=f"already {state} in this run"
        )
    if state == "failed" and row.get("attempts", 0) >= ctx.opts.max_attempts:
        return SessionResult(
            session_id=sid,
            outcome="failed",
            reason=capped_reason(row, ctx.opts.max_attempts),
            attempts=row["attempts"],
        )
    if state == "unscored":
        return unscored_before(row, sid)
    if ctx.stop.is_set() or ctx.budget.stopped:
        return SessionResult(session_id=sid, outcome="not_started", reason=_stop_reason(ctx))
    return None


def take_lease(ctx: Context, sid: str) -> SessionResult | None:
    """Take the session's lease; the `busy` result when another live process holds it."""
    holder = ctx.leases.take(sid) if ctx.leases is not None else None
    if holder is None:
        return None
    return SessionResult(session_id=sid, outcome="busy", reason=holder.text())


def release_lease(ctx: Context, sid: str) -> None:
    if ctx.leases is not None:
        ctx.leases.release(sid)


def _card_gone(ctx: Context, state: str, sid: str) -> bool:
    """A local session this run skipped as already scored whose production card the store
    no longer holds: judged after all. (A store written before runs were kept apart by
    collection skipped sessions that only had a calibration card.) Langfuse sessions are
    left alone: Langfuse's own scores may be what made them skip."""
    if state != "skipped" or ctx.opts.source != "claude-code":
        return False
    return not ctx.services.store.is_scored(
        sid, ctx.rubric_version, ctx.judge_model, ctx.opts.judge
    )


def capped_reason(row: dict[str, Any], max_attempts: int) -> str:
    """Why a failed session is not tried again: the attempts cap, then its last failure.

    Without the cap named first, a healthy rerun would only repeat an old outage's
    message (a 529 from the run that used the attempts up) as if it had just happened.
    """
    attempts = row.get("attempts", 0)
    return (
        f"not tried again: {attempts} of --max-attempts {max_attempts} used "
        f"(rerun with --max-attempts {attempts + 1} to try once more); "
        f"last failure: {row.get('reason') or 'unknown'}"
    )


def unscored_before(row: dict[str, Any], session_id: str) -> SessionResult:
    """An earlier run's unscored verdict, reported again without paying for a new one.

    The judge already spent a call and a repair on it; `--rescore` (another run key)
    judges it afresh.
    """
    return SessionResult(
        session_id=session_id,
        outcome="unscored",
        reason=row.get("reason"),
        attempts=row.get("attempts", 0),
    )


def _stop_reason(ctx: Context) -> str:
    return "cost cap reached" if ctx.budget.stopped else "run stopped"


def is_verdict(exc: BaseException) -> bool:
    """Whether a failure is about the content, hence final for the run key like an
    unscored reply: a session still too long for the judge after its re-chunks. Any
    other failure (an API outage after the retries, a Langfuse error) is infrastructure:
    `failed`, tried again by the next run up to `max_attempts`."""
    from scorer.judge.anthropic import ContextWindowExceeded

    return isinstance(exc, ContextWindowExceeded)


def failure_reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if isinstance(exc, ScorerError) else f"{exc.__class__.__name__}: {text}"


TRACEBACK_LIMIT = 4000
"""Characters of a failure's traceback kept in its ledger row (the innermost end)."""


def failure_trace(session_id: str, exc: BaseException) -> dict[str, str]:
    """Log a session's failure with its full traceback (`-v`) and return the ledger
    column holding it: the failing exception's frames (from the pipeline down to where it
    was raised; the middle is cut beyond `TRACEBACK_LIMIT` characters) and one line per
    exception it was raised from.

    A reason alone ("dictionary changed size during iteration") does not say where; the
    row does, after the run and without a re-run in debug mode.
    """
    log.debug("session %s failed", session_id, exc_info=exc)
    text = "".join(traceback.format_exception(exc, chain=False))
    seen = {id(exc)}
    cause = exc.__cause__ or exc.__context__
    while cause is not None and id(cause) not in seen:  # chains can loop (respx's do)
        seen.add(id(cause))
        text += f"raised from {type(cause).__name__}: {' '.join(str(cause).split())[:200]}\n"
        cause = cause.__cause__ or cause.__context__
    if len(text) > TRACEBACK_LIMIT:
        head = TRACEBACK_LIMIT // 3
        text = text[:head] + "\n…\n" + text[-(TRACEBACK_LIMIT - head - 3) :]
    return {"traceback": text}
