"""Backfill through Anthropic Message Batches (`score-backfill --batch-api`, -50 % price).

The judge's requests are the very ones `AnthropicJudge` sends directly (same params, same
reply parsing); only the transport differs:

    phase 1  one batch: a single-chunk session's scoring request, or one notes request
             per chunk of a multi-chunk session
    phase 2  a second batch with the final scoring request of every multi-chunk session
             whose notes all came back (built from the notes, like the direct judge)
    then     store → ledger `stored` → Langfuse push → ledger `written` (`write_card`)

Resume. Right after `create` returns and before any waiting, ONE ledger transaction
records the batch id with its custom_ids and moves every session in it to `fetched` with
its `batch_id` (`Ledger.add_batch`). A rerun of the same command finds those sessions,
re-prepares them (local and deterministic) and polls the stored batches instead of
submitting again; results stay downloadable for 29 days. A kill before that commit
leaves the intent committed before `create`: the next start adopts the batch the server
may have made instead of paying for it twice (`jobs.batch_intents`).

Failure policy, per session:
    invalid structured output → one repair call sent directly (not batched, full price,
        since a repair is rare and a second batch round trip could take hours), then
        an unscored card with the reason and the raw reply
    errored / expired / canceled result → the session is `failed` with the reason; the
        next run submits it again (until `max_attempts`)
A resumed multi-chunk session re-validates its notes from the stored results, so a
notes reply that needed a repair is repaired again (rare; costs one direct call).

Polling waits `SCORER_BATCH_POLL_SECONDS` (default 30, `Services.batch_poll`) between rounds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from scorer.errors import CredentialsError, JudgeError
from scorer.jobs.batch_intents import Adopter, ambiguous, fingerprint
from scorer.jobs.batch_pending import Pending
from scorer.jobs.batch_requests import (
    group_requests,
    missing_result,
    result_reason,
    session_hash,
)
from scorer.jobs.discovery import SessionRef
from scorer.jobs.pipeline import (
    Spent,
    already_scored,
    push_pending,
    push_stored,
    record_unscored,
    resume_write,
    spent_columns,
    write_card,
)
from scorer.jobs.run_state import (
    Context,
    SessionResult,
    failure_reason,
    failure_trace,
    is_verdict,
    ledger_gate,
    release_lease,
    take_lease,
)
from scorer.judge.base import BatchJudge
from scorer.judge.client import ContextWindowExceeded
from scorer.judge.reply import Unscored
from scorer.judge.retry import call_with_retries, describe
from scorer.judge.schema import ChunkNotes
from scorer.judge.sdk import anthropic
from scorer.models import Scorecard
from scorer.prepare.prepared import RECHUNK_ATTEMPTS, rechunk


class BatchRun:
    """One `--batch-api` run: submit, persist, poll, collect, write.

    Args:
        ctx: The backfill context (options, services, ledger, budget).
        on_result: Called with each session's final result (the progress bar).
        sleep: Waits between polls (tests pass a no-op or a crash).
        poll: Seconds between polls; defaults to the run's `Services.batch_poll`.
    """

    def __init__(
        self,
        ctx: Context,
        *,
        on_result: Callable[[SessionResult], None] = lambda r: None,
        sleep: Callable[[float], None] | None = None,
        poll: float | None = None,
    ) -> None:
        judge = ctx.services.batch_judge
        if judge is None:
            raise CredentialsError("ANTHROPIC_API_KEY is not set: --batch-api needs the LLM judge")
        self.ctx, self.on_result = ctx, on_result
        self.sleep = sleep or _sleep
        self.poll = ctx.services.batch_poll if poll is None else poll
        # The run's own judge: its config (model, effort, fallback model) builds every
        # batched request and settles every reply, exactly as on the direct path.
        self.judge: BatchJudge = judge
        self.client = judge.client
        self.results: dict[str, SessionResult] = {}
        self.pending: dict[str, Pending] = {}
        self.submitted: dict[str, str] = {}
        """custom_id → the latest batch holding it."""
        self.got: dict[tuple[str, str], Any] = {}
        """(batch_id, custom_id) → the batch's individual response."""
        self.fetched: set[str] = set()
        """Batches whose results are in `got`."""
        self.adopter = Adopter(
            self.client, ctx.ledger, wait=ctx.services.batch_adopt, poll=self.poll, sleep=self.sleep
        )
        self.unverified: dict[str, list[str]] = {}
        """Batches adopted on their request count: batch id → the intent's custom ids."""
        for batch in ctx.ledger.batches():
            if batch["status"] != "rejected":
                self.submitted.update(dict.fromkeys(batch["custom_ids"], batch["batch_id"]))

    # --- the run -----------------------------------------------------------------

    def run(self, refs: list[SessionRef], *, wait: bool = True) -> list[SessionResult]:
        """Every ref's result, in order; failures are results, never raised.

        Args:
            refs: The sessions.
            wait: Poll until every session is done. False: one round (submit what is
                needed, collect what has ended, submit the next phase) and return the
                finished sessions only; the rest stay in flight in the ledger, and a later
                run of the same key picks them up (the hook's batch mode).
        """
        with self._pool() as pool:
            for ref, started in zip(refs, pool.map(self._start, refs), strict=True):
                if isinstance(started, Pending):
                    self.pending[ref.session_id] = started
                else:
                    self._done(ref.session_id, started)
        # Results of an earlier, failed attempt must not be reused: submit those afresh.
        fresh = {session_hash(p.sid) for p in self.pending.values() if not p.in_flight}
        self.submitted = {
            cid: bid for cid, bid in self.submitted.items() if cid.split("-")[1] not in fresh
        }
        # A batch an earlier run may have created without recording it: module batch_intents.
        self.submitted.update(self.adopter.resolve(self.ctx.ledger.intents("open"), self.pending))
        self._load_unverified()
        while self.pending:
            self._submit_needed()
            if not self._collect():
                if not wait:
                    break
                self.sleep(self.poll)
        return [self.results[r.session_id] for r in refs if r.session_id in self.results]

    def _pool(self) -> ThreadPoolExecutor:
        workers = max(1, self.ctx.opts.concurrency)
        return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="batch")

    def _done(self, sid: str, result: SessionResult) -> None:
        self.results[sid] = result
        self.pending.pop(sid, None)
        release_lease(self.ctx, sid)
        self.on_result(result)

    # --- phase 0: which sessions, prepared ------------------------------------------

    def _start(self, ref: SessionRef) -> SessionResult | Pending:
        """Mirror of `backfill.process` up to the judge call; resumes in-flight sessions."""
        ctx, sid = self.ctx, ref.session_id
        settled = ledger_gate(ctx, ctx.ledger.get(sid) or {}, sid) or take_lease(ctx, sid)
        if settled is not None:
            return settled
        row = ctx.ledger.get(sid) or {}  # as it is now that the session is ours (`_done`
        state = row.get("state", "discovered")  # gives the lease back)
        settled = ledger_gate(ctx, row, sid)
        if settled is not None:
            return settled
        in_flight = state == "fetched" and bool(row.get("batch_id"))
        try:
            resumed = None if in_flight else resume_write(ctx, ref, state)
            if resumed:
                return resumed
            if not in_flight and push_pending(ctx, sid):
                return push_stored(ctx, sid, "finished an incomplete Langfuse push")
            if not in_flight and not ctx.opts.rescore and already_scored(ctx, ref):
                ctx.ledger.set_state(sid, "skipped", "already scored (same rubric, model, judge)")
                return SessionResult(session_id=sid, outcome="skipped", reason="already scored")
            attempts = row.get("attempts", 0) if in_flight else ctx.ledger.bump_attempts(sid)
            return self._prepare(ref, attempts, in_flight)
        except CredentialsError:
            ctx.stop.set()
            raise
        except Exception as exc:  # one session never stops the run
            if is_verdict(exc):  # too long even after re-chunking: final, like unscored
                ctx.ledger.set_state(sid, "unscored", failure_reason(exc))
                return SessionResult(session_id=sid, outcome="unscored", reason=failure_reason(exc))
            return self._fail(sid, exc, row.get("attempts", 0))

    def _prepare(self, ref: SessionRef, attempts: int, in_flight: bool) -> SessionResult | Pending:
        ctx, sid = self.ctx, ref.session_id
        prepared = ctx.services.chunking.run(ctx.services.load(ref))
        pending = Pending(ref, prepared, attempts, in_flight=in_flight)
        pending.prompt_tokens = self._fit(pending)
        if not in_flight:  # the judging step's estimate and reservation (batch prices)
            reserved = ctx.step.start(pending.prepared)
            if reserved is None:
                ctx.ledger.set_state(sid, "discovered", "cost cap reached")
                return SessionResult(
                    session_id=sid, outcome="not_started", reason="cost cap reached"
                )
            pending.estimate = reserved
        return pending

    def _fit(self, pending: Pending) -> int:
        """Re-chunk (like `AnthropicJudge.judge`) until every request fits the context window."""
        for attempt in range(RECHUNK_ATTEMPTS + 1):
            try:
                prepared = pending.prepared
                return self.judge.check_chunks(
                    prepared.header, prepared.chunks, prepared.safety_factor
                )
            except ContextWindowExceeded as exc:
                if attempt == RECHUNK_ATTEMPTS:
                    raise
                pending.prepared = rechunk(pending.prepared, exc)
        raise AssertionError("unreachable")

    # --- submit ----------------------------------------------------------------------

    def _submit_needed(self) -> None:
        fresh: list[tuple[str, str, dict[str, Any]]] = []
        for p in list(self.pending.values()):
            for cid, params in p.needed(self.judge):
                if cid not in self.submitted:
                    fresh.append((p.sid, cid, params))
        for group in group_requests(fresh):
            self._submit(group)

    def _submit(self, group: list[tuple[str, str, dict[str, Any]]]) -> None:
        requests = [{"custom_id": cid, "params": params} for _, cid, params in group]
        sids = list(dict.fromkeys(sid for sid, _, _ in group))
        cids = [cid for _, cid, _ in group]
        phase = "final" if all(c.startswith("f-") for c in cids) else "first"
        # Durable before the request leaves: a kill from here on is resolved by adoption.
        intent = self.ctx.ledger.add_intent(phase, cids, sids, fingerprint(requests))
        doubt: list[bool] = [False]
        try:
            batch_id = call_with_retries(lambda: self._create(requests, intent, sids, doubt))
        except anthropic.APIError as e:
            error = self.judge.api_failure(e)
            if isinstance(error, CredentialsError):
                raise error from e
            for sid in sids:
                self._done(
                    sid,
                    self._fail(sid, e, self.pending[sid].attempts, f"batch create failed: {error}"),
                )
            return
        self.submitted.update(dict.fromkeys(cids, batch_id))

    def _create(
        self,
        requests: list[dict[str, Any]],
        intent: dict[str, Any],
        sids: list[str],
        doubt: list[bool],
    ) -> str:
        """One try at `create`; after a try that may have made the batch, look for it first."""
        if doubt[0]:
            found = self.adopter.resolve([intent], sids, abandon=False)
            if found:
                self._load_unverified()
                return found[intent["custom_ids"][0]]
        # The same params the direct path sends (`BatchJudge` builds both).
        typed = cast("list[anthropic.types.messages.batch_create_params.Request]", requests)
        try:
            batch = self.client.messages.batches.create(requests=typed)
        except anthropic.APIError as e:
            doubt[0] = ambiguous(e)
            raise
        # Batch row + intent closed + session states in one transaction, before any waiting.
        cids, phase = intent["custom_ids"], intent["phase"]
        self.ctx.ledger.add_batch(batch.id, phase, cids, sids, intent=intent["intent_id"])
        return str(batch.id)

    def _load_unverified(self) -> None:
        for intent in self.ctx.ledger.intents("adopted"):
            self.unverified[intent["batch_id"]] = intent["custom_ids"]

    # --- poll and collect -----------------------------------------------------------

    def _collect(self) -> bool:
        """Fetch every ended batch someone waits on and advance its sessions.

        Returns:
            Whether anything moved (False: the caller sleeps before the next poll).
        """
        waiting = {
            bid
            for p in self.pending.values()
            for cid, _ in p.needed(self.judge)
            if (bid := self.submitted.get(cid)) is not None and (bid, cid) not in self.got
        }
        ended = [bid for bid in sorted(waiting) if self._ended(bid)]
        for bid in ended:
            items = self._results(bid)
            expected = self.unverified.pop(bid, None)
            if expected is not None and not self.adopter.matches(bid, items, expected):
                # Not the batch its intent made: those requests are submitted again.
                self.submitted = {c: b for c, b in self.submitted.items() if b != bid}
                continue
            for item in items:
                self.got[(bid, item.custom_id)] = item
            self.fetched.add(bid)
            self.ctx.ledger.set_batch_status(bid, "ended")
        if not ended:
            return False
        ready = [p for p in self.pending.values() if self._has_results(p)]
        with self._pool() as pool:
            outcomes = list(pool.map(self._advance, ready))
        for p, outcome in zip(ready, outcomes, strict=True):
            if outcome is not None:
                self._done(p.sid, outcome)
        return True

    def _ended(self, batch_id: str) -> bool:
        batch = self._api(lambda: self.client.messages.batches.retrieve(batch_id), batch_id)
        return batch.processing_status == "ended"

    def _results(self, batch_id: str) -> list[Any]:
        return self._api(lambda: list(self.client.messages.batches.results(batch_id)), batch_id)

    def _api(self, fn: Callable[[], Any], batch_id: str) -> Any:
        try:
            return call_with_retries(fn)
        except anthropic.APIError as e:
            error = self.judge.api_failure(e)
            if isinstance(error, CredentialsError):
                raise error from e
            raise JudgeError(
                f"Message Batch {batch_id}: {describe(e)}; rerun the same command to resume"
            ) from e

    def _has_results(self, p: Pending) -> bool:
        return any(self._got(cid) is not None for cid, _ in p.needed(self.judge))

    def _got(self, cid: str) -> Any:
        bid = self.submitted.get(cid)
        if bid is None:
            return None
        item = self.got.get((bid, cid))
        if item is None and bid in self.fetched:
            return missing_result(cid)  # the batch ended without this request's result
        return item

    # --- one session's results ------------------------------------------------------

    def _advance(self, p: Pending) -> SessionResult | None:
        """Consume this session's available results; a result when it is finished."""
        try:
            return self._consume(p)
        except CredentialsError:
            self.ctx.stop.set()
            raise
        except Unscored as e:
            return self._write(p, self._card(p, unscored=e))
        except Exception as exc:  # one session never stops the run
            current = (self.ctx.ledger.get(p.sid) or {}).get("state")
            if current != "stored":
                return self._fail(p.sid, exc, p.attempts)
            # A stored card that failed to push stays `stored`: the next run pushes it.
            reason = failure_reason(exc)
            self.ctx.ledger.set_state(p.sid, "stored", reason, **failure_trace(p.sid, exc))
            return SessionResult(
                session_id=p.sid, outcome="failed", reason=reason, attempts=p.attempts
            )

    def _consume(self, p: Pending) -> SessionResult | None:
        for cid, params in p.needed(self.judge):
            item = self._got(cid)
            if item is None:
                continue
            message = self._message(p, cid, item)
            if isinstance(message, SessionResult):
                return message
            p.batched.add(message.usage)
            p.batch_ids = list(dict.fromkeys([*p.batch_ids, self.submitted[cid]]))
            if cid.startswith("n-"):
                index = int(cid.rsplit("-", 1)[1])
                p.notes[index] = self._parse(p, params, message, ChunkNotes, f"chunk {index} notes")
                continue
            reply = self._parse(p, params, message, self.judge.reply_model, "score")
            return self._write(p, self._card(p, reply=reply))
        return None  # waiting for the rest of its notes, or for its final request

    def _message(self, p: Pending, cid: str, item: Any) -> Any:
        result = item.result
        if result.type == "succeeded":
            return result.message
        what = "score" if not cid.startswith("n-") else f"chunk {cid.rsplit('-', 1)[1]} notes"
        failure = JudgeError(f"{what}: batch request {result_reason(result)}")
        return self._fail(p.sid, failure, p.attempts)

    def _parse(
        self, p: Pending, params: dict[str, Any], message: Any, model: type, label: str
    ) -> Any:
        try:
            return self.judge.parse_or_repair(params, message, model, p.direct, label)
        except anthropic.APIError as e:
            raise self.judge.api_failure(e) from e

    def _cost(self, p: Pending) -> float:
        """USD of the session's calls so far: batched at the batch price, repairs not."""
        pricing, model = self.judge.pricing, self.judge.model
        return round(
            pricing.cost_usd(p.batched.usage, model, batch=True)
            + pricing.cost_usd(p.direct.usage, model),
            6,
        )

    def _card(
        self, p: Pending, *, reply: Any = None, unscored: Unscored | None = None
    ) -> Scorecard:
        pricing, model = self.judge.pricing, self.judge.model
        batched, direct = p.batched.usage, p.direct.usage
        cost = self._cost(p)
        meta: dict[str, Any] = {
            "cost_estimated": pricing.is_estimated(model),
            "prompt_tokens": p.prompt_tokens,
            "batch": {"ids": p.batch_ids, "direct_requests": direct.requests},
        }
        if p.multi and len(p.notes) == len(p.chunks):
            meta["chunk_notes"] = [p.notes[i].model_dump() for i in range(len(p.chunks))]
        session = p.prepared.session
        card = self.judge.make_card(
            session.session_id,
            session.source.value,
            p.chunks,
            batched.add(direct),
            meta,
            reply=reply,
            unscored=unscored,
            cost_usd=cost,
            calls=p.direct,
        )
        card = card.model_copy(update={"backend": "batch"})
        return self.judge.settle_goal(p.prepared, card)  # second opinions go direct

    def _write(self, p: Pending, card: Scorecard) -> SessionResult:
        """The judging step's settle and finish, then like the direct path: unscored →
        ledger; scored → `write_card`."""
        card = self.ctx.step.finish(p.prepared, card, p.estimate)
        if card.status != "scored":
            return record_unscored(self.ctx, card, p.attempts)
        return write_card(self.ctx, card, p.attempts)

    def _fail(self, sid: str, exc: BaseException, attempts: int, why: str = "") -> SessionResult:
        """`failed` (`why`, else the error's message), with what its calls so far were
        billed (a chunked session's notes whose final request then errored, say) in the
        ledger, the summary and the cap, and the error's traceback in the ledger."""
        reason, trace = why or failure_reason(exc), failure_trace(sid, exc)
        spent: Spent = {}
        p = self.pending.get(sid)
        if p is not None:
            spent = spent_columns(p.batched.usage.add(p.direct.usage), self._cost(p))
            self.ctx.step.fail(p.estimate, spent.get("cost_usd", 0.0))
        self.ctx.ledger.set_state(sid, "failed", reason, **spent, **trace)
        return SessionResult(
            session_id=sid, outcome="failed", reason=reason, attempts=attempts, **spent
        )


def run_batches(
    ctx: Context,
    refs: list[SessionRef],
    *,
    on_result: Callable[[SessionResult], None] = lambda r: None,
) -> list[SessionResult]:
    """Score `refs` through Message Batches (see the module docstring). Ctrl-C returns what
    is done, with `ctx.interrupted` set: the rest is `not_started`, its batches kept."""
    batch = BatchRun(ctx, on_result=on_result)
    try:
        return batch.run(refs)
    except KeyboardInterrupt:
        ctx.stop.set()
        ctx.interrupted = True
    waiting = "stopped; a batch holding it keeps running at Anthropic and the next run collects it"
    return [
        batch.results.get(r.session_id)
        or SessionResult(session_id=r.session_id, outcome="not_started", reason=waiting)
        for r in refs
    ]


def _sleep(seconds: float) -> None:
    time.sleep(seconds)
