"""Backfill run loop: score every finished session in a time window, resumably, within a budget.

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
means the judge could not score the content (invalid reply after the repair, refusal on
the fallback model, too long) and is final for the run key: a rerun reports it again
without paying for another judge call. Infrastructure failures (an API outage that
outlasts the retries: `JudgeError`, a Langfuse error, a failed batch request) are
`failed`, and the next run of the same command tries again, up to `max_attempts`
(`--max-attempts`, default 3) attempts over all runs.

Concurrency and rate limits. At most `concurrency` judge requests are in flight, whatever
the sessions' chunk counts: the Anthropic client's transport takes one permit of a shared
`ratelimit.RateLimiter` per HTTP request; waiting requests are served chunk-notes calls
first (a final call waits on them), then in arrival order, and a stopped run sends no
more of them. A few look-ahead workers beyond `concurrency`
prepare the next sessions meanwhile (`pool_size`); from `--concurrency 4` on, local files
are loaded and prepared in worker processes (`prep_pool`), so that pure-Python work does
not hold the judge threads' GIL. Every request to one API goes through
that limiter's token bucket, which a 429/529 pauses for its `retry-after`, so all workers
back off together. A failing session is recorded `failed`
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

Module map: `jobs.run_state` (options, results, budget, ledger gating), `jobs.estimate`
(dry-run and cap estimates), `jobs.pipeline` (one session), this module (discovery, the
pool, escalation) and `jobs.batches` (the Message Batches path). The progress display is
`cli.progress`; the run loop only calls the `Tracker` it is given.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from scorer.errors import ConfigError, CredentialsError, RunInterrupted
from scorer.jobs.backfill_pool import ProgressFactory, run_pool
from scorer.jobs.discover_local import discover_local
from scorer.jobs.discovery import Discovery, SessionRef, discover_langfuse
from scorer.jobs.escalation import escalate_run
from scorer.jobs.forecasting import chunk_plan, dry_run_forecast, dry_run_note, remember_limits
from scorer.jobs.ledger import DONE_STATES, Ledger, run_key
from scorer.jobs.outcomes import describe, settle_busy
from scorer.jobs.prep_pool import PrepPool, pool_workers
from scorer.jobs.ratelimit import RateLimiter, StopSignal
from scorer.jobs.run_state import (
    BackfillOptions,
    BackfillSummary,
    Budget,
    Context,
    RunListener,
    Services,
    SessionResult,
)
from scorer.jobs.selection import select
from scorer.jobs.session_leases import SessionLeases
from scorer.jobs.setup import run_settings
from scorer.judge.base import LazyJudge, make_judge
from scorer.judge.config import JudgeConfig
from scorer.live.final_state_model import FinalStateOptions
from scorer.models import Session
from scorer.prepare.prepared import PrepOptions
from scorer.settings import Settings

if TYPE_CHECKING:
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.sdk import anthropic
    from scorer.langfuse_client import LangfuseClient

__all__ = [
    "BackfillOptions",
    "BackfillSummary",
    "ProgressFactory",
    "Services",
    "SessionResult",
    "default_services",
    "discover",
    "run_backfill",
]


HINT = "or use --judge heuristic"
"""Ends the missing-key message of a backfill."""


def default_services(opts: BackfillOptions, settings: Settings, *, rate: float = 0.0) -> Services:
    """The real services from the settings, each API behind its shared limiter."""
    from scorer.jobs.ratelimit import limited_httpx_client
    from scorer.sinks.store import ScoreStore

    # One global cap on judge requests in flight: chunk-notes map calls and final calls
    # of every session share the `--concurrency` slots (one permit per HTTP request).
    judge_limit = RateLimiter(
        rate=rate, max_in_flight=max(1, opts.concurrency), pace=settings.pacing
    )
    limiters = {"anthropic": judge_limit, "langfuse": RateLimiter(rate=rate)}
    lf = None
    if (
        opts.source == "langfuse"
        or opts.should_push
        or opts.escalate_below is not None
        or opts.calibration_sample
    ):
        from scorer.langfuse_client import make_client

        limited = limited_httpx_client(limiters["langfuse"], timeout=30)
        lf = make_client(settings, httpx_client=limited)

    def load(ref: SessionRef) -> Session:
        if ref.source == "langfuse":
            from scorer.sources.langfuse import LangfuseSource

            return LangfuseSource(ref.session_id, client=lf).load()
        from scorer.live.final_state import add_final_state
        from scorer.sources import open_file

        session = open_file(Path(ref.origin or "")).load()  # format sniffed: stream-json too
        return add_final_state(session, final_state)

    final_state = FinalStateOptions.from_settings(settings, enabled=opts.final_state)
    chunking = PrepOptions.from_settings(settings)
    services = Services(load, make_judge("heuristic"), ScoreStore(settings.store_path), [], lf)
    services.limiters, services.chunking = limiters, chunking
    services.batch_poll = settings.batch_poll_seconds
    services.batch_adopt = settings.batch_adopt_seconds
    services.prep = _prep_pool(opts, settings, chunking, final_state)  # only for a big transcript
    if opts.judge == "llm" or opts.dry_run:
        _llm_services(services, opts, settings, judge_limit)
    if opts.should_push:  # the Langfuse SDK costs 0.25 s to import: only when used
        from scorer.sinks.langfuse import LangfuseSink

        services.sinks.append(LangfuseSink(client=lf))
    return services


def _llm_services(
    services: Services, opts: BackfillOptions, settings: Settings, limiter: RateLimiter
) -> None:
    """The LLM judge (lazy on the direct path), its estimator and, with `--batch-api`, its
    batch seam, all from one `JudgeConfig`: `--effort` and `--fallback-model` reach every
    request, batched or not."""
    from scorer.jobs.estimate import Estimator
    from scorer.judge.token_counts import TokenCountCache

    config = JudgeConfig.from_settings(
        settings, model=opts.model, effort=opts.effort, fallback_model=opts.fallback_model,
        second_opinions=opts.second_opinions,
    )  # fmt: skip
    counts = TokenCountCache(settings.token_counts_path)

    def build() -> AnthropicJudge:
        from scorer.judge.anthropic import AnthropicJudge

        if opts.backend == "claude-code":
            from scorer.jobs.score import claude_code_judge

            return claude_code_judge(config, settings)  # type: ignore[return-value]
        client = None
        if settings.anthropic_configured or not opts.dry_run:
            client = _anthropic_client(settings, limiter)
        return AnthropicJudge(client, config, verify_tokens=False if opts.dry_run else None)

    if opts.dry_run or opts.batch_api:
        if not opts.dry_run:
            settings.require_anthropic(HINT)
        judge = build()
        services.estimator = Estimator(judge, batch=opts.batch_api, counts=counts)
        if opts.judge == "llm":
            services.judge = judge
        if opts.batch_api and not opts.dry_run:
            services.batch_judge = judge
        return
    if opts.backend == "claude-code":
        build()  # `claude` not found fails before discovery, like a missing key
    else:
        settings.require_anthropic(HINT)  # a missing key still fails before discovery
    lazy = LazyJudge(config, build)  # built (SDK import and all) only when a session is judged
    services.judge = lazy
    services.estimator = Estimator(lazy, counts=counts)


def _start_prep_pool(services: Services, refs: list[SessionRef]) -> None:
    """Spawn the prep workers when some selected local transcript is big enough."""
    pool = services.prep  # only local runs have one
    if pool is not None and any(r.origin and pool.wants(r.origin) for r in refs):
        pool.start()


def _prep_pool(
    opts: BackfillOptions, settings: Settings, chunking: PrepOptions, final: FinalStateOptions
) -> PrepPool | None:
    """Prep worker processes for an LLM run over local files at high concurrency."""
    if opts.judge != "llm" or opts.dry_run or opts.batch_api or opts.source == "langfuse":
        return None
    workers = pool_workers(opts.concurrency, settings.prep_processes)
    return PrepPool(workers, chunking, settings.cache_dir, final) if workers else None


def _anthropic_client(settings: Settings, limiter: RateLimiter) -> anthropic.Anthropic:
    from scorer.jobs.ratelimit import limited_httpx2_client
    from scorer.judge.client import make_client

    http = limited_httpx2_client(limiter, timeout=600)
    return make_client(settings, http_client=http, hint=HINT)


def discover(
    opts: BackfillOptions,
    services: Services,
    *,
    now: datetime | None = None,
    projects_root: Path | None = None,
) -> Discovery:
    """Find candidate sessions for the options' source and window.

    Args:
        projects_root: Where local sessions live when `opts` names none
            (`SCORER_CLAUDE_PROJECTS`).
    """
    now = now or datetime.now(UTC)
    idle = timedelta(minutes=opts.idle_minutes)
    if opts.source == "claude-code":
        if opts.tags or opts.environment or opts.user:
            raise ConfigError("--tag, --environment and --user only apply to --source langfuse")
        root = opts.projects_root or projects_root or Path.home() / ".claude" / "projects"
        return discover_local(
            root, start=opts.start, end=opts.end, project=opts.project, idle=idle, now=now
        )
    if opts.project:
        raise ConfigError("--project only applies to --source claude-code")
    if opts.start is None:
        raise ConfigError("--from is required with --source langfuse")
    return discover_langfuse(
        _require_langfuse(services),
        opts.start,
        opts.end or now,
        tags=opts.tags,
        environment=opts.environment,
        user=opts.user,
        idle=idle,
        now=now,
    )


def _require_langfuse(services: Services) -> LangfuseClient:
    """The run's Langfuse client, or a `CredentialsError` naming the keys to set."""
    if services.langfuse is None:
        raise CredentialsError(
            "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
        )
    return services.langfuse


def run_backfill(
    opts: BackfillOptions,
    services: Services | None = None,
    *,
    store_path: Path | None = None,
    progress: ProgressFactory | None = None,
    now: datetime | None = None,
    stop: StopSignal | None = None,
    events: RunListener | None = None,
) -> BackfillSummary:
    """Discover, select and score sessions; resumable, concurrent, within budget.

    The settings are read here, once (`SCORER_*`, the keys), and handed down.

    Args:
        opts: The run's options.
        services: The I/O edges; built from the settings when None.
        store_path: SQLite file of the store and ledger (default: the settings' store).
        progress: Builds the progress display (None: silent); see `cli.progress`.
        now: The current time (tests pin it for the idle threshold).
        stop: Set it (from any thread) to stop the run as Ctrl-C does: calls on the wire
            finish and are written, nothing new is sent, the rest stays for the next run.
        events: Told each session's `RunEvent` (prepared, finished) from its thread.

    Returns:
        The summary; failures are in it, never raised (except credential errors).

    Raises:
        RunInterrupted: Ctrl-C (or a `KeyboardInterrupt`) stopped the run once the calls
            on the wire were stored; its `summary` is this run's.
    """
    from scorer.sinks.writable import STORE_HINT, check_writable

    began = time.monotonic()
    settings = run_settings()
    # A store that cannot be written fails now, not after the sessions were judged.
    check_writable(store_path or settings.store_path, hint=STORE_HINT)
    own = services is None
    services = services or default_services(opts, settings)
    run = _RunSetup(
        model=opts.model or settings.model,
        store_path=store_path or settings.store_path,
        projects_root=settings.claude_projects,
        stop=stop or StopSignal(),
        events=events,
        keyed=settings.anthropic_configured,
    )
    try:
        summary = _run(opts, services, run, progress, now)
    except RunInterrupted as stopped:
        stopped.summary.wall_seconds = round(time.monotonic() - began, 3)
        raise
    finally:
        if services.prep is not None:
            services.prep.close()
        if own:  # ours to close: SQLite folds its WAL back into the store file
            services.store.close()
    summary.wall_seconds = round(time.monotonic() - began, 3)
    return summary


@dataclass(frozen=True)
class _RunSetup:
    """What `run_backfill` resolved from the settings for `_run`."""

    model: str
    store_path: Path
    projects_root: Path
    stop: StopSignal
    events: RunListener | None
    keyed: bool = True
    """ANTHROPIC_API_KEY is set (a dry run's estimate then counts with count_tokens)."""


def _run(
    opts: BackfillOptions,
    services: Services,
    run: _RunSetup,
    progress: ProgressFactory | None,
    now: datetime | None,
) -> BackfillSummary:
    from scorer.judge.rubric import default_rubric

    rubric_version = default_rubric().version
    _forget_config_checks()
    key_params = opts.key_params(rubric_version, run.model)
    key = run_key(key_params)
    found = discover(opts, services, now=now, projects_root=run.projects_root)
    summary = BackfillSummary(
        run_key=key,
        dry_run=opts.dry_run,
        discovered=len(found.sessions),
        active=len(found.active),
        notes=found.notes(),
    )
    ledger = Ledger(run.store_path, key, key_params)
    leases = SessionLeases(run.store_path, "score-backfill")
    try:  # every thread's ledger connection is closed when the run is done with it
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
        if not opts.dry_run:
            reclaimed = ledger.reclaim()  # a killed run's sessions: their attempt back
            if reclaimed:
                summary.notes.append(
                    f"{len(reclaimed)} session(s) a killed run was judging got their attempt back"
                )
        _start_prep_pool(services, refs)
        ctx = Context(
            opts, services, ledger, Budget(opts.max_cost), run.model, rubric_version, run.stop
        )
        ctx.events, ctx.leases = run.events, leases
        ctx.plan = chunk_plan(opts, services, run.model)
        if "anthropic" in services.limiters and not opts.batch_api:
            services.limiters["anthropic"].watch(ctx.stop)  # a stopped run sends no more calls
        if not opts.dry_run:
            ledger.add((r.session_id, r.origin) for r in refs)
            _build_judge_if_needed(services, ledger, refs)
        results = settle_busy(ctx, run_pool(ctx, refs, progress), summary.notes)
        for result in results:
            summary.add(result)
        summary.sessions = describe(results, services.store, opts.judge, ctx.judge_model)
        if ctx.interrupted:
            summary.interrupted = True
            raise RunInterrupted(summary)
        if opts.dry_run:
            summary.estimated_input_tokens = summary.input_tokens
            summary.estimated_output_tokens = summary.output_tokens
            summary.estimated_cost_usd = summary.cost_usd
            summary.input_tokens = summary.output_tokens = 0
            summary.cost_usd = 0.0
            summary.estimate_note = dry_run_note(opts.judge, run.keyed)
            if opts.judge == "llm":
                summary.forecast = dry_run_forecast(opts, run.model, results, summary)
        else:
            summary.rate_limits = remember_limits(services)
            if opts.should_push and services.sinks:
                from scorer.jobs.verification import verify_sample

                verify_sample(ctx, results, summary)
            if opts.escalate_below is not None or opts.calibration_sample:
                escalate_run(ctx, _require_langfuse(ctx.services), results, summary)
        summary.rate_limit_pauses = {name: lim.pauses for name, lim in services.limiters.items()}
        if ctx.plan is not None and ctx.plan.used:
            summary.notes.append(ctx.plan.used)
        return summary
    finally:
        leases.close()
        ledger.close()


def _build_judge_if_needed(services: Services, ledger: Ledger, refs: list[SessionRef]) -> None:
    """Build a lazy judge now, before the workers start, when a session may need it.

    The SDK import then runs alone, not against every worker's prep (that cost a K = 16
    run 0.2 s before its first call). A run whose sessions are all done never builds it.
    """
    if not isinstance(services.judge, LazyJudge):
        return
    states = ledger.states()
    if any(states.get(r.session_id) not in DONE_STATES for r in refs):
        services.judge.build()


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


def _forget_config_checks() -> None:
    """Re-check cached Langfuse score configs once per run. Nothing is cached when the
    configs module (and the Langfuse SDK, 0.25 s) was never imported: none is imported."""
    configs = sys.modules.get("scorer.sinks.langfuse.configs")
    if configs is not None:
        configs.forget_checks()
