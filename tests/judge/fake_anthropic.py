"""A fake Messages API behind the real anthropic client (httpx2.MockTransport).

    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    judge = AnthropicJudge(fake.client())
    ...
    fake.message_bodies[0]["output_config"]

Replies are served in order from a queue; an entry may be an `httpx2.Response`, a callable
`(body: dict) -> httpx2.Response` (for replies that depend on the request) or an exception
instance to raise (e.g. `httpx2.ConnectTimeout`). `count_tokens` requests are answered from
`count_tokens_value` without using the queue. Every request is kept in `history`.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anthropic
import httpx2
from anthropic.types import Message, MessageTokensCount

from scorer.judge.rubric import Rubric, default_rubric

Reply = httpx2.Response | Callable[[dict], httpx2.Response] | Exception

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def message_json(
    payload: dict | str,
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 100,
    output_tokens: int = 50,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "claude-sonnet-5-5",
) -> dict[str, Any]:
    """A Messages API response body, checked against the SDK's own `Message` type."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }
    Message.model_validate(body)
    return body


def message_response(payload: dict | str, **kwargs: Any) -> httpx2.Response:
    """A 200 response carrying `message_json(payload, **kwargs)`."""
    return httpx2.Response(200, json=message_json(payload, **kwargs))


def error_response(
    status: int, *, headers: dict[str, str] | None = None, message: str = "fake error"
) -> httpx2.Response:
    """An Anthropic-shaped error response."""
    body = {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
    }
    return httpx2.Response(status, json=body, headers=headers or {})


def valid_scoring_payload(
    rubric: Rubric | None = None,
    *,
    events: tuple[int, ...] = (1,),
    numeric: int = 4,
    labels: dict[str, str] | None = None,
    recommendation: str = "complete",
) -> dict[str, Any]:
    """A scoring reply that validates against `scoring_model(rubric)`."""
    rubric = rubric or default_rubric()
    labels = labels or {}
    reply: dict[str, Any] = {"accomplishments": ["fixed the bug"], "failures": []}
    for cfg in rubric.dimensions:
        value: Any = numeric
        if cfg.data_type == "CATEGORICAL":
            value = labels.get(cfg.name, cfg.labels[-2])
        reply[cfg.name] = {
            "evidence": [{"event": e, "quote": f"quote {e}"} for e in events],
            "rationale": f"{cfg.name} rationale",
            "value": value,
        }
    reply["summary"] = "The agent fixed the bug and ran the tests."
    reply["recommendation"] = recommendation
    return reply


def notes_payload(events: tuple[int, ...] = (1,), progress: str = "progress") -> dict[str, Any]:
    """A `ChunkNotes` reply."""
    return {
        "progress": progress,
        "errors_and_recoveries": [],
        "tool_patterns": ["targeted reads"],
        "evidence": [{"event": e, "quote": f"quote {e}"} for e in events],
        "open_questions": [],
    }


class FakeAnthropic:
    """A queue of canned replies and a history of requests, thread-safe."""

    def __init__(self, replies: list[Reply] | None = None, *, count_tokens_value: int = 1000):
        self.replies: deque[Reply] = deque(replies or [])
        self.history: list[Recorded] = []
        self.count_tokens_value = count_tokens_value
        self._lock = threading.Lock()

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        with self._lock:
            self.history.append(Recorded(request.url.path, dict(request.headers), body))
            if request.url.path.endswith("/count_tokens"):
                count = {"input_tokens": self.count_tokens_value}
                MessageTokensCount.model_validate(count)
                return httpx2.Response(200, json=count)
            if not self.replies:  # a 4xx is fatal, so an unexpected call fails the test loudly
                return error_response(418, message="FakeAnthropic: no reply queued")
            reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        return reply(body) if callable(reply) else reply

    def client(self, **kwargs: Any) -> anthropic.Anthropic:
        """The real SDK client wired to this fake."""
        transport = httpx2.MockTransport(self.handler)
        return anthropic.Anthropic(
            api_key="test",
            base_url="https://api.test",
            http_client=httpx2.Client(transport=transport),
            max_retries=0,
            **kwargs,
        )

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the `/v1/messages` calls, in arrival order."""
        return [r.body for r in self.history if r.path.endswith("/v1/messages")]

    @property
    def count_token_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.history if r.path.endswith("/count_tokens")]
