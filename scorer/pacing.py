"""What one Messages request will cost against the account's rate limits, and what its
response said: the hand-over between the judge's sender and the backfill's limiter.

    judge.client.send     with metered(params) as request:
                              raw = client.messages.with_raw_response.create(**params)
                              request.answered(raw.headers, message.usage)
    jobs.ratelimit        the transport reads `current()` in the same thread and admits the
                          request only when the account's buckets can take it

The sender knows the request (its size, model and `max_tokens`) and reads the response
through the SDK; the limiter sits at the transport seam and knows the account. Neither
imports the other: the request travels in a contextvar, like `priority`. A client with
no pacing limiter (`score-session`) never admits it, and `answered` does nothing.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol


class Listener(Protocol):
    """The limiter that admitted a request (`jobs.ratelimit.RateLimiter`)."""

    def answered(
        self, request: MeteredRequest, headers: Mapping[str, str] | None, usage: Any
    ) -> None: ...


@dataclass
class MeteredRequest:
    """One Messages request as the rate limits see it.

    Attributes:
        model: The model (limits are per model).
        chars: Characters of prompt text (system, messages); tokens are learned per char.
        cached_chars: Characters of the blocks marked for the prompt cache (the system
            prompt): a warm cache reads them, and cache reads are not charged.
        max_tokens: What the API reserves of the output limit until the reply ends.
        listener: The limiter that admitted it (None: not paced).
        charge: What the limiter charged at admission, by limit (its bookkeeping).
        admitted_at / responded_at: When it was let through, and when its response
            headers arrived (the limiter's clock): `-remaining` is as of the latter.
    """

    model: str
    chars: int
    cached_chars: int
    max_tokens: int
    listener: Listener | None = None
    charge: dict[str, float] = field(default_factory=dict)
    admitted_at: float = 0.0
    responded_at: float | None = None
    probe: bool = False
    """Let through alone, before the limits (or the tokens per character) were known."""
    done: bool = False

    def answered(self, headers: Mapping[str, str] | None, usage: Any = None) -> None:
        """Report the response: its rate-limit headers, and `usage` (None for an error)."""
        if self.listener is not None and not self.done:
            self.done = True
            self.listener.answered(self, headers, usage)

    def finish(self) -> None:
        """The call is over: report "no answer" if nothing was (a connection error)."""
        self.answered(None, None)


def text_chars(params: Mapping[str, Any]) -> tuple[int, int]:
    """(all, cached) characters of a request's system blocks and message text."""
    total = cached = 0
    system = params.get("system") or []
    for block in [system] if isinstance(system, str) else system:
        size = len(block if isinstance(block, str) else block.get("text", ""))
        total += size
        if isinstance(block, dict) and block.get("cache_control"):
            cached += size
    for message in params.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, str):
            total += len(content)
        else:
            total += sum(len(b.get("text", "")) for b in content if isinstance(b, dict))
    return total, cached


_CURRENT: ContextVar[MeteredRequest | None] = ContextVar("metered_request", default=None)


@contextmanager
def metered(params: Mapping[str, Any]) -> Iterator[MeteredRequest]:
    """The HTTP request this thread sends inside the block is `params`' Messages call."""
    chars, cached = text_chars(params)
    request = MeteredRequest(str(params.get("model", "")), chars, cached, int(params["max_tokens"]))
    token = _CURRENT.set(request)
    try:
        yield request
    finally:
        _CURRENT.reset(token)
        request.finish()


def current() -> MeteredRequest | None:
    """The Messages request being sent in this thread, if the sender metered it."""
    return _CURRENT.get()
