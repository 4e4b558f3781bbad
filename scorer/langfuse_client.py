"""The Langfuse API client: construction from env vars and the one retry policy.

Every Langfuse call of the scorer goes through `LangfuseClient.call`, so the retry
decision lives in one place (`decide`): 429 waits for `Retry-After`, 5xx and transport
timeouts back off exponentially, everything else fails at once. The SDK's own retry loop
is switched off per request (`max_retries=0`) so the two never stack.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from langfuse.api import LangfuseAPI
from langfuse.api.core.api_error import ApiError
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from scorer.errors import CredentialsError, ScorerError
from scorer.retry import RetryDecision, RetryKind, parse_retry_after
from scorer.settings import Settings, get_settings

DEFAULT_HOST = "https://cloud.langfuse.com"
CREDENTIAL_VARS = "LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY and LANGFUSE_BASE_URL"

T = TypeVar("T")


@dataclass
class RetryPolicy:
    """How often and how long to retry; tests replace `sleep` to zero the waits."""

    attempts: int = 5
    base_wait: float = 1.0
    max_wait: float = 60.0
    sleep: Callable[[float], None] = field(default=time.sleep)


RETRY = RetryPolicy()


def decide(exc: BaseException) -> RetryDecision:
    """Classify a failure: rate-limited (with its wait), transient, or fatal."""
    if isinstance(exc, ApiError):
        status = exc.status_code or 0
        if status == 429:
            wait = parse_retry_after(exc.headers)
            return RetryDecision(RetryKind.RATE_LIMITED, wait, "rate limited (429)")
        if status >= 500 or status == 408:
            return RetryDecision(RetryKind.TRANSIENT, reason=f"server error ({status})")
        return RetryDecision(RetryKind.FATAL, reason=f"HTTP {status}")
    if isinstance(exc, httpx.TimeoutException | httpx.TransportError):
        return RetryDecision(RetryKind.TRANSIENT, reason=f"transport error ({type(exc).__name__})")
    return RetryDecision(RetryKind.FATAL, reason=type(exc).__name__)


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    decision = decide(exc) if exc else RetryDecision(RetryKind.TRANSIENT)
    if decision.wait is not None:
        return min(decision.wait, RETRY.max_wait)
    return min(RETRY.base_wait * 2 ** (state.attempt_number - 1), RETRY.max_wait)


def _short_body(body: Any) -> str:
    if isinstance(body, dict):
        body = body.get("message") or body.get("error") or body
    return " ".join(str(body).split())[:200]


@dataclass
class LangfuseClient:
    """The SDK's `LangfuseAPI` plus what the scorer needs to know about where it points."""

    api: Any
    host: str
    public_key: str | None = None

    @property
    def cache_key(self) -> str:
        """Identifies one Langfuse project for local caches (host + public key)."""
        return f"{self.host}|{self.public_key or '-'}"

    def call(
        self,
        fn: Callable[..., T],
        *args: Any,
        error: type[ScorerError],
        what: str,
        **kwargs: Any,
    ) -> T:
        """Run one SDK call with the retry policy and typed errors.

        Args:
            fn: A bound SDK method, e.g. `client.api.observations.get_many`.
            error: The error type to raise for a failure that is not about credentials.
            what: A few words for the message ("reading session X").

        Raises:
            CredentialsError: On 401/403, naming the env vars to check.
            ScorerError: `error` after the retries are used up or on a fatal status.
        """
        kwargs.setdefault("request_options", {"max_retries": 0})
        retrying = Retrying(
            stop=stop_after_attempt(RETRY.attempts),
            wait=_wait,
            retry=retry_if_exception(lambda e: decide(e).retry),
            sleep=lambda seconds: RETRY.sleep(seconds),
            reraise=True,
        )
        try:
            return retrying(fn, *args, **kwargs)
        except ApiError as exc:
            raise self.translate(exc, error=error, what=what) from exc
        except httpx.HTTPError as exc:
            msg = f"Langfuse {what} failed at {self.host}: {type(exc).__name__}: {exc}"
            raise error(msg) from exc

    def translate(self, exc: ApiError, *, error: type[ScorerError], what: str) -> ScorerError:
        """Turn an SDK `ApiError` into our typed error (401/403 → CredentialsError)."""
        status = exc.status_code
        if status in (401, 403):
            return CredentialsError(
                f"Langfuse rejected the credentials (HTTP {status}) at {self.host}: "
                f"check {CREDENTIAL_VARS}"
            )
        return error(
            f"Langfuse {what} failed at {self.host}: HTTP {status}: {_short_body(exc.body)}"
        )


def make_client(
    settings: Settings | None = None, *, httpx_client: httpx.Client | None = None
) -> LangfuseClient:
    """Build the client from LANGFUSE_PUBLIC_KEY / LANGFUSE_SECRET_KEY / LANGFUSE_BASE_URL.

    Raises:
        CredentialsError: When the keys are not set.
    """
    settings = settings or get_settings()
    if not settings.langfuse_configured:
        raise CredentialsError(
            "Langfuse is not configured: set LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY "
            "(and LANGFUSE_BASE_URL or LANGFUSE_HOST for a self-hosted server)"
        )
    host = (settings.langfuse_base_url or DEFAULT_HOST).rstrip("/")
    api = LangfuseAPI(
        base_url=host,
        username=settings.langfuse_public_key,
        password=settings.langfuse_secret_key,
        x_langfuse_public_key=settings.langfuse_public_key,
        x_langfuse_sdk_name="session-scorer",
        timeout=30,
        httpx_client=httpx_client,
    )
    return LangfuseClient(api=api, host=host, public_key=settings.langfuse_public_key)


def get_client(api: Any = None) -> LangfuseClient:
    """Accept a `LangfuseClient`, a `LangfuseAPI`, a `Langfuse()` object or None (env)."""
    if isinstance(api, LangfuseClient):
        return api
    if api is None:
        return make_client()
    if not isinstance(api, LangfuseAPI) and isinstance(getattr(api, "api", None), LangfuseAPI):
        api = api.api  # a high-level `Langfuse()` instance
    wrapper = getattr(api, "_client_wrapper", None)
    host = wrapper.get_base_url().rstrip("/") if wrapper else DEFAULT_HOST
    public_key = None
    if wrapper is not None:
        public_key = getattr(wrapper, "_x_langfuse_public_key", None)
        public_key = public_key or getattr(wrapper, "_username", None)
    if not isinstance(public_key, str):
        public_key = None
    return LangfuseClient(api=api, host=host, public_key=public_key)
