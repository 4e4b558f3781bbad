"""What a backfill did to each session, for people: titles and goals from the store, the
dry run's gate (price only what the run would judge), and the exit status for cron."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from scorer._text import plural
from scorer.jobs.pipeline import already_scored, estimate_one, push_pending
from scorer.jobs.run_state import BackfillSummary, Context, SessionResult, ledger_gate
from scorer.sinks.store import RunFilter

if TYPE_CHECKING:
    from scorer.jobs.discovery import SessionRef
    from scorer.sinks.store import RunSummary, ScoreStore

__all__ = ["describe", "estimate_if_judged"]

_CHUNK = 500
"""Session ids per store query (SQLite's variable limit)."""


def estimate_if_judged(ctx: Context, ref: SessionRef) -> SessionResult:
    """Dry run: estimate the session only when a real run of the same command would
    judge it; what it would skip (done in this run, already scored, a final verdict, out
    of attempts, a pending push) is reported as such and costs nothing."""
    sid = ref.session_id
    settled = ledger_gate(ctx, ctx.ledger.get(sid) or {}, sid)
    if settled is not None:
        return settled
    holder = ctx.leases.holder(sid) if ctx.leases is not None else None
    if holder is not None:  # the other process pays for it
        return SessionResult(session_id=sid, outcome="busy", reason=holder.text())
    if push_pending(ctx, sid):
        return SessionResult(session_id=sid, outcome="skipped", reason="stored; push pending")
    if not ctx.opts.rescore and already_scored(ctx, ref):
        return SessionResult(session_id=sid, outcome="skipped", reason="already scored")
    return estimate_one(ctx, ref)


def settle_busy(
    ctx: Context, results: list[SessionResult], notes: list[str]
) -> list[SessionResult]:
    """The results as they stand at the end of the run, for sessions another process was
    scoring (`busy`) when this run came to them: still held, they stay `busy` (a note
    per process says which are left to it); let go with a card of this judge in the
    store, they are that process's work (`skipped`, done for this run too); let go
    without one, the other process stopped or failed (`not_started`: the next run
    judges them)."""
    settled = [_settle(ctx, r) if r.outcome == "busy" else r for r in results]
    left = Counter(r.reason or "" for r in settled if r.outcome == "busy")
    notes.extend(
        f"{plural(n, 'session')} {why.replace('being', 'still being', 1)}: that run stores "
        "them; run this command again later to pick up any it leaves"
        for why, n in left.items()
    )
    return settled


def _settle(ctx: Context, result: SessionResult) -> SessionResult:
    sid = result.session_id
    holder = ctx.leases.holder(sid) if ctx.leases is not None else None
    if holder is not None:
        return result.model_copy(update={"reason": holder.text()})
    who = (result.reason or "").replace("being scored by ", "", 1)
    card = ctx.services.store.latest(
        sid, judge=ctx.opts.judge, model=ctx.judge_model, collection="production"
    )
    if card is None or card.rubric_version != ctx.rubric_version:
        why = f"left without a card by {who} (it stopped or failed); the next run judges it"
        return result.model_copy(update={"outcome": "not_started", "reason": why})
    why = f"{'scored' if card.status == 'scored' else 'judged unscored'} meanwhile by {who}"
    if not ctx.opts.dry_run:
        ctx.ledger.set_state(sid, "skipped", f"already {why}")
    return result.model_copy(update={"outcome": "skipped", "reason": why})


def describe(
    results: list[SessionResult], store: ScoreStore, judge: str, model: str | None
) -> list[SessionResult]:
    """The results with each session's title, goal and overall from its stored
    production card of this judge and model (skipped sessions included), in one query per
    500 sessions."""
    ids = [r.session_id for r in results]
    found: dict[str, RunSummary] = {}
    for start in range(0, len(ids), _CHUNK):
        where = RunFilter(session_ids=ids[start : start + _CHUNK], judge=judge)
        for run in store.list_runs(limit=2 * _CHUNK, where=where):
            if run.model == model and run.session_id not in found:  # newest first
                found[run.session_id] = run
    described = []
    for result in results:
        card = found.get(result.session_id)
        if card is not None:
            result = result.model_copy(
                update={
                    "title": card.title,
                    "goal": card.goal,
                    "overall": card.overall if result.overall is None else result.overall,
                    "recommendation": result.recommendation or card.recommendation,
                }
            )
        described.append(result)
    return described


def left_unfinished(summary: BackfillSummary) -> bool:
    """Whether the run left sessions failed or incomplete (exit `EXIT_PARTIAL` then)."""
    return bool(summary.failed or summary.incomplete)
