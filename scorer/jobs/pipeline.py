"""The per-session backfill pipeline: gate → (resume | skip | fetch → prepare → judge) → publish.

Write order is store (one transaction) → Langfuse push (idempotent ids) → ledger `written`,
so a kill at any point leaves at most a step to redo and never a second set of scores.
A push Langfuse did not fully take (an outage, or a 207 that rejected some of the seven
scores) leaves the session `incomplete`: stored locally, ledger `stored` with the reason.
The next run (of any run key: `push_pending`) and `scorer scores push` send the stored
card again, without judging it again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypedDict

from scorer.errors import ConfigError, CredentialsError, RunStopped, ScorerError
from scorer.jobs.discovery import SessionRef
from scorer.jobs.run_state import (
    Context,
    SessionResult,
    TokenCounts,
    failure_reason,
    failure_trace,
    is_verdict,
    ledger_gate,
    release_lease,
    take_lease,
)
from scorer.models import JudgeUsage, Scorecard
from scorer.prepare import Prepared
from scorer.prepare.prepared import rebudget
from scorer.sinks.base import Published, publish
from scorer.sinks.store import RunFilter


def already_scored(ctx: Context, ref: SessionRef) -> bool:
    """Same rubric version, model and judge already in the store (or in Langfuse)."""
    if ctx.services.store.is_scored(
        ref.session_id, ctx.rubric_version, ctx.judge_model, ctx.opts.judge
    ):
        return True
    if ref.source == "langfuse" and ctx.services.langfuse is not None:
        from scorer.sinks.langfuse import langfuse_has_scores  # the Langfuse SDK: 0.25 s

        return langfuse_has_scores(
            ctx.services.langfuse,
            ref.session_id,
            rubric_version=ctx.rubric_version,
            model=ctx.judge_model,
            judge=ctx.opts.judge,
        )
    return False


def process(ctx: Context, ref: SessionRef) -> SessionResult:
    """Take one session as far as it can go; never raises for a session-level failure.

    Everything after the ledger's gate happens under the session's lease, the store's
    "already scored" check included: another process that holds it is judging the
    session (`busy`), and one that held it before us has stored its card by now.
    """
    sid = ref.session_id
    settled = ledger_gate(ctx, ctx.ledger.get(sid) or {}, sid) or take_lease(ctx, sid)
    if settled is not None:
        return settled
    try:  # the row as it is now that the session is ours (a copy of this run may be done)
        row = ctx.ledger.get(sid) or {}
        return ledger_gate(ctx, row, sid) or _process(ctx, ref, row)
    finally:
        release_lease(ctx, sid)


def _process(ctx: Context, ref: SessionRef, row: dict[str, Any]) -> SessionResult:
    sid = ref.session_id
    state = row.get("state", "discovered")
    attempts: int | None = None  # this try's count, once it is counted
    try:
        resumed = resume_write(ctx, ref, state)
        if resumed:
            return resumed
        if push_pending(ctx, sid):  # scored by an earlier run, Langfuse push unfinished
            return push_stored(ctx, sid, "finished an incomplete Langfuse push")
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
    except RunStopped as exc:  # a judge request was still waiting to go out at the stop
        return _not_started(ctx, sid, attempts, "run stopped", spent=_spent(exc))
    except Exception as exc:  # one session never stops the batch
        row = ctx.ledger.get(sid) or {}
        attempts = row.get("attempts", 0)
        reason = failure_reason(exc)
        spent = _spent(exc)
        trace = failure_trace(sid, exc)
        if is_verdict(exc):  # too long even after re-chunking: final, like unscored
            ctx.ledger.set_state(sid, "unscored", reason, **spent)
            return SessionResult(
                session_id=sid, outcome="unscored", reason=reason, attempts=attempts, **spent
            )
        # A stored card that failed to push stays `stored`: the next run pushes it.
        if row.get("state") == "stored":
            ctx.ledger.set_state(sid, "stored", reason, **trace)
            return SessionResult(session_id=sid, outcome="failed", reason=reason, attempts=attempts)
        ctx.ledger.set_state(sid, "failed", reason, **spent, **trace)
        return SessionResult(
            session_id=sid, outcome="failed", reason=reason, attempts=attempts, **spent
        )


class Spent(TypedDict, total=False):
    """What a session's judge calls cost before it failed or stopped (ledger columns)."""

    input_tokens: int
    output_tokens: int
    cost_usd: float


def spent_columns(usage: JudgeUsage | None, cost_usd: float) -> Spent:
    """Ledger columns (and `SessionResult` fields) of calls billed without a card."""
    if usage is None or not usage.requests:
        return {}
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cost_usd": cost_usd,
    }


def _spent(exc: BaseException) -> Spent:
    """The judge calls' usage carried by a `ScorerError` (nothing for other errors)."""
    if not isinstance(exc, ScorerError):
        return {}
    return spent_columns(exc.spent, exc.spent_usd)


def resume_write(ctx: Context, ref: SessionRef, state: str) -> SessionResult | None:
    """Finish a session this run already stored (killed before the push / ledger update)."""
    store = ctx.services.store
    if state not in ("fetched", "judged", "stored"):
        return None
    if state != "stored" and (
        ctx.opts.rescore
        or not store.is_scored(ref.session_id, ctx.rubric_version, ctx.judge_model, ctx.opts.judge)
    ):
        return None  # the store has nothing of ours: judge again
    return push_stored(ctx, ref.session_id, "resumed after interruption")


def push_pending(ctx: Context, session_id: str) -> bool:
    """Whether the store holds this identity's scored card whose Langfuse push failed or
    was partial (a 207 rejected some scores), and this run pushes: finish it, don't judge."""
    if not ctx.services.sinks or ctx.opts.rescore:
        return False
    runs = ctx.services.store.list_runs(
        limit=5, session_id=session_id, judge=ctx.opts.judge, where=RunFilter()
    )
    return any(
        r.model == ctx.judge_model
        and r.rubric_version == ctx.rubric_version
        and r.pushed_at is None
        and r.push_error is not None
        for r in runs
    )


def push_stored(ctx: Context, session_id: str, why: str) -> SessionResult:
    """Publish the stored card again (no judge call) and report what the sinks took."""
    card = ctx.services.store.latest(
        session_id, judge=ctx.opts.judge, model=ctx.judge_model, collection="production"
    )
    result = SessionResult(session_id=session_id, outcome="scored", reason=why)
    if card is None:
        ctx.ledger.set_state(session_id, "written", why)
        return result
    result.overall, result.recommendation = card.overall, card.recommendation
    done = publish(card, ctx.services.sinks, store=ctx.services.store)
    return _after_publish(ctx, done, result)


def _after_publish(ctx: Context, done: Published, result: SessionResult) -> SessionResult:
    """`written` when every sink took the card. When a remote one did not (outage, or a
    207 that rejected some scores) the session is `incomplete` and its ledger row stays
    `stored` with the reason, so the next run and `scorer scores push` finish it.
    Bad credentials stop the run."""
    if done.fatal is not None:
        raise done.fatal
    if not done.ok:
        problem = done.problem()
        ctx.ledger.set_state(result.session_id, "stored", problem)
        return result.model_copy(update={"outcome": "incomplete", "reason": problem})
    ctx.ledger.set_state(result.session_id, "written", result.reason)
    return result


def _not_started(
    ctx: Context, sid: str, attempts: int | None, reason: str, spent: Spent | None = None
) -> SessionResult:
    """Left `discovered` for the next run. The attempt counted for this try (`attempts`,
    None when none was) is given back: a session the run never judged has not used one
    of its `--max-attempts`. Calls it made before the stop (`spent`) are still billed."""
    if attempts is None:
        attempts = (ctx.ledger.get(sid) or {}).get("attempts", 0)
    else:
        attempts = max(attempts - 1, 0)
    spent = spent or {}
    ctx.ledger.set_state(sid, "discovered", reason, attempts=attempts, **spent)
    return SessionResult(
        session_id=sid, outcome="not_started", reason=reason, attempts=attempts, **spent
    )


def prepare_ref(ctx: Context, ref: SessionRef) -> Prepared:
    """Load and prepare one session: a big local file in a prep worker process when the
    run has them (`Services.prep`, local runs only), else in this thread. Chunks are
    planned under the account's input-token limit when it is known (`ctx.plan`)."""
    budget, why = ctx.plan.budget() if ctx.plan is not None else (None, None)
    chunking = ctx.services.chunking
    if budget is not None:
        chunking = replace(chunking, budget=budget)
    pool = ctx.services.prep
    if pool is not None and pool.ready and ref.origin and pool.wants(ref.origin):
        prepared = pool.prepare_file(ref.origin)
    elif ref.source == "langfuse":  # fetched without the gate: that part is network
        session = ctx.services.load(ref)
        with ctx.prep_gate:
            prepared = chunking.run(session)
    else:
        with ctx.prep_gate:
            prepared = chunking.run(ctx.services.load(ref))
    if budget is None or why is None or ctx.plan is None:
        return prepared
    if prepared.budget == budget:  # prepared under it here: say so on the card
        return replace(prepared, notes=(*prepared.notes, why))
    return rebudget(prepared, budget, why, safety=ctx.plan.safety)


def _score(ctx: Context, ref: SessionRef, attempts: int) -> SessionResult:
    sid = ref.session_id
    prepared = prepare_ref(ctx, ref)
    ctx.emit("prepared", sid)
    if ctx.stop.is_set():  # stopped (Ctrl-C) while this look-ahead session was prepared
        return _not_started(ctx, sid, attempts, "run stopped")
    ctx.ledger.set_state(sid, "fetched")
    card = ctx.step.run(prepared, ctx.services.judge).card
    if card is None:
        return _not_started(ctx, sid, attempts, "cost cap reached")
    if card.status != "scored":
        return record_unscored(ctx, card, attempts)
    return write_card(ctx, card, attempts)


def token_counts(card: Scorecard) -> TokenCounts:
    return {"input_tokens": card.usage.input_tokens, "output_tokens": card.usage.output_tokens}


def record_unscored(ctx: Context, card: Scorecard, attempts: int) -> SessionResult:
    """An unscored verdict: final for the run key, with what its calls cost."""
    usage = token_counts(card)
    reason = card.unscored_reason
    ctx.ledger.set_state(card.session_id, "unscored", reason, cost_usd=card.cost_usd, **usage)
    return SessionResult(
        session_id=card.session_id,
        outcome="unscored",
        reason=reason,
        attempts=attempts,
        cost_usd=card.cost_usd,
        **usage,
    )


def write_card(ctx: Context, card: Scorecard, attempts: int) -> SessionResult:
    """store (transactional) → Langfuse push (idempotent ids) → ledger `written`
    (or `incomplete`: see `_after_publish`)."""
    sid = card.session_id
    usage = token_counts(card)
    ctx.ledger.set_state(sid, "judged", cost_usd=card.cost_usd, **usage)
    sinks = [ctx.services.store, *ctx.services.sinks]
    done = publish(card, sinks, on_stored=lambda: ctx.ledger.set_state(sid, "stored"))
    result = SessionResult(
        session_id=sid,
        outcome="scored",
        attempts=attempts,
        cost_usd=card.cost_usd,
        overall=card.overall,
        recommendation=card.recommendation,
        **usage,
    )
    return _after_publish(ctx, done, result)


def estimate_one(ctx: Context, ref: SessionRef) -> SessionResult:
    """Dry run: fetch and prepare, estimate, spend nothing and write nothing."""
    try:
        prepared = prepare_ref(ctx, ref)
    except Exception as exc:
        return SessionResult(
            session_id=ref.session_id, outcome="failed", reason=failure_reason(exc)
        )
    if ctx.services.estimator is None:
        raise ConfigError("a dry run needs an estimator (Services.estimator)")
    est = ctx.services.estimator.estimate(prepared)
    return SessionResult(
        session_id=ref.session_id,
        outcome="estimated",
        reason=f"input: {est.input_basis}; output: {est.output_basis}",
        input_tokens=est.input_tokens,
        output_tokens=est.output_tokens,
        cost_usd=est.cost_usd,
        requests=est.requests,
        second_opinions=est.second_opinions,
    )
