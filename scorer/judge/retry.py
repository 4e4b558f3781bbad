"""Every retry decision for judge API calls, in one place.

    429 rate limited   retry, waiting `retry-after` (capped) or exponential backoff
    529 overloaded     retry with backoff
    408, 409, 5xx      retry with backoff
    timeout/connection retry with backoff
    anything else      fatal (raised at once)

A failure that carries its own `decision` (a `claude -p` call, `judge.claude_code`, or
a plain HTTP call, `judge.http_transport`) is retried as that decision says.

The SDK is never imported here: an error can only be one of its classes when something
else has imported it already (`is_api_error`), so a process judging without the SDK
never pays for loading it.

The SDK's own retries are switched off (`max_retries=0`) so these rules are the only ones.
Tests zero the waits by setting `WAIT_MULTIPLIER = 0` or replacing `sleep`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeGuard, TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt
from tenacity.wait import wait_random_exponential

from scorer.errors import OverRateLimit, RunStopped
from scorer.retry import RetryDecision, RetryKind, parse_retry_after

if TYPE_CHECKING:
    from types import ModuleType

    from scorer.judge.sdk import anthropic

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_ATTEMPTS = 6
MAX_RETRY_AFTER = 60.0
"""Never wait longer than this for one `retry-after` (seconds)."""
WAIT_MULTIPLIER = 1.0
"""Scales every wait; tests set it to 0."""
sleep: Callable[[float], None] = time.sleep
"""Patch point for tests that want to record the waits instead of sleeping."""

_backoff = wait_random_exponential(multiplier=1, max=30)
_TRANSIENT_STATUS = {408, 409, 529}


def classify(exc: BaseException) -> RetryDecision:
    """Decide whether a failed call is worth retrying (and how long the server asks)."""
    if stopped(exc):
        return RetryDecision(RetryKind.FATAL, reason="run stopped")
    own = getattr(exc, "decision", None)
    if isinstance(own, RetryDecision):  # a transport that knows (`judge.claude_code`)
        return own
    if cause_of(exc, OverRateLimit) is not None:  # waiting would never make it fit
        return RetryDecision(RetryKind.FATAL, reason="larger than the account's rate limit")
    anthropic = _sdk()
    if anthropic is None:  # not loaded: no SDK error can exist
        return RetryDecision(RetryKind.FATAL, reason=describe(exc))
    if isinstance(exc, anthropic.RateLimitError):
        return RetryDecision(RetryKind.RATE_LIMITED, retry_after_seconds(exc), "rate limited")
    if isinstance(exc, anthropic.APIConnectionError):  # includes APITimeoutError
        return RetryDecision(RetryKind.TRANSIENT, reason=describe(exc))
    if isinstance(exc, anthropic.APIStatusError) and (
        exc.status_code in _TRANSIENT_STATUS or exc.status_code >= 500
    ):
        return RetryDecision(RetryKind.TRANSIENT, retry_after_seconds(exc), describe(exc))
    return RetryDecision(RetryKind.FATAL, reason=describe(exc))


def _sdk() -> ModuleType | None:
    """The `anthropic` module if this process has loaded it."""
    return sys.modules.get("anthropic")


def is_api_error(exc: BaseException) -> TypeGuard[anthropic.APIError]:
    """An SDK `APIError` (False without importing the SDK when it is not loaded)."""
    anthropic = _sdk()
    return anthropic is not None and isinstance(exc, anthropic.APIError)


def stopped(exc: BaseException | None) -> bool:
    """Whether a failure is a stopped run's refusal to send (`RunStopped`), however the
    SDK wrapped it (a transport error becomes an `APIConnectionError` from it)."""
    return cause_of(exc, RunStopped) is not None


E = TypeVar("E", bound=BaseException)


def cause_of(exc: BaseException | None, kind: type[E]) -> E | None:
    """The `kind` error behind `exc` (itself, or its cause or context, a few levels deep)."""
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, kind):
            return exc
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's requested wait (`parse_retry_after`, or a failure's own `decision`),
    capped at `MAX_RETRY_AFTER`."""
    own = getattr(exc, "decision", None)
    response = getattr(exc, "response", None)
    if isinstance(own, RetryDecision) and own.wait is not None:
        seconds: float | None = own.wait
    else:
        seconds = parse_retry_after(response.headers) if response is not None else None
    return None if seconds is None else min(seconds, MAX_RETRY_AFTER)


def wait_seconds(state: RetryCallState) -> float:
    """How long to wait before the next attempt (before `WAIT_MULTIPLIER`)."""
    exc = state.outcome.exception() if state.outcome else None
    server = retry_after_seconds(exc) if exc else None
    return server if server is not None else _backoff(state)


def _wait(state: RetryCallState) -> float:
    return wait_seconds(state) * WAIT_MULTIPLIER


def _log_retry(state: RetryCallState) -> None:
    exc = state.outcome.exception() if state.outcome else None
    log.warning(
        "judge call failed (%s), retry %d in %.1fs",
        describe(exc) if exc else "?",
        state.attempt_number,
        state.upcoming_sleep,
    )


def describe(exc: BaseException) -> str:
    """A short one-line description of an API failure."""
    status = getattr(exc, "status_code", None)
    name = exc.__class__.__name__
    return f"{status} {name}" if status else name


def call_with_retries(fn: Callable[[], T], *, attempts: int = MAX_ATTEMPTS) -> T:
    """Call `fn`, retrying retryable API errors; the last error is re-raised as is.

    Args:
        fn: The API call, without arguments.
        attempts: Total attempts including the first.
    """
    retrying = Retrying(
        retry=retry_if_exception(lambda e: classify(e).retry),
        wait=_wait,
        stop=stop_after_attempt(attempts),
        sleep=lambda seconds: sleep(seconds),
        before_sleep=_log_retry,
        reraise=True,
    )
    return retrying(fn)
