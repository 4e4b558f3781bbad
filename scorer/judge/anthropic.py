"""The Sonnet judge: turns a session's chunks into a Scorecard through the Messages API.

    one chunk     → one scoring call
    N > 1 chunks  → N notes calls (concurrently) → one final scoring call with the task
                    context, all notes and the tail of the last chunk

Every call sends the same cached system prefix (role + rubric) and asks for structured
output through `output_config` (JSON schema); temperature and tool_choice are never sent,
since Sonnet 5.x rejects both. The overall is computed here from the rubric weights.

Failure policy:
    invalid reply (bad JSON, schema mismatch, refusal, max_tokens) → one repair call with
        the error, then an UNSCORED card (reason + raw reply kept), never low scores
    API still failing after retries (429/529/5xx/network) → UNSCORED card with the reason
    401/403 → CredentialsError naming ANTHROPIC_API_KEY
    request too large for the context window → ContextWindowExceeded (re-chunk and retry)
    any other API rejection (bad model id, 400) → JudgeError
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any

import anthropic
from pydantic import BaseModel

from scorer._version import package_version
from scorer.errors import CredentialsError, JudgeError
from scorer.judge import prompts as P
from scorer.judge.cost import Pricing, load_pricing
from scorer.judge.reply import (
    InvalidReply,
    M,
    Unscored,
    UsageTally,
    build_scores,
    known_events,
    reply_text,
    validate_reply,
)
from scorer.judge.retry import call_with_retries, classify, describe
from scorer.judge.rubric import Rubric, default_rubric
from scorer.judge.schema import ChunkNotes, ScoringReplyBase, output_config, scoring_model
from scorer.models import Chunk, JudgeUsage, Scorecard
from scorer.prepare.prepared import RECHUNK_ATTEMPTS, Prepared, rechunk
from scorer.settings import DEFAULT_MODEL, get_settings
from scorer.stages import counted_stage, report_stage

log = logging.getLogger(__name__)

NOTES_MAX_TOKENS = 4096
FINAL_MAX_TOKENS = 8192
TAIL_CHARS = 24_000
"""How much of the last chunk the final call sees verbatim (~6k tokens)."""
DEFAULT_CONTEXT_WINDOW = 200_000
CONTEXT_WINDOWS: dict[str, int] = {"claude-sonnet-5-5": 200_000, "claude-sonnet-4-5": 200_000}
DEPRECATED_MODELS: dict[str, str] = {
    "claude-sonnet-4-5": "2026-11-30",
    "claude-sonnet-4-5-20250929": "2026-11-30",
    "claude-sonnet-4-0": "2026-06-15",
    "claude-sonnet-4-20250514": "2026-06-15",
    "claude-opus-4-0": "2026-06-15",
    "claude-3-7-sonnet-latest": "2026-02-19",
    "claude-3-7-sonnet-20250219": "2026-02-19",
}
"""Model id → end-of-life date; judging with one of these warns."""


class ModelDeprecationWarning(UserWarning):
    """The configured judge model is deprecated or past its end of life."""


class ContextWindowExceeded(JudgeError):
    """A request would not fit the model's context window.

    The orchestrator should re-chunk the session with a smaller budget (e.g. `budget * 0.7`)
    and call `judge()` again. `tokens` is the measured (or estimated) prompt size, `limit`
    the room left for the prompt, `chunk_index` the offending chunk.
    """

    def __init__(self, tokens: int | None, limit: int, chunk_index: int | None) -> None:
        self.tokens, self.limit, self.chunk_index = tokens, limit, chunk_index
        where = f"chunk {chunk_index}" if chunk_index is not None else "a judge request"
        size = f"needs {tokens} tokens" if tokens is not None else "is too long"
        super().__init__(
            f"{where} {size} but the judge model allows {limit}: "
            "re-chunk with a smaller SCORER_CHUNK_BUDGET"
        )


def warn_if_deprecated(model: str) -> None:
    """Warn (and log) when `model` is in the deprecation table."""
    eol = DEPRECATED_MODELS.get(model)
    if eol:
        msg = f"judge model {model} is deprecated (end of life {eol}); set SCORER_MODEL={DEFAULT_MODEL}"
        log.warning(msg)
        warnings.warn(msg, ModelDeprecationWarning, stacklevel=3)


def make_client(
    *, http_client: Any = None, hint: str = "to use the Sonnet judge"
) -> anthropic.Anthropic:
    """The one Anthropic client factory: ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, and
    ANTHROPIC_BASE_URL, all read through `Settings` (so `.env` applies); SDK retries off.

    Args:
        http_client: An `httpx2.Client` (backfill passes its rate-limited one).
        hint: Ends the missing-credentials message.
    """
    settings = get_settings()
    if not settings.anthropic_configured:
        raise CredentialsError(f"ANTHROPIC_API_KEY is not set: export it {hint}")
    return anthropic.Anthropic(
        api_key=settings.anthropic_api_key,
        auth_token=settings.anthropic_auth_token,
        base_url=settings.anthropic_base_url,
        max_retries=0,
        http_client=http_client,
    )


class AnthropicJudge:
    """Judge sessions with a Claude model (Sonnet by default).

    Args:
        client: An `anthropic.Anthropic`; created lazily from the environment when None.
        model: Model id (default: `SCORER_MODEL` or claude-sonnet-5-5).
        rubric: The rubric; defaults to the bundled score configs.
        max_concurrency: Parallel notes calls for chunked sessions.
        pricing: Price table for `cost_usd`.
        counter: Token estimator with `.count(text)`; defaults to `TokenCounter`.
        verify_tokens: Confirm the largest request with `count_tokens` before sending;
            None means "when ANTHROPIC_API_KEY is set".
        prompts: Prompt templates; defaults to the bundled `prompts/`.
    """

    kind = "llm"

    def __init__(
        self,
        client: anthropic.Anthropic | None = None,
        *,
        model: str | None = None,
        rubric: Rubric | None = None,
        max_concurrency: int = 4,
        pricing: Pricing | None = None,
        counter: Any = None,
        verify_tokens: bool | None = None,
        prompts: P.PromptSet | None = None,
    ) -> None:
        self.model = model or get_settings().model
        self.rubric = rubric or default_rubric()
        self.max_concurrency = max(1, max_concurrency)
        self.pricing = pricing or load_pricing()
        self.prompts = prompts or P.default_prompts()
        self._counter = counter
        self._verify_tokens = verify_tokens
        self._client = client.with_options(max_retries=0) if client is not None else None
        self._reply_model = scoring_model(self.rubric)
        self._system = P.system_blocks(self.prompts, self.rubric)
        self.context_window = CONTEXT_WINDOWS.get(self.model, DEFAULT_CONTEXT_WINDOW)
        warn_if_deprecated(self.model)

    @property
    def client(self) -> anthropic.Anthropic:
        if self._client is None:
            self._client = make_client()
        return self._client

    @property
    def counter(self) -> Any:
        if self._counter is None:
            from scorer.prepare.tokens import TokenCounter

            self._counter = TokenCounter(get_settings().token_safety_factor)
        return self._counter

    @property
    def system_text(self) -> str:
        """The system prompt text (role + rubric) every request of this judge sends."""
        return self._system[0]["text"]

    # --- public API ----------------------------------------------------------------

    def judge(self, prepared: Prepared) -> Scorecard:
        """Score a prepared session (the `Judge` protocol), re-chunking when it overflows.

        A context-window overflow (Claude counts more tokens than the tiktoken estimate)
        re-chunks with a smaller budget up to `RECHUNK_ATTEMPTS` times; each re-chunk is
        recorded on the card as `meta["notes"]`.

        Raises:
            CredentialsError: The key is missing or rejected.
            ContextWindowExceeded: Still too big after the re-chunks.
            JudgeError: The API rejected the request for another reason.
        """
        for _ in range(RECHUNK_ATTEMPTS):
            try:
                return self._judge_prepared(prepared)
            except ContextWindowExceeded as exc:
                prepared = rechunk(prepared, exc)
        return self._judge_prepared(prepared)

    def _judge_prepared(self, prepared: Prepared) -> Scorecard:
        session = prepared.session
        card = self.judge_chunks(
            prepared.header,
            prepared.chunks,
            session_id=session.session_id,
            source=session.source.value,
        )
        if prepared.notes:
            card.meta["notes"] = list(prepared.notes)
        return card

    def judge_chunks(
        self, header: str, chunks: Sequence[Chunk], *, session_id: str, source: str
    ) -> Scorecard:
        """Score one session from its (already redacted) chunks.

        Args:
            header: The task context (task statement, project, objective signals).
            chunks: The rendered, redacted chunks in order.
            session_id: Stored with the card.
            source: Source kind, stored with the card.

        Returns:
            A scored card, or an unscored one (reason and raw reply kept).

        Raises:
            CredentialsError: The key is missing or rejected.
            ContextWindowExceeded: A chunk does not fit; re-chunk smaller and call again.
            JudgeError: The API rejected the request for another reason.
        """
        if not chunks:
            raise JudgeError(f"session {session_id}: nothing to judge (no chunks)")
        ledger = UsageTally()
        meta: dict[str, Any] = {"cost_estimated": self.pricing.is_estimated(self.model)}
        try:
            reply = self._run(header, chunks, ledger, meta)
        except Unscored as e:
            return self.make_card(session_id, source, chunks, ledger.usage, meta, unscored=e)
        return self.make_card(session_id, source, chunks, ledger.usage, meta, reply=reply)

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
            "output_config": output_config(reply),
        }

    def scoring_request(self, header: str, chunk: Chunk) -> dict[str, Any]:
        """Params of the one scoring call of a single-chunk session."""
        messages = P.single_scoring_messages(self.prompts, header, chunk)
        return self.request_params(messages, self._reply_model, FINAL_MAX_TOKENS)

    def notes_requests(self, header: str, chunks: Sequence[Chunk]) -> list[dict[str, Any]]:
        """Params of the chunk-notes calls of a multi-chunk session, in chunk order."""
        return [
            self.request_params(
                P.chunk_notes_messages(self.prompts, header, c, len(chunks)),
                ChunkNotes,
                NOTES_MAX_TOKENS,
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
        return self.request_params(messages, self._reply_model, FINAL_MAX_TOKENS)

    @property
    def reply_model(self) -> type[ScoringReplyBase]:
        """The pydantic model of a scoring reply for this judge's rubric."""
        return self._reply_model

    def parse_or_repair(
        self,
        params: dict[str, Any],
        response: Any,
        reply: type[M],
        tally: UsageTally,
        label: str,
    ) -> M:
        """Validate a response to `params`; on an invalid reply make one direct repair call.

        The repair call's usage goes to `tally` (the first response's usage is the
        caller's to count, since a batch response is priced differently).

        Raises:
            Unscored: Both replies were unusable (reason and raw reply kept).
            anthropic.APIError: The repair call failed after retries.
        """
        raw = reply_text(response)
        try:
            return validate_reply(response.stop_reason, raw, reply)
        except InvalidReply as first:
            log.info("%s: invalid reply (%s), asking for a repair", label, first)
            max_tokens = params["max_tokens"]
            if response.stop_reason == "max_tokens":
                max_tokens *= 2  # the reply was cut off: give the repair room
            messages = P.repair_messages(params["messages"], raw, str(first))
            response = self._send(self.request_params(messages, reply, max_tokens))
            tally.add(response.usage)
            raw = reply_text(response)
            try:
                return validate_reply(response.stop_reason, raw, reply)
            except InvalidReply as second:
                raise Unscored(
                    f"{label}: invalid structured output after one repair: {second}", raw
                ) from second

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
        """
        card = Scorecard(
            session_id=session_id,
            source=source,
            status="unscored" if unscored else "scored",
            unscored_reason=unscored.reason if unscored else None,
            raw_reply=unscored.raw if unscored else None,
            judge="llm",
            model=self.model,
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
        scores, unknown = build_scores(reply, self.rubric, known_events(chunks))
        return card.model_copy(
            update={
                "scores": scores,
                "unknown_refs": unknown,
                "recommendation": reply.recommendation,  # type: ignore[attr-defined]
                "accomplishments": reply.accomplishments,
                "failures": reply.failures,
                "summary": reply.summary,  # type: ignore[attr-defined]
            }
        )

    # --- the calls -----------------------------------------------------------------

    def _run(
        self, header: str, chunks: Sequence[Chunk], ledger: UsageTally, meta: dict[str, Any]
    ) -> ScoringReplyBase:
        try:
            if len(chunks) == 1:
                messages = P.single_scoring_messages(self.prompts, header, chunks[0])
                meta["prompt_tokens"] = self._check_fits(
                    [(chunks[0].index, messages)], self._reply_model, FINAL_MAX_TOKENS
                )
                return self._structured(
                    messages, self._reply_model, FINAL_MAX_TOKENS, ledger, "score"
                )
            requests = [
                (c.index, P.chunk_notes_messages(self.prompts, header, c, len(chunks)))
                for c in chunks
            ]
            meta["prompt_tokens"] = self._check_fits(requests, ChunkNotes, NOTES_MAX_TOKENS)
            notes = self._all_notes(requests, ledger)
            meta["chunk_notes"] = [n.model_dump() for n in notes]
            messages = P.final_scoring_messages(
                self.prompts, header, notes, chunks[-1], tail_chars=TAIL_CHARS
            )
            report_stage("final")
            return self._structured(messages, self._reply_model, FINAL_MAX_TOKENS, ledger, "score")
        except anthropic.APIError as e:
            raise self._api_failure(e) from e

    def _all_notes(
        self, requests: list[tuple[int, list[dict]]], ledger: UsageTally
    ) -> list[ChunkNotes]:
        def one(request: tuple[int, list[dict]]) -> ChunkNotes:
            index, messages = request
            return self._structured(
                messages, ChunkNotes, NOTES_MAX_TOKENS, ledger, f"chunk {index} notes"
            )

        workers = min(self.max_concurrency, len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge-notes") as pool:
            return list(pool.map(counted_stage("chunk", one, len(requests)), requests))

    def _structured(
        self, messages: list[dict], model: type[M], max_tokens: int, ledger: UsageTally, label: str
    ) -> M:
        """One call plus at most one repair call; raises `Unscored` if both are unusable."""
        params = self.request_params(messages, model, max_tokens)
        response = self._send(params)
        ledger.add(response.usage)
        return self.parse_or_repair(params, response, model, ledger, label)

    def _send(self, params: dict[str, Any]) -> Any:
        return call_with_retries(lambda: self.client.messages.create(**params))

    def api_failure(self, e: anthropic.APIError) -> Exception:
        """The typed error (or `Unscored`) an API error after retries turns into."""
        return self._api_failure(e)

    def check_fits(
        self, requests: list[tuple[int, list[dict]]], reply: type[BaseModel], max_tokens: int
    ) -> int:
        """Largest request's prompt tokens; raises ContextWindowExceeded when it cannot fit."""
        return self._check_fits(requests, reply, max_tokens)

    def _api_failure(self, e: anthropic.APIError) -> Exception:
        if isinstance(e, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
            return CredentialsError(f"ANTHROPIC_API_KEY was rejected by the API ({describe(e)})")
        message = getattr(e, "message", str(e))
        if isinstance(e, anthropic.BadRequestError) and "too long" in message.lower():
            return ContextWindowExceeded(None, self.context_window, None)
        if classify(e).retry:
            return Unscored(f"API error after retries: {describe(e)}: {message}")
        return JudgeError(f"judge API rejected the request ({describe(e)}): {message}")

    def _check_fits(
        self, requests: list[tuple[int, list[dict]]], reply: type[BaseModel], max_tokens: int
    ) -> int:
        """Measure the largest request; raise ContextWindowExceeded when it cannot fit."""
        system_text = self._system[0]["text"]
        sizes = [
            self.counter.count(system_text + "".join(m["content"] for m in msgs))
            for _, msgs in requests
        ]
        largest = max(range(len(requests)), key=sizes.__getitem__)
        index, messages = requests[largest]
        tokens = sizes[largest]
        verify = self._verify_tokens
        if verify is None:
            verify = bool(get_settings().anthropic_api_key)
        if verify:
            tokens = self._count_tokens(messages, reply, tokens)
        room = self.context_window - max_tokens
        if tokens > room:
            raise ContextWindowExceeded(tokens, room, index)
        return tokens

    def _count_tokens(self, messages: list[dict], reply: type[BaseModel], estimate: int) -> int:
        # Plain dicts, like `request_params`: the SDK's TypedDict params accept them at runtime.
        params: dict[str, Any] = {
            "model": self.model,
            "system": self._system,
            "messages": messages,
            "output_config": output_config(reply),
        }
        try:
            counted = call_with_retries(lambda: self.client.messages.count_tokens(**params))
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as e:
            raise self._api_failure(e) from e
        except anthropic.APIError as e:  # e.g. a proxy without the endpoint: keep the estimate
            log.warning("count_tokens failed (%s); using the estimate %d", describe(e), estimate)
            return estimate
        return counted.input_tokens
