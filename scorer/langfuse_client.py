"""The Langfuse API client: construction from env vars and the one retry policy.

Every Langfuse call of the scorer goes through `LangfuseClient.call`, so the retry
decision lives in one place (`decide`): 429 waits for `Retry-After`, 5xx and transport
timeouts back off exponentially, everything else fails at once. The SDK's own retry loop
is switched off per request (`max_retries=0`) so the two never stack.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
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


def backoff(attempt: int) -> float:
    """The exponential wait before retry number `attempt` (1-based), capped."""
    return min(RETRY.base_wait * 2 ** (attempt - 1), RETRY.max_wait)


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    decision = decide(exc) if exc else RetryDecision(RetryKind.TRANSIENT)
    if decision.wait is not None:
        return min(decision.wait, RETRY.max_wait)
    return backoff(state.attempt_number)


def _short_body(body: Any) -> str:
    if isinstance(body, dict):
        body = body.get("message") or body.get("error") or body
    return " ".join(str(body).split())[:200]


@dataclass
class LangfuseClient:
    """The SDK's `LangfuseAPI` plus what the scorer needs to know about where it points.

    Build one with `make_client` (from the settings) or `LangfuseClient.wrap` (an SDK
    object you configured yourself, e.g. `Langfuse().api`); everything that talks to
    Langfuse takes this type.
    """

    api: LangfuseAPI
    host: str
    public_key: str | None = None

    @classmethod
    def wrap(cls, api: LangfuseAPI) -> LangfuseClient:
        """The client around an SDK `LangfuseAPI`: its base URL and public key are read
        back from the SDK's own configuration (for the caches and the capability probe)."""
        wrapper = api._client_wrapper
        key = getattr(wrapper, "_x_langfuse_public_key", None) or getattr(
            wrapper, "_username", None
        )
        host = wrapper.get_base_url().rstrip("/")
        return cls(api=api, host=host, public_key=key if isinstance(key, str) else None)

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
        passthrough: Collection[int] = (),
        **kwargs: Any,
    ) -> T:
        """Run one SDK call with the retry policy and typed errors.

        Args:
            fn: A bound SDK method, e.g. `client.api.observations.get_many`.
            error: The error type to raise for a failure that is not about credentials.
            what: A few words for the message ("reading session X").
            passthrough: HTTP statuses the caller handles itself: their `ApiError` is
                raised at once, neither retried nor translated (e.g. 413 → smaller page).

        Raises:
            CredentialsError: On 401/403, naming the env vars to check.
            ScorerError: `error` after the retries are used up or on a fatal status.
            ApiError: For a status in `passthrough`.
        """
        kwargs.setdefault("request_options", {"max_retries": 0})

        def retry(exc: BaseException) -> bool:
            if isinstance(exc, ApiError) and exc.status_code in passthrough:
                return False
            return decide(exc).retry

        retrying = Retrying(
            stop=stop_after_attempt(RETRY.attempts),
            wait=_wait,
            retry=retry_if_exception(retry),
            sleep=lambda seconds: RETRY.sleep(seconds),
            reraise=True,
        )
        try:
            return retrying(fn, *args, **kwargs)
        except ApiError as exc:
            if exc.status_code in passthrough:
                raise
            raise self.translate(exc, error=error, what=what) from exc
        except httpx.HTTPError as exc:
            msg = f"Langfuse {what} failed at {self.host}: {type(exc).__name__}: {exc}"
            raise error(msg) from exc

    def get_json(self, path: str, *, error: type[ScorerError], what: str, **params: Any) -> Any:
        """GET an endpoint the SDK has no method for (the legacy reads of older servers)
        through the SDK's own HTTP client (auth, base URL, timeouts), with `call`'s policy.

        Raises:
            CredentialsError, ScorerError: As `call`.
        """
        return self.call(self._raw, "GET", path, error=error, what=what, params=params)

    def post_json(self, path: str, body: Any, *, error: type[ScorerError], what: str) -> Any:
        """POST a JSON body through the SDK's HTTP client, with `call`'s retry policy.

        Raises:
            CredentialsError, ScorerError: As `call`.
        """
        from langfuse.api.core.jsonable_encoder import jsonable_encoder

        encoded = jsonable_encoder(body)
        return self.call(self._raw, "POST", path, error=error, what=what, json_body=encoded)

    def _raw(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json_body: Any = None,
        request_options: Any = None,
    ) -> Any:
        http = self.api._client_wrapper.httpx_client
        query = {k: v for k, v in (params or {}).items() if v is not None}
        response = http.request(
            path, method=method, params=query, json=json_body, request_options=request_options
        )
        try:
            body = response.json()
        except ValueError:
            body = response.text
        if response.status_code >= 300:
            raise ApiError(
                status_code=response.status_code, headers=dict(response.headers), body=body
            )
        return body

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


def get_client(client: LangfuseClient | None = None) -> LangfuseClient:
    """`client`, or the one the settings describe (`make_client`) when it is None."""
    return client if client is not None else make_client()
