"""Backfill: score every finished session in a time window, resumably, within a budget.

    discover (local files or Langfuse root observations) → select (shard, sample, limit)
    → for each session, in a bounded thread pool:
        fetch → prepare (redact, render, chunk) → judge → store → Langfuse push → ledger
    → escalate low scores (and a calibration sample) to a Langfuse annotation queue

Resume and no duplicates. A run ledger (tables beside the score store, same SQLite file)
records each session's state under a run key hashed from the command's window, filters,
sampling, judge, model and rubric version; the same command resumes where it stopped.
Write order is store (one transaction, replace on re-score) → Langfuse push (deterministic
score ids: a repeat overwrites the same seven scores) → ledger `written`, so a kill at any
point, `kill -9` included, leaves at most a step to redo and never a second set of
scores. A session already scored with the same rubric version, model and judge (store,
or Langfuse's own scores for the session) is skipped unless `rescore`. An unscored verdict
(invalid reply after the repair) is final for the run key: a rerun reports it again
without paying for another judge call.

Concurrency and rate limits. `concurrency` worker threads; every request to one API goes
through one shared token bucket (`ratelimit.RateLimiter`) which a 429/529 pauses for its
`retry-after`, so all workers back off together. A failing session is recorded `failed`
(reason, attempts) and the batch goes on.

Cost. `dry_run` prepares every session and estimates tokens and USD without calling the
judge (`estimate_prepared`). `max_cost` stops starting sessions once the spent cost plus
the estimates of those in flight would exceed it; the rest stay `discovered` for the
next run.

Scale-out. One runner with `concurrency` 8-16 does a few thousand sessions an hour,
bounded by the API rate limit. Beyond that:
  * `batch_api=True` sends the judge calls through Anthropic Message Batches (50 % of the
    price, up to 100,000 requests or 256 MB per batch, results within 24 h); the ledger
    keeps the batch ids, and a restart resumes polling instead of resubmitting.
  * `shard="i/N"` splits the sessions by a stable hash of the session id, so N runners
    (CI matrix jobs, cron hosts) each take a disjoint share with the same command; every
    shard has its own run key and ledger rows, and all can share one store only if it is
    on a local disk per runner (SQLite), so give each runner its own `SCORER_HOME` and
    let Langfuse (idempotent score ids) be the shared sink.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field

from scorer.errors import ConfigError, CredentialsError, ScorerError, SinkError
from scorer.jobs.discovery import Discovery, SessionRef, discover_langfuse, discover_local, select
from scorer.jobs.ledger import DONE_STATES, Ledger, run_key
from scorer.jobs.ratelimit import RateLimiter
from scorer.models import Scorecard, Session

SourceName = Literal["claude-code", "langfuse"]
Outcome = Literal["scored", "skipped", "unscored", "failed", "not_started", "estimated"]

NOTES_OUTPUT_TOKENS = 700
"""Assumed output tokens of one chunk-notes call (the dry-run estimate)."""
FINAL_OUTPUT_TOKENS = 1800
"""Assumed output tokens of one scoring call: seven rationales with evidence + summary."""
NOTES_PROMPT_TOKENS = 350
"""Assumed size of one chunk's notes as fed to the final call of a chunked session."""


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
    model: str | None = None
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


class BackfillSummary(BaseModel):
    """The final report (printed as a table, or as JSON with `--json`)."""

    run_key: str
    dry_run: bool = False
    discovered: int = 0
    active: int = 0
    """Sessions left alone because they were active within the idle threshold."""
    selected: int = 0
    scored: int = 0
    skipped: int = 0
    unscored: int = 0
    failed: int = 0
    not_started: int = 0
    """Left for the next run (cost cap reached, or interrupted)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    estimated_input_tokens: int = 0
    estimated_output_tokens: int = 0
    estimated_cost_usd: float = 0.0
    escalated: list[str] = Field(default_factory=list)
    calibration: list[str] = Field(default_factory=list)
    rate_limit_pauses: dict[str, int] = Field(default_factory=dict)
    failures: list[SessionResult] = Field(default_factory=list)
    """Failed and unscored sessions with their reasons."""
    notes: list[str] = Field(default_factory=list)
    """Files discovery skipped or guessed about (symlinks, FIFOs, id clashes, clocks)."""
    wall_seconds: float = 0.0

    def add(self, result: SessionResult) -> None:
        counter = {"estimated": "scored"}.get(result.outcome, result.outcome)
        setattr(self, counter, getattr(self, counter) + 1)
        self.input_tokens += result.input_tokens
        self.output_tokens += result.output_tokens
        self.cost_usd = round(self.cost_usd + result.cost_usd, 6)
        if result.outcome in ("failed", "unscored"):
            self.failures.append(result)


# --- cost ----------------------------------------------------------------------------


@dataclass
class Estimate:
    """Estimated judge usage of one session."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0


def estimate_prepared(
    prepared: Any, *, model: str, batch: bool = False, judge: Any = None
) -> Estimate:
    """Tokens and USD the LLM judge would spend on a prepared session.

    Input tokens are counted the way the judge counts its requests: `TokenCounter` over
    the system prompt plus the rendered messages of each call. A chunked session's final
    call includes notes we cannot know yet, counted as `NOTES_PROMPT_TOKENS` per chunk.
    Output tokens are assumed (`NOTES_OUTPUT_TOKENS`, `FINAL_OUTPUT_TOKENS`). The USD
    figure prices every input token at the full input rate (cache reads would be cheaper),
    so it is an upper bound on input cost.
    """
    from scorer.judge import prompts as P
    from scorer.judge.anthropic import TAIL_CHARS, AnthropicJudge
    from scorer.judge.cost import cost_usd
    from scorer.models import JudgeUsage

    judge = judge or _estimator(model)
    assert isinstance(judge, AnthropicJudge)
    system = judge._system[0]["text"]
    chunks, header = prepared.chunks, prepared.header

    def count(messages: list[dict]) -> int:
        return judge.counter.count(system + "".join(m["content"] for m in messages))

    est = Estimate()
    if len(chunks) == 1:
        est.input_tokens = count(P.single_scoring_messages(judge.prompts, header, chunks[0]))
        est.output_tokens, est.requests = FINAL_OUTPUT_TOKENS, 1
    elif chunks:
        for chunk in chunks:
            est.input_tokens += count(
                P.chunk_notes_messages(judge.prompts, header, chunk, len(chunks))
            )
        final = P.final_scoring_messages(
            judge.prompts, header, [], chunks[-1], tail_chars=TAIL_CHARS
        )
        est.input_tokens += count(final) + NOTES_PROMPT_TOKENS * len(chunks)
        est.output_tokens = NOTES_OUTPUT_TOKENS * len(chunks) + FINAL_OUTPUT_TOKENS
        est.requests = len(chunks) + 1
    usage = JudgeUsage(input_tokens=est.input_tokens, output_tokens=est.output_tokens)
    est.cost_usd = cost_usd(usage, model, batch=batch)
    return est


_ESTIMATORS: dict[str, Any] = {}
_EST_LOCK = threading.Lock()


def _estimator(model: str) -> Any:
    """An AnthropicJudge used only for its prompts and counter (never calls the API)."""
    from scorer.judge.anthropic import AnthropicJudge

    with _EST_LOCK:
        if model not in _ESTIMATORS:
            _ESTIMATORS[model] = AnthropicJudge(None, model=model, verify_tokens=False)
        return _ESTIMATORS[model]


class Budget:
    """Spent cost plus in-flight estimates against an optional cap (thread-safe)."""

    def __init__(self, cap: float | None) -> None:
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
        with self._lock:
            self.in_flight = max(0.0, self.in_flight - estimate)
            self.spent += actual


# --- the I/O edges (injectable) ------------------------------------------------------


@dataclass
class Services:
    """The world a backfill talks to; tests swap any piece for a fake.

    Attributes:
        load: Fetch a discovered session.
        judge: Judge a prepared session (the LLM or heuristic judge).
        store: The score store (`save`, `is_scored`, optionally `mark_pushed`).
        push: Write a scorecard to Langfuse (None: no push).
        langfuse: A `LangfuseClient` for discovery, skip checks and the annotation queue.
        anthropic: The anthropic client (Message Batches mode).
        limiters: Shared rate limiters by API name (reported in the summary).
    """

    load: Callable[[SessionRef], Session]
    judge: Callable[[Any], Scorecard]
    store: Any
    push: Callable[[Scorecard], Any] | None = None
    langfuse: Any = None
    anthropic: Any = None
    limiters: dict[str, RateLimiter] = field(default_factory=dict)


def default_services(opts: BackfillOptions, *, model: str, rate: float = 0.0) -> Services:
    """The real services from the environment, each API behind its shared limiter."""
    from scorer.jobs.ratelimit import limited_httpx_client
    from scorer.jobs.score import judge_prepared
    from scorer.sinks.store import ScoreStore

    limiters = {"anthropic": RateLimiter(rate=rate), "langfuse": RateLimiter(rate=rate)}
    lf = None
    if (
        opts.source == "langfuse"
        or opts.should_push
        or opts.escalate_below is not None
        or opts.calibration_sample
    ):
        from scorer.langfuse_client import make_client

        lf = make_client(httpx_client=limited_httpx_client(limiters["langfuse"], timeout=30))
    client = None
    if opts.judge == "llm" and not opts.dry_run:
        client = _anthropic_client(limiters["anthropic"])

    def load(ref: SessionRef) -> Session:
        if ref.source == "langfuse":
            from scorer.sources.langfuse import LangfuseSource

            return LangfuseSource(ref.session_id, api=lf).load()
        from scorer.sources.claude_code import ClaudeCodeSource

        return ClaudeCodeSource(Path(ref.origin or "")).load()

    def judge(prepared: Any) -> Scorecard:
        return judge_prepared(prepared, opts.judge, model=model, client=client)

    push = None
    if opts.should_push:
        from scorer.sinks.langfuse import push_scorecard

        def push(card: Scorecard) -> Any:
            result = push_scorecard(card, api=lf)
            if not result.ok:  # a permanent 207 rejection: fail the session, keep it `stored`
                problems = {**result.rejected, **dict.fromkeys(result.unattributed_errors, "")}
                detail = "; ".join(f"{k}: {v}" if v else k for k, v in problems.items())
                raise SinkError(f"Langfuse rejected scores of session {card.session_id}: {detail}")
            return result

    return Services(load, judge, ScoreStore(), push, lf, client, limiters)


def _anthropic_client(limiter: RateLimiter) -> Any:
    import anthropic

    from scorer.jobs.ratelimit import limited_httpx2_client
    from scorer.settings import get_settings

    settings = get_settings()
    if not settings.anthropic_api_key:
        raise CredentialsError("ANTHROPIC_API_KEY is not set: export it or use --judge heuristic")
    return anthropic.Anthropic(
        api_key=settings.anthropic_api_key,
        base_url=settings.anthropic_base_url,
        max_retries=0,
        http_client=limited_httpx2_client(limiter, timeout=600),
    )


# --- discovery -----------------------------------------------------------------------


def discover(
    opts: BackfillOptions, services: Services, *, now: datetime | None = None
) -> Discovery:
    """Find candidate sessions for the options' source and window."""
    from scorer.settings import get_settings

    now = now or datetime.now(UTC)
    idle = timedelta(minutes=opts.idle_minutes)
    if opts.source == "claude-code":
        if opts.tags or opts.environment or opts.user:
            raise ConfigError("--tag, --environment and --user only apply to --source langfuse")
        root = opts.projects_root or get_settings().claude_projects
        return discover_local(
            root, start=opts.start, end=opts.end, project=opts.project, idle=idle, now=now
        )
    if opts.project:
        raise ConfigError("--project only applies to --source claude-code")
    if opts.start is None:
        raise ConfigError("--from is required with --source langfuse")
    return discover_langfuse(
        _lf_api(services),
        opts.start,
        opts.end or now,
        tags=opts.tags,
        environment=opts.environment,
        user=opts.user,
        idle=idle,
        now=now,
    )


def _lf_api(services: Services) -> Any:
    if services.langfuse is None:
        raise CredentialsError(
            "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
        )
    return getattr(services.langfuse, "api", services.langfuse)


def langfuse_has_scores(
    services: Services,
    session_id: str,
    *,
    rubric_version: str,
    model: str | None,
    judge: str | None = None,
) -> bool:
    """Whether Langfuse already holds all of this session's scores for this rubric+judge.

    Reads the v3 scores of the session (every page), keeping those whose metadata names
    the same rubric version, judge and (for the LLM judge) model. All rubric scores must
    be there: a 207 that rejected some of them leaves the session to be pushed again.
    """
    from scorer.errors import SourceError
    from scorer.judge.rubric import default_rubric
    from scorer.langfuse_client import get_client

    client = get_client(services.langfuse)
    wanted = {cfg.name for cfg in default_rubric().scores}
    found: set[str] = set()
    cursor: str | None = None
    while True:
        page = client.call(
            client.api.scores.get_many,
            error=SourceError,
            what=f"reading the scores of session {session_id}",
            session_id=session_id,
            name=",".join(sorted(wanted)),
            fields="details",
            limit=100,
            cursor=cursor,
        )
        for score in page.data:
            meta = getattr(score, "metadata", None) or {}
            if not isinstance(meta, dict) or str(meta.get("rubric_version")) != rubric_version:
                continue
            if judge is not None and meta.get("judge") != judge:
                continue
            if model is None or meta.get("model") == model:
                found.add(score.name)
        cursor = page.meta.cursor
        if wanted <= found or not cursor or not page.data:
            return wanted <= found


# --- one session ---------------------------------------------------------------------


@dataclass
class Context:
    """Shared, read-mostly state of a run, handed to every worker."""

    opts: BackfillOptions
    services: Services
    ledger: Ledger
    budget: Budget
    model: str
    rubric_version: str
    on_done: Callable[[SessionResult], None] = lambda r: None
    stop: threading.Event = field(default_factory=threading.Event)

    @property
    def judge_model(self) -> str | None:
        return self.model if self.opts.judge == "llm" else None


def already_scored(ctx: Context, ref: SessionRef) -> bool:
    """Same rubric version, model and judge already in the store (or in Langfuse)."""
    if ctx.services.store.is_scored(
        ref.session_id, ctx.rubric_version, ctx.judge_model, ctx.opts.judge
    ):
        return True
    if ref.source == "langfuse" and ctx.services.langfuse is not None:
        return langfuse_has_scores(
            ctx.services,
            ref.session_id,
            rubric_version=ctx.rubric_version,
            model=ctx.judge_model,
            judge=ctx.opts.judge,
        )
    return False


def ledger_gate(ctx: Context, row: dict[str, Any], sid: str) -> SessionResult | None:
    """The result for a session this run must not judge (done, out of attempts, unscored,
    stopped), or None to go on. Shared by the direct and the Message Batches paths."""
    state = row.get("state", "discovered")
    if state in DONE_STATES:
        return SessionResult(
            session_id=sid, outcome="skipped", reason=f"already {state} in this run"
        )
    if state == "failed" and row.get("attempts", 0) >= ctx.opts.max_attempts:
        return SessionResult(
            session_id=sid, outcome="failed", reason=row.get("reason"), attempts=row["attempts"]
        )
    if state == "unscored":
        return unscored_before(row, sid)
    if ctx.stop.is_set() or ctx.budget.stopped:
        return SessionResult(session_id=sid, outcome="not_started", reason=_stop_reason(ctx))
    return None


def process(ctx: Context, ref: SessionRef) -> SessionResult:
    """Take one session as far as it can go; never raises for a session-level failure."""
    sid = ref.session_id
    row = ctx.ledger.get(sid) or {}
    state = row.get("state", "discovered")
    settled = ledger_gate(ctx, row, sid)
    if settled is not None:
        return settled
    try:
        resumed = _resume_write(ctx, ref, state)
        if resumed:
            return resumed
        if not ctx.opts.rescore and already_scored(ctx, ref):
            ctx.ledger.set_state(
                sid, "skipped", "already scored (same rubric version, model, judge)"
            )
            return SessionResult(session_id=sid, outcome="skipped", reason="already scored")
        attempts = ctx.ledger.bump_attempts(sid)
        return _score(ctx, ref, attempts)
    except CredentialsError:
        ctx.stop.set()  # every other session would fail the same way
        raise
    except Exception as exc:  # one session never stops the batch
        attempts = (ctx.ledger.get(sid) or {}).get("attempts", 0)
        reason = _reason(exc)
        current = (ctx.ledger.get(sid) or {}).get("state")
        # A stored card that failed to push stays `stored`: the next run pushes it.
        ctx.ledger.set_state(sid, "stored" if current == "stored" else "failed", reason)
        return SessionResult(session_id=sid, outcome="failed", reason=reason, attempts=attempts)


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


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    return text if isinstance(exc, ScorerError) else f"{exc.__class__.__name__}: {text}"


def _resume_write(ctx: Context, ref: SessionRef, state: str) -> SessionResult | None:
    """Finish a session this run already stored (killed before the push / ledger update)."""
    store = ctx.services.store
    if state not in ("fetched", "judged", "stored"):
        return None
    if state != "stored" and (
        ctx.opts.rescore
        or not store.is_scored(ref.session_id, ctx.rubric_version, ctx.judge_model, ctx.opts.judge)
    ):
        return None  # the store has nothing of ours: judge again
    card = _stored_card(ctx, ref.session_id)
    if ctx.services.push is not None and card is not None:
        ctx.services.push(card)
        _mark_pushed(store, card)
    ctx.ledger.set_state(ref.session_id, "written", "resumed after interruption")
    return SessionResult(
        session_id=ref.session_id,
        outcome="scored",
        reason="resumed after interruption",
        overall=card.overall if card else None,
        recommendation=card.recommendation if card else None,
    )


def _stored_card(ctx: Context, session_id: str) -> Scorecard | None:
    return ctx.services.store.latest(session_id, judge=ctx.opts.judge, model=ctx.judge_model)


def _mark_pushed(store: Any, card: Scorecard) -> None:
    store.mark_pushed(card.session_id, card.judge, card.model, card.rubric_version)


def _score(ctx: Context, ref: SessionRef, attempts: int) -> SessionResult:
    from scorer.jobs.score import prepare

    sid = ref.session_id
    prepared = prepare(ctx.services.load(ref))
    ctx.ledger.set_state(sid, "fetched")
    # Counting tokens holds the GIL; only pay for it when a cap needs the estimate.
    needs_estimate = ctx.opts.judge == "llm" and ctx.opts.max_cost is not None
    estimate = estimate_prepared(prepared, model=ctx.model).cost_usd if needs_estimate else 0.0
    if not ctx.budget.reserve(estimate):
        ctx.ledger.set_state(sid, "discovered", "cost cap reached")
        return SessionResult(
            session_id=sid, outcome="not_started", reason="cost cap reached", attempts=attempts
        )
    try:
        card = ctx.services.judge(prepared)
    finally:
        ctx.budget.settle(estimate, 0.0)
    ctx.budget.settle(0.0, card.cost_usd)
    usage: TokenCounts = {
        "input_tokens": card.usage.input_tokens,
        "output_tokens": card.usage.output_tokens,
    }
    if card.status != "scored":
        ctx.ledger.set_state(sid, "unscored", card.unscored_reason, cost_usd=card.cost_usd, **usage)
        return SessionResult(
            session_id=sid,
            outcome="unscored",
            reason=card.unscored_reason,
            attempts=attempts,
            cost_usd=card.cost_usd,
            **usage,
        )
    return write_card(ctx, card, attempts)


def write_card(ctx: Context, card: Scorecard, attempts: int) -> SessionResult:
    """store (transactional) → Langfuse push (idempotent ids) → ledger `written`."""
    sid = card.session_id
    usage: TokenCounts = {
        "input_tokens": card.usage.input_tokens,
        "output_tokens": card.usage.output_tokens,
    }
    ctx.ledger.set_state(sid, "judged", cost_usd=card.cost_usd, **usage)
    ctx.services.store.save(card)
    ctx.ledger.set_state(sid, "stored")
    if ctx.services.push is not None:
        ctx.services.push(card)
        _mark_pushed(ctx.services.store, card)
    ctx.ledger.set_state(sid, "written")
    return SessionResult(
        session_id=sid,
        outcome="scored",
        attempts=attempts,
        cost_usd=card.cost_usd,
        overall=card.overall,
        recommendation=card.recommendation,
        **usage,
    )


def estimate_one(ctx: Context, ref: SessionRef) -> SessionResult:
    """Dry run: fetch and prepare, estimate, spend nothing and write nothing."""
    from scorer.jobs.score import prepare

    try:
        prepared = prepare(ctx.services.load(ref))
    except Exception as exc:
        return SessionResult(session_id=ref.session_id, outcome="failed", reason=_reason(exc))
    est = estimate_prepared(prepared, model=ctx.model, batch=ctx.opts.batch_api)
    return SessionResult(
        session_id=ref.session_id,
        outcome="estimated",
        input_tokens=est.input_tokens,
        output_tokens=est.output_tokens,
        cost_usd=est.cost_usd,
    )


# --- the run -------------------------------------------------------------------------


def run_backfill(
    opts: BackfillOptions,
    services: Services | None = None,
    *,
    store_path: Path | None = None,
    progress: bool = True,
    now: datetime | None = None,
) -> BackfillSummary:
    """Discover, select and score sessions; resumable, concurrent, within budget.

    Args:
        opts: The run's options.
        services: The I/O edges; built from the environment when None.
        store_path: SQLite file of the store and ledger (default: the settings' store).
        progress: Show a progress bar on stderr.
        now: The current time (tests pin it for the idle threshold).

    Returns:
        The summary; failures are in it, never raised (except credential errors).
    """
    from scorer.judge.rubric import default_rubric
    from scorer.settings import get_settings

    began = time.monotonic()
    model = opts.model or get_settings().model
    rubric_version = default_rubric().version
    services = services or default_services(opts, model=model)
    key_params = opts.key_params(rubric_version, model)
    key = run_key(key_params)
    found = discover(opts, services, now=now)
    summary = BackfillSummary(
        run_key=key,
        dry_run=opts.dry_run,
        discovered=len(found.sessions),
        active=len(found.active),
        notes=found.notes(),
    )
    ledger = Ledger(store_path or get_settings().store_path, key, key_params)
    refs = _with_unfinished(
        select(
            found.sessions,
            shard=opts.shard,
            sample=opts.sample,
            fraction=opts.fraction,
            seed=opts.seed,
            limit=opts.limit,
        ),
        found.sessions,
        ledger,
        opts.dry_run,
    )
    summary.selected = len(refs)
    ctx = Context(opts, services, ledger, Budget(opts.max_cost), model, rubric_version)
    if not opts.dry_run:
        ledger.add((r.session_id, r.origin) for r in refs)
    try:
        results = _run_pool(ctx, refs, progress)
    finally:
        ledger.close()
    for result in results:
        summary.add(result)
    if opts.dry_run:
        summary.estimated_input_tokens = summary.input_tokens
        summary.estimated_output_tokens = summary.output_tokens
        summary.estimated_cost_usd = summary.cost_usd
        summary.input_tokens = summary.output_tokens = 0
        summary.cost_usd = 0.0
    elif opts.escalate_below is not None or opts.calibration_sample:
        _escalate(ctx, results, summary)
    summary.rate_limit_pauses = {name: lim.pauses for name, lim in services.limiters.items()}
    summary.wall_seconds = round(time.monotonic() - began, 3)
    return summary


def _with_unfinished(
    chosen: list[SessionRef], discovered: list[SessionRef], ledger: Ledger, dry_run: bool
) -> list[SessionRef]:
    """Add sessions this run started earlier but did not finish, so none is lost."""
    if dry_run:
        return chosen
    states = ledger.states()
    have = {r.session_id for r in chosen}
    extra = [
        r
        for r in discovered
        if r.session_id not in have
        and states.get(r.session_id) not in (None, "unscored", *DONE_STATES)
    ]
    return chosen + extra


def _run_pool(ctx: Context, refs: list[SessionRef], show: bool) -> list[SessionResult]:
    worker = estimate_one if ctx.opts.dry_run else process
    if ctx.opts.batch_api and not ctx.opts.dry_run:
        from scorer.jobs.batches import run_batches

        with _progress(show, len(refs), False) as bar:
            return run_batches(ctx, refs, on_result=bar.advance)
    results: list[SessionResult] = []
    with (
        _progress(show, len(refs), ctx.opts.dry_run) as bar,
        ThreadPoolExecutor(
            max_workers=max(1, ctx.opts.concurrency), thread_name_prefix="backfill"
        ) as pool,
    ):
        futures = [pool.submit(worker, ctx, ref) for ref in refs]
        try:
            for fut in futures:
                result = fut.result()
                results.append(result)
                bar.advance(result)
        except KeyboardInterrupt:
            ctx.stop.set()  # workers finish their current session; the rest wait for a resume
            raise
    return results


class _Bar:
    """A rich progress bar on stderr with ETA and running cost (a no-op when hidden)."""

    def __init__(self, show: bool, total: int, dry_run: bool) -> None:
        self.show, self.total, self.dry_run = show, total, dry_run
        self.cost = 0.0
        self._progress: Any = None

    def __enter__(self) -> _Bar:
        if self.show:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeRemainingColumn(),
                TextColumn("{task.fields[cost]}"),
                console=Console(stderr=True),
                transient=False,
            )
            self._progress.start()
            label = "estimating" if self.dry_run else "scoring"
            self._task = self._progress.add_task(label, total=self.total, cost="$0.0000")
        return self

    def advance(self, result: SessionResult) -> None:
        self.cost += result.cost_usd
        if self._progress is not None:
            prefix = "est. " if self.dry_run else ""
            self._progress.update(self._task, advance=1, cost=f"{prefix}${self.cost:.4f}")

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


def _progress(show: bool, total: int, dry_run: bool) -> _Bar:
    return _Bar(show, total, dry_run)


def _escalate(ctx: Context, results: list[SessionResult], summary: BackfillSummary) -> None:
    from scorer.jobs.escalation import enqueue, pick_escalations

    low, calib = pick_escalations(
        results,
        below=ctx.opts.escalate_below,
        calibration=ctx.opts.calibration_sample,
        seed=ctx.opts.seed,
        already=ctx.ledger.queued(),
    )
    if not (low or calib):
        return
    queued = enqueue(_lf_api(ctx.services), ctx.opts.queue, [*low, *calib])
    ctx.ledger.mark_queued(queued)
    summary.escalated, summary.calibration = low, calib
