"""After a backfill pushed scores: read a sample back, since Langfuse's 202 is not "stored".

A scorecard whose scores Langfuse accepted but does not hold (its worker dropped them
against an archived or changed config) is reported `failed` with the reason, its ledger
row goes back to `stored` and the store marks it unpushed, so the next run (after its
config re-check repairs the config) and `scorer scores push` send it again.
"""

from __future__ import annotations

import random

from scorer.errors import CredentialsError, ScorerError
from scorer.jobs.run_state import BackfillSummary, Context, SessionResult
from scorer.sinks.langfuse.verify import verify_cards


def verify_sample(ctx: Context, results: list[SessionResult], summary: BackfillSummary) -> None:
    """Read back up to `opts.verify_sample` sessions this run pushed; report the missing."""
    pushed = sorted(r.session_id for r in results if r.outcome == "scored")
    if not pushed or ctx.opts.verify_sample <= 0 or not ctx.services.sinks:
        return
    chosen = random.Random(ctx.opts.seed).sample(pushed, min(ctx.opts.verify_sample, len(pushed)))
    store = ctx.services.store
    found = (
        store.latest(sid, judge=ctx.opts.judge, model=ctx.judge_model, collection="production")
        for sid in chosen
    )
    cards = [card for card in found if card is not None]
    try:
        report = verify_cards(cards, client=ctx.services.langfuse)
    except CredentialsError:
        raise
    except ScorerError as exc:
        summary.verify_error = " ".join(str(exc).split())
        return
    summary.verified = report.checked
    for sid, reason in report.reasons.items():
        card = next(c for c in cards if c.session_id == sid)
        store.mark_pushed(sid, card.judge, card.model, card.rubric_version, error=reason, lost=True)
        ctx.ledger.set_state(sid, "stored", reason)
        summary.scored -= 1
        summary.failed += 1
        summary.failures.append(SessionResult(session_id=sid, outcome="failed", reason=reason))
