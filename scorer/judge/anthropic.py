"""The Sonnet judge: turns a session's chunks into a Scorecard through the Messages API.

    one chunk     → one scoring call
    N > 1 chunks  → N notes calls (concurrently) → one final scoring call with the task
                    context, all notes and the tail of the last chunk

Every call sends the same cached system prefix (role + rubric) and asks for structured
output through `output_config` (JSON schema, built once per process) with an explicit
`effort`; `max_tokens` holds thinking plus the answer at that effort (`judge.catalog`).
Temperature and tool_choice are never sent, since Sonnet 5.x rejects both. The overall is
computed here from the rubric weights.

Failure policy (`judge.calls` follows each reply, `judge.client` maps API errors):
    invalid reply → one repair call, then UNSCORED ("invalid_output", raw reply kept)
    max_tokens → the same request once with a larger budget
    refusal → recorded on the card, retried on the fallback model, then UNSCORED ("refused")
    too long (before sending, a 400, or model_context_window_exceeded) → re-chunk, and
        UNSCORED ("too_long") when re-chunking cannot make it fit
    API still failing after retries (429/529/5xx/network) → JudgeError (never unscored)
    401/403 → CredentialsError naming ANTHROPIC_API_KEY
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel

from scorer._version import package_version
from scorer.errors import CredentialsError, JudgeError, ScorerError
from scorer.judge import prompts as P
from scorer.judge.calls import CallSettler
from scorer.judge.catalog import (
    CallKind,
    ModelDeprecationWarning,
    context_window,
    max_tokens_for,
    warn_if_deprecated,
)
from scorer.judge.checklist import checklist_conflict, goal_from_checklist
from scorer.judge.client import ContextWindowExceeded, api_failure, make_client, send
from scorer.judge.config import JudgeConfig
from scorer.judge.fit import Counter, RequestFit
from scorer.judge.reply import (
    M,
    Unscored,
    UsageTally,
    build_checklist,
    build_scores,
    known_events,
)
from scorer.judge.retry import call_with_retries, is_api_error
from scorer.judge.schema import ChunkNotes, ScoringReplyBase, output_config, scoring_model
from scorer.models import Chunk, JudgeBackend, JudgeKind, JudgeUsage, Scorecard
from scorer.prepare.prepared import RECHUNK_ATTEMPTS, Prepared, rechunk
from scorer.priority import NOTES, call_priority
from scorer.settings import DEFAULT_TOKEN_SAFETY
from scorer.stages import counted_stage, report_stage

if TYPE_CHECKING:
    from scorer.judge.sdk import anthropic

__all__ = [
    "AnthropicJudge",
    "ContextWindowExceeded",
    "ModelDeprecationWarning",
    "make_client",
    "warn_if_deprecated",
]

log = logging.getLogger(__name__)

TAIL_CHARS = 24_000
"""How much of the last chunk the final call sees verbatim (~6k tokens)."""
NEAR_LIMIT = 0.85
"""Confirm a request with `count_tokens` only when its estimate passes this share of the room."""


class Transport(Protocol):
    """Sends one request (Messages API params) and returns a `Message`-shaped reply."""

    def __call__(self, params: dict[str, Any]) -> Any: ...


class AnthropicJudge(RequestFit):
    """Judge sessions with a Claude model (Sonnet by default).

    Args:
        client: An `anthropic.Anthropic` (`judge.client.make_client(settings)`); None for a
            judge that only builds and estimates requests (sending raises
            `CredentialsError`).
        config: Model, effort, fallback model, rubric, prompts, limits and prices (default:
            `JudgeConfig()`, the documented defaults).
        max_concurrency: Parallel notes calls for chunked sessions.
        counter: Token estimator with `.count(text)`; defaults to a `TokenCounter` at
            the config's estimate factor.
        verify_tokens: Confirm a request near the limit with `count_tokens` before
            sending; None means "when there is a client".
        transport: Sends one request instead of the SDK's Messages API client (the user's
            own Claude Code, `judge.claude_code.ClaudeCodeTransport`, or plain HTTP,
            `judge.http_transport.MessagesTransport`): the same requests, the same reply
            handling, the same card, with `backend` (the transport's `backend`, else
            `claude-code`) saying how it travelled.
    """

    kind: JudgeKind = "llm"

    def __init__(
        self,
        client: anthropic.Anthropic | None = None,
        config: JudgeConfig | None = None,
        *,
        max_concurrency: int = 4,
        counter: Counter | None = None,
        verify_tokens: bool | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.config = c = config or JudgeConfig()
        self.model, self.effort, self.fallback_model = c.model, c.effort, c.fallback_model
        self.rubric, self.prompts, self.pricing = c.rubric, c.prompts, c.pricing
        self.prompt_version = c.prompts.version
        self.max_concurrency = max(1, max_concurrency)
        self._counter = counter
        self._verify_tokens = client is not None if verify_tokens is None else verify_tokens
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._transport = transport
        self.backend: JudgeBackend = (
            getattr(transport, "backend", "claude-code") if transport is not None else "api"
        )
        self._reply_model = scoring_model(self.rubric)
        self._system = P.system_blocks(self.prompts, self.rubric)
        self.context_window = context_window(self.model, c.context_window)
        self.max_prompt_tokens = c.max_prompt_tokens
        self._overhead: dict[str, int] = {}
        warn_if_deprecated(self.model)

    @property
    def client(self) -> anthropic.Anthropic:
        """The Messages API client.

        Raises:
            CredentialsError: The judge was built without one (no key was configured).
        """
        if self._client is None:
            raise CredentialsError(
                "ANTHROPIC_API_KEY is not set: export it (or ANTHROPIC_AUTH_TOKEN) to use "
                "the Sonnet judge"
            )
        return self._client

    @property
    def has_client(self) -> bool:
        """Whether this judge can call the API (else it only builds and estimates)."""
        return self._client is not None

    def send(self, params: dict[str, Any]) -> Any:
        """One request with retries, through the transport or the Messages API."""
        if self._transport is not None:
            return call_with_retries(lambda: self._transport(params))  # type: ignore[misc]
        return send(self.client, params)

    @property
    def counter(self) -> Counter:
        if self._counter is None:
            from scorer.prepare.tokens import TokenCounter

            self._counter = TokenCounter(self.config.estimate_factor)
        return self._counter

    @property
    def system_text(self) -> str:
        """The system prompt text (role + rubric) every request of this judge sends."""
        return self._system[0]["text"]

    def max_tokens(self, kind: CallKind) -> int:
        """`max_tokens` of a notes or scoring call: answer plus thinking at this effort."""
        return max_tokens_for(kind, self.effort, self.model)

    # --- public API ----------------------------------------------------------------

    def judge(self, prepared: Prepared) -> Scorecard:
        """Score a prepared session (the `Judge` protocol), re-chunking when it overflows.

        A context-window overflow re-chunks with a smaller budget up to `RECHUNK_ATTEMPTS`
        times (each recorded in `meta["notes"]`); still too long is an unscored card. What
        the overflowing attempts spent is added to the card's usage and cost.

        Raises:
            CredentialsError: The key is missing or rejected.
            JudgeError: The API failed after retries or rejected the request.
        """
        spent, card = JudgeUsage(), None
        for attempt in range(RECHUNK_ATTEMPTS + 1):
            try:
                card = self._judge_prepared(prepared)
                break
            except ContextWindowExceeded as exc:
                spent = spent.add(exc.spent or JudgeUsage())
                if attempt < RECHUNK_ATTEMPTS:
                    prepared = rechunk(prepared, exc)
                    continue
                session, meta = prepared.session, {"notes": list(prepared.notes)}
                too_long = Unscored(f"too long: {exc}", code="too_long")
                return self.make_card(
                    session.session_id, session.source.value, prepared.chunks, spent, meta,
                    unscored=too_long,
                )  # fmt: skip
            except ScorerError as exc:  # stopped or failed: what was spent is still billed
                exc.spent = spent.add(exc.spent or JudgeUsage())
                exc.spent_usd = self.pricing.cost_usd(exc.spent, self.model)
                raise
        assert card is not None  # each attempt judges, re-chunks, returns or raises
        if spent.requests:
            usage = card.usage.add(spent)
            card = card.model_copy(
                update={"usage": usage, "cost_usd": self.pricing.cost_usd(usage, self.model)}
            )
        return self.settle_goal(prepared, card)

    def settle_goal(self, prepared: Prepared, card: Scorecard) -> Scorecard:
        """The card's goal probability, with second opinions when it is unsure
        (`judge.second`; Message Batches call this on their cards too)."""
        from scorer.judge.second import settle_goal

        return settle_goal(self, prepared, card)

    def _judge_prepared(self, prepared: Prepared) -> Scorecard:
        session = prepared.session
        card = self.judge_chunks(
            prepared.header,
            prepared.chunks,
            session_id=session.session_id,
            source=session.source.value,
            safety_factor=prepared.safety_factor,
        )
        if prepared.notes:
            card.meta["notes"] = list(prepared.notes)
        return card

    def judge_chunks(
        self,
        header: str,
        chunks: Sequence[Chunk],
        *,
        session_id: str,
        source: str,
        safety_factor: float = DEFAULT_TOKEN_SAFETY,
    ) -> Scorecard:
        """Score one session from its (already redacted) chunks.

        Args:
            header: The task context (task statement, project, objective signals).
            chunks: The rendered, redacted chunks in order.
            session_id: Stored with the card.
            source: Source kind, stored with the card.
            safety_factor: The factor the chunker's token counts carry.

        Returns:
            A scored card, or an unscored one (reason and raw reply kept).

        Raises:
            CredentialsError: The key is missing or rejected.
            ContextWindowExceeded: A chunk does not fit; re-chunk smaller and call again.
            JudgeError: The API failed after retries or rejected the request.
        """
        if not chunks:
            raise JudgeError(f"session {session_id}: nothing to judge (no chunks)")
        tally = UsageTally()
        meta: dict[str, Any] = {"cost_estimated": self.pricing.is_estimated(self.model)}
        try:
            meta["prompt_tokens"] = self.check_chunks(header, chunks, safety_factor)
            reply = self._run(header, chunks, tally, meta)
        except Unscored as e:
            return self.make_card(
                session_id, source, chunks, tally.usage, meta, unscored=e, calls=tally
            )
        except ScorerError as e:  # a re-chunk, a stop or a failure: judge() bills the calls
            e.spent = tally.usage
            e.spent_usd = self.pricing.cost_usd(tally.usage, self.model)
            raise
        return self.make_card(
            session_id, source, chunks, tally.usage, meta, reply=reply, calls=tally
        )

    # --- request building and reply parsing (shared with Message Batches) -----------

    def request_params(
        self, messages: list[dict], reply: type[BaseModel], max_tokens: int
    ) -> dict[str, Any]:
        """The Messages API params of one structured-output call."""
        return {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": self._system,
            "messages": messages,
            "output_config": {"effort": self.effort, **output_config(reply)},
        }

    def scoring_request(self, header: str, chunk: Chunk) -> dict[str, Any]:
        """Params of the one scoring call of a single-chunk session."""
        messages = P.single_scoring_messages(self.prompts, header, chunk)
        return self.request_params(messages, self._reply_model, self.max_tokens("score"))

    def notes_requests(self, header: str, chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
        """Params of the chunk-notes calls of a multi-chunk session, in chunk order."""
        budget = self.max_tokens("notes")
        return [
            self.request_params(
                P.chunk_notes_messages(self.prompts, header, c, len(chunks)), ChunkNotes, budget
            )
            for c in chunks
        ]

    def final_request(
        self, header: str, notes: list[ChunkNotes], last_chunk: Chunk
    ) -> dict[str, Any]:
        """Params of the final scoring call of a multi-chunk session."""
        messages = P.final_scoring_messages(
            self.prompts, header, notes, last_chunk, tail_chars=TAIL_CHARS
        )
        return self.request_params(messages, self._reply_model, self.max_tokens("score"))

    @property
    def reply_model(self) -> type[ScoringReplyBase]:
        """The pydantic model of a scoring reply for this judge's rubric."""
        return self._reply_model

    def settler(self, tally: UsageTally) -> CallSettler:
        """Follows replies through refusal fallback, budget growth and repair (`calls`)."""
        return CallSettler(
            self.send,
            tally,
            self.fallback_model,
            self.context_window,
        )

    def parse_or_repair(
        self,
        params: dict[str, Any],
        response: Any,
        reply: type[M],
        tally: UsageTally,
        label: str,
    ) -> M:
        """See a response to `params` through (`calls.CallSettler.settle`).

        Follow-up calls' usage goes to `tally` (the first response's usage is the caller's
        to count, since a batch response is priced differently).

        Raises:
            Unscored: Refused on the fallback too, or invalid after one repair.
            anthropic.APIError: A follow-up call failed after retries.
        """
        return self.settler(tally).settle(params, response, reply, label)

    def make_card(
        self,
        session_id: str,
        source: str,
        chunks: Sequence[Chunk],
        usage: JudgeUsage,
        meta: dict[str, Any],
        *,
        reply: ScoringReplyBase | None = None,
        unscored: Unscored | None = None,
        cost_usd: float | None = None,
        calls: UsageTally | None = None,
    ) -> Scorecard:
        """The Scorecard of a judged session: scored from `reply`, or `unscored`.

        Args:
            session_id: Stored with the card.
            source: Source kind, stored with the card.
            chunks: The chunks judged (event numbers validate the evidence refs).
            usage: Summed usage of every call.
            meta: Card metadata (cost_estimated, prompt_tokens, chunk_notes, ...).
            reply: The validated scoring reply (None with `unscored`).
            unscored: Why there are no scores.
            cost_usd: USD spent; defaults to `usage` at the full (non-batch) price.
            calls: The tally of the calls: answering models and refusals.
        """
        answered = calls.answered_by if calls else []
        card = Scorecard(
            session_id=session_id,
            source=source,
            status="unscored" if unscored else "scored",
            unscored_reason=unscored.reason if unscored else None,
            unscored_code=unscored.code if unscored else None,
            raw_reply=unscored.raw if unscored else None,
            judge="llm",
            model=self.model,
            answered_by=answered[-1] if answered else None,
            effort=self.effort,
            backend=self.backend,
            refusals=list(calls.refusals) if calls else [],
            prompt_version=self.prompts.version,
            prompt_hash=self.prompts.hash,
            rubric_version=self.rubric.version,
            rubric_hash=self.rubric.hash,
            package_version=package_version(),
            n_chunks=len(chunks),
            usage=usage,
            cost_usd=self.pricing.cost_usd(usage, self.model) if cost_usd is None else cost_usd,
            created_at=datetime.now(UTC),
            meta=meta,
        )
        if unscored is not None or reply is None:
            return card
        known = known_events(chunks)
        scores, unknown = build_scores(reply, self.rubric, known)
        checklist = build_checklist(reply, known)
        implied = goal_from_checklist(checklist)
        if implied is not None:
            card.meta["checklist_goal"] = implied
        conflict = checklist_conflict(checklist, scores["goal_achievement"].label)
        if conflict:  # flagged, not overridden: calibration shows which one to trust
            card.meta["checklist_conflict"] = conflict
        unknown = sorted(
            {*unknown, *(e.event for c in checklist for e in c.evidence if not e.valid)}
        )
        return card.model_copy(
            update={
                "scores": scores,
                "requirements": checklist,
                "unknown_refs": unknown,
                "recommendation": reply.recommendation,  # type: ignore[attr-defined]
                "accomplishments": reply.accomplishments,
                "failures": reply.failures,
                "summary": reply.summary,  # type: ignore[attr-defined]
            }
        )

    # --- the calls -----------------------------------------------------------------

    def _run(
        self, header: str, chunks: Sequence[Chunk], tally: UsageTally, meta: dict[str, Any]
    ) -> ScoringReplyBase:
        settler = self.settler(tally)
        try:
            if len(chunks) == 1:
                return settler.call(
                    self.scoring_request(header, chunks[0]), self._reply_model, "score"
                )
            notes = self._all_notes(settler, self.notes_requests(header, chunks))
            meta["chunk_notes"] = [n.model_dump() for n in notes]
            final = self.final_request(header, notes, chunks[-1])
            report_stage("final")
            return settler.call(final, self._reply_model, "score")
        except Exception as e:
            if not is_api_error(e):  # the SDK's errors only; a transport's are typed
                raise
            raise api_failure(e, self.context_window) from e

    def _all_notes(self, settler: CallSettler, requests: list[dict[str, Any]]) -> list[ChunkNotes]:
        def one(indexed: tuple[int, dict[str, Any]]) -> ChunkNotes:
            index, params = indexed
            with call_priority(NOTES):  # the final call waits for these: they go first
                return settler.call(params, ChunkNotes, f"chunk {index} notes")

        workers = min(self.max_concurrency, len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-notes") as pool:
            return list(pool.map(counted_stage("chunk", one, len(requests)), enumerate(requests)))

    def api_failure(self, e: anthropic.APIError) -> Exception:
        """The typed error an API error after retries turns into (`client.api_failure`)."""
        return api_failure(e, self.context_window)
