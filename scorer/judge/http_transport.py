"""The Messages API over plain HTTP, for a process that must not wait for the SDK.

Importing the `anthropic` SDK costs about 3 s of CPU (it defines thousands of pydantic
models), which is most of what a hook's worker would spend between a session's end and
its stored card. This transport sends the judge's exact request (`AnthropicJudge`'s
params) with the standard library's `urllib.request` (proxies from the environment, the
system's certificates) and hands back a `Message`-shaped reply, so the judging step and
its card are the same; only the send changes, as with `judge.claude_code`. (`httpx2`,
the SDK's own client, costs 0.4 s of CPU to import and start, mostly `trio`, against
0.08 s: the difference is a third of the hook's whole budget.)

    params ─► POST {ANTHROPIC_BASE_URL}/v1/messages   (streamed above
              x-api-key | authorization: Bearer         NONSTREAMING_MAX_TOKENS, as the
              anthropic-version: 2023-06-01             SDK does)
           ◄─ the Message JSON (or its event stream) ─► `ApiReply`

Failures map onto the judge's rules like the SDK's errors do (`judge.client`):

    401/403                      CredentialsError naming ANTHROPIC_API_KEY
    400 "prompt is too long"     ContextWindowExceeded (re-chunk)
    429                          retried after `retry-after` (`judge.retry`)
    408/409/529/5xx, network     retried with backoff
    any other rejection          JudgeError

It sends one request; the retries are `judge.retry`'s. It does not meter requests against
an account's rate limits (`scorer.pacing`) or count tokens: the backfill and the batch
runner keep the SDK client for that.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scorer.errors import CredentialsError, JudgeError
from scorer.judge.catalog import NONSTREAMING_MAX_TOKENS
from scorer.judge.claude_code import ReplyUsage, TextBlock
from scorer.models import JudgeBackend
from scorer.retry import RetryDecision, RetryKind, parse_retry_after

if TYPE_CHECKING:
    from scorer.settings import Settings

API_VERSION = "2023-06-01"
DEFAULT_BASE_URL = "https://api.anthropic.com"
TIMEOUT = 600.0
"""Seconds one call may take (the SDK's default)."""
_TRANSIENT = {408, 409, 529}


class MessagesFailure(JudgeError):
    """A call worth retrying (rate limited, overloaded, a server or network error);
    `decision` says how (`judge.retry.classify` reads it)."""

    def __init__(self, message: str, decision: RetryDecision, status: int | None = None) -> None:
        super().__init__(message)
        self.decision, self.status_code = decision, status


@dataclass(frozen=True)
class OtherBlock:
    """A content block the judge does not read (thinking, redacted thinking)."""

    type: str


@dataclass(frozen=True)
class StopDetails:
    """Why the model stopped (a refusal's category and explanation)."""

    category: str | None = None
    explanation: str | None = None


@dataclass(frozen=True)
class ApiReply:
    """A Messages API `Message`, with the fields the judge reads."""

    model: str
    stop_reason: str | None
    content: list[TextBlock | OtherBlock]
    usage: ReplyUsage
    stop_details: StopDetails | None = None


def reply_of(message: dict[str, Any]) -> ApiReply:
    """The reply of a Message's JSON (or of one assembled from its event stream)."""
    blocks: list[TextBlock | OtherBlock] = [
        TextBlock(b.get("text", "")) if b.get("type") == "text" else OtherBlock(b.get("type", ""))
        for b in message.get("content") or []
    ]
    usage = message.get("usage") or {}
    details = message.get("stop_details")
    return ApiReply(
        model=message.get("model", ""),
        stop_reason=message.get("stop_reason"),
        content=blocks,
        usage=ReplyUsage(
            input_tokens=usage.get("input_tokens") or 0,
            output_tokens=usage.get("output_tokens") or 0,
            cache_read_input_tokens=usage.get("cache_read_input_tokens") or 0,
            cache_creation_input_tokens=usage.get("cache_creation_input_tokens") or 0,
        ),
        stop_details=StopDetails(details.get("category"), details.get("explanation"))
        if isinstance(details, dict)
        else None,
    )


def failure_of(status: int, body: bytes, headers: Any) -> Exception:
    """The typed error of a non-200 answer (see the module doc)."""
    from scorer.judge.client import ContextWindowExceeded

    try:
        said = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        said = body.decode("utf-8", "replace").strip()[:300] or "no message"
    if status in (401, 403):
        return CredentialsError(f"ANTHROPIC_API_KEY was rejected by the API ({status}: {said})")
    if status == 400 and "too long" in said.lower():
        return ContextWindowExceeded(None, 0, None, why=f"the API: {said}")
    wait = parse_retry_after(headers)
    if status == 429:
        decision = RetryDecision(RetryKind.RATE_LIMITED, wait, "rate limited")
        return MessagesFailure(f"Messages API {status}: {said}", decision, status)
    if status in _TRANSIENT or status >= 500:
        decision = RetryDecision(RetryKind.TRANSIENT, wait, f"{status}")
        return MessagesFailure(f"Messages API {status}: {said}", decision, status)
    return JudgeError(f"judge API rejected the request ({status}): {said}")


def _events(lines: Iterator[bytes]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) of a server-sent event stream (its raw lines)."""
    name: str = ""
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    if data:
        yield name, json.loads("\n".join(data))


_DELTAS = {"text_delta": "text", "thinking_delta": "thinking", "signature_delta": "signature"}
"""The streamed delta kinds and the block field each extends."""


def assemble(events: Iterator[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The Message a stream of Messages API events adds up to.

    Raises:
        MessagesFailure: The stream carried an error (an overload mid-answer).
    """
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "message_start":
            message = dict(data["message"])
        elif name == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"])
        elif name == "content_block_delta":
            delta, block = data["delta"], blocks[data["index"]]
            field = _DELTAS.get(delta.get("type", ""))
            if field is not None:
                block[field] = block.get(field, "") + delta[field]
        elif name == "message_delta":
            message.update({k: v for k, v in data.get("delta", {}).items() if v is not None})
            message["usage"] = {**message.get("usage", {}), **(data.get("usage") or {})}
        elif name == "error":
            error = data.get("error") or {}
            decision = RetryDecision(RetryKind.TRANSIENT, reason=error.get("type", "error"))
            raise MessagesFailure(f"Messages API stream: {error.get('message')}", decision)
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


@dataclass
class MessagesTransport:
    """Sends one judge request to the Messages API (see the module doc).

    Args:
        api_key: `ANTHROPIC_API_KEY` (or None with `auth_token`).
        auth_token: `ANTHROPIC_AUTH_TOKEN`, sent as a bearer token.
        base_url: `ANTHROPIC_BASE_URL` (default the public API).
        timeout: Seconds one call may take.
    """

    api_key: str | None
    auth_token: str | None = None
    base_url: str | None = None
    timeout: float = TIMEOUT
    backend: JudgeBackend = "api"

    @classmethod
    def from_settings(cls, settings: Settings) -> MessagesTransport:
        """From the settings' credentials.

        Raises:
            CredentialsError: Neither a key nor a token is set.
        """
        settings.require_anthropic()
        return cls(settings.anthropic_api_key, settings.anthropic_auth_token,
                   settings.anthropic_base_url)  # fmt: skip

    def headers(self) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION, "content-type": "application/json"}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        elif self.auth_token:
            headers["authorization"] = f"Bearer {self.auth_token}"
        return headers

    @property
    def url(self) -> str:
        return (self.base_url or DEFAULT_BASE_URL).rstrip("/") + "/v1/messages"

    def __call__(self, params: dict[str, Any]) -> ApiReply:
        """Send `params` once (no retries here; `judge.retry` decides).

        Raises:
            MessagesFailure: Rate limited, overloaded, a server or network error.
            CredentialsError: The key was rejected.
            ContextWindowExceeded: The request is too long for the model.
            JudgeError: Any other rejection, or an answer that is not a Message.
        """
        stream = params["max_tokens"] > NONSTREAMING_MAX_TOKENS  # as the SDK decides
        body = json.dumps({**params, "stream": True} if stream else params).encode()
        request = urllib.request.Request(self.url, body, self.headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                if stream:
                    return reply_of(assemble(_events(iter(response.readline, b""))))
                return reply_of(json.loads(response.read()))
        except urllib.error.HTTPError as exc:
            raise failure_of(exc.code, exc.read(), exc.headers) from None
        except TimeoutError as exc:
            decision = RetryDecision(RetryKind.TRANSIENT, reason="timeout")
            raise MessagesFailure(f"Messages API timed out: {exc}", decision) from exc
        except (urllib.error.URLError, ConnectionError, OSError) as exc:
            decision = RetryDecision(RetryKind.TRANSIENT, reason="connection")
            raise MessagesFailure(f"cannot reach the Messages API: {exc}", decision) from exc
        except ValueError as exc:  # not JSON: a proxy's page, a cut-off answer
            raise JudgeError(f"the Messages API answered something else: {exc}") from exc
