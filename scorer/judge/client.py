"""The judge's edge to the Messages API: client factory, sending, and failure mapping.

    send(client, params)    non-streaming up to `NONSTREAMING_MAX_TOKENS`, streaming above
                            (the SDK refuses long non-streaming calls with a ValueError,
                            which therefore never escapes), retried by `judge.retry`
    api_failure(e, window)  what an API error after retries becomes:
        401/403                          CredentialsError naming ANTHROPIC_API_KEY
        400 "prompt is too long"         ContextWindowExceeded (re-chunk and retry)
        429/529/5xx/connection errors    JudgeError (infrastructure: "failed", retried
                                         by the next run, never an unscored card)
        any other rejection              JudgeError

This module is the only place importing the SDK, on first use (`judge.sdk`): the
heuristic judge, and the LLM judge over `judge.http_transport` or `judge.claude_code`,
never load it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scorer.errors import CredentialsError, JudgeError, OverRateLimit, RunStopped
from scorer.judge.catalog import NONSTREAMING_MAX_TOKENS
from scorer.judge.retry import call_with_retries, cause_of, classify, describe, stopped
from scorer.pacing import MeteredRequest, metered

if TYPE_CHECKING:
    import httpx2

    from scorer.judge.sdk import anthropic
    from scorer.settings import Settings

log = logging.getLogger(__name__)


class ContextWindowExceeded(JudgeError):
    """A request does not fit the model's context window (or the single-call ceiling).

    The orchestrator re-chunks the session with a smaller budget and calls `judge()`
    again. `tokens` is the measured (or estimated) prompt size, `limit` the room left
    for the prompt, `chunk_index` the offending chunk.
    """

    def __init__(
        self, tokens: int | None, limit: int, chunk_index: int | None, *, why: str = ""
    ) -> None:
        self.tokens, self.limit, self.chunk_index = tokens, limit, chunk_index
        where = f"chunk {chunk_index}" if chunk_index is not None else "a judge request"
        size = f"needs {tokens} tokens" if tokens is not None else "is too long"
        allows = why or f"{where} {size} but the judge model allows {limit}"
        super().__init__(f"{allows}: re-chunk with a smaller SCORER_CHUNK_BUDGET")


def make_client(
    settings: Settings,
    *,
    http_client: httpx2.Client | None = None,
    hint: str = "to use the Sonnet judge",
) -> anthropic.Anthropic:
    """The one Anthropic client factory: ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN, and
    ANTHROPIC_BASE_URL, from the settings the caller read (so `.env` applies); SDK
    retries off (`judge.retry` decides).

    Args:
        settings: Where the credentials come from.
        http_client: An `httpx2.Client` (backfill passes its rate-limited one).
        hint: Ends the missing-credentials message.

    Raises:
        CredentialsError: Neither a key nor a token is set.
    """
    from scorer.judge.sdk import anthropic

    settings.require_anthropic(hint)
    return anthropic.Anthropic(
        api_key=settings.anthropic_api_key,
        auth_token=settings.anthropic_auth_token,
        base_url=settings.anthropic_base_url,
        max_retries=0,
        http_client=http_client,
    )


def _stream(client: anthropic.Anthropic, params: dict[str, Any], request: MeteredRequest) -> Any:
    with client.messages.stream(**params) as stream:
        message = stream.get_final_message()
        request.answered(stream.response.headers, message.usage)
        return message


def _send_once(client: anthropic.Anthropic, params: dict[str, Any]) -> Any:
    from scorer.judge.sdk import anthropic

    with metered(params) as request:
        try:
            if params["max_tokens"] > NONSTREAMING_MAX_TOKENS:
                return _stream(client, params, request)
            try:
                raw = client.messages.with_raw_response.create(**params)
            except ValueError as e:  # the SDK's long-request guard (some models allow less)
                if "streaming" not in str(e).lower():
                    raise JudgeError(f"judge request rejected by the SDK: {e}") from e
                return _stream(client, params, request)
        except anthropic.APIStatusError as e:  # a 429 says where the limits stand too
            request.answered(e.response.headers)
            raise
        message = raw.parse()
        request.answered(raw.headers, message.usage)
        return message


def send(client: anthropic.Anthropic, params: dict[str, Any]) -> Any:
    """One Messages API call with retries; a `Message` (streamed when it may run long).

    The response is read with `messages.with_raw_response`, so its rate-limit headers and
    usage reach the limiter that admitted the call, if any (`scorer.pacing`).

    Raises:
        anthropic.APIError: The call failed after retries (map it with `api_failure`).
    """
    return call_with_retries(lambda: _send_once(client, params))


def api_failure(e: anthropic.APIError, window: int) -> JudgeError | CredentialsError | RunStopped:
    """The typed error an API failure after retries turns into (see the module doc)."""
    from scorer.judge.sdk import anthropic  # loaded already: `e` is one of its errors

    if stopped(e):
        return RunStopped("run stopped before the judge request was sent")
    over = cause_of(e, OverRateLimit)
    if over is not None:  # never sent: re-chunk under the account's input limit
        return ContextWindowExceeded(over.tokens, over.limit, None, why=str(over))
    if isinstance(e, anthropic.AuthenticationError | anthropic.PermissionDeniedError):
        return CredentialsError(f"ANTHROPIC_API_KEY was rejected by the API ({describe(e)})")
    message = api_message(e)
    if isinstance(e, anthropic.BadRequestError) and "too long" in message.lower():
        return ContextWindowExceeded(None, window, None)
    if classify(e).retry:
        return JudgeError(f"judge API still failing after retries ({describe(e)}): {message}")
    return JudgeError(f"judge API rejected the request ({describe(e)}): {message}")


def api_message(e: anthropic.APIError) -> str:
    """The API's own error message (`error.message` of the body), else the SDK's text."""
    body = getattr(e, "body", None)
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        inner = body["error"].get("message")
        if inner:
            return str(inner)
    return str(getattr(e, "message", e))


def count_tokens(client: anthropic.Anthropic, params: dict[str, Any]) -> int | None:
    """`messages.count_tokens` for a request (`max_tokens` is dropped); None when unavailable.

    Raises:
        CredentialsError: The key was rejected.
    """
    from scorer.judge.sdk import anthropic

    body = {k: v for k, v in params.items() if k != "max_tokens"}
    try:
        counted = call_with_retries(lambda: client.messages.count_tokens(**body))
    except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as e:
        raise api_failure(e, 0) from e
    except anthropic.APIError as e:  # e.g. a proxy without the endpoint: keep the estimate
        log.warning("count_tokens failed (%s); using the estimate", describe(e))
        return None
    return int(counted.input_tokens)
