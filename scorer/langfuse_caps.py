"""What a Langfuse server can do, detected once per host and cached for the process.

    capability        Cloud / self-hosted v4        self-hosted v3
    observations_v2   GET /api/public/v2/observations  404 "only available in a Langfuse
                                                    v4 write mode" → legacy reads
                                                    (sessions → traces → observations)

Read detection is lazy, so Cloud pays no probe request: the first v2 read a server refuses
flips its flag, and every later call in the process goes straight to the fallback.
`None` means "not seen yet". While a capability is undecided, `Capabilities.trying`
lets one thread at a time try it: the backfill's workers start together, and without it
each of them would send its own request to an endpoint the server does not have.

How scores are written is decided before the first one is sent, from the server's
version (`sinks/langfuse/modes.py`), so no score request is refused for its shape.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from langfuse.api.core.api_error import ApiError

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient

Capability = Literal["observations_v2", "score_write", "score_list"]


@dataclass
class Capabilities:
    """One server's answers so far (None: not asked yet)."""

    host: str
    observations_v2: bool | None = None
    """GET /api/public/v2/observations exists (Cloud, self-hosted v4)."""
    score_write: str | None = None
    """How scores are sent: "list", "ingestion" or "single" (`sinks/langfuse/modes.py`)."""
    score_list: bool | None = None
    """A list POST of scores was taken (True) or refused (False) here; None: not sent yet."""
    version: str | None = None
    """What `GET /api/public/health` said (None: not asked, or it did not say)."""
    _deciding: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextmanager
    def trying(self, name: Capability) -> Iterator[Any]:
        """Yield what is known of `name`; while it is unknown, hold the host's probe
        lock so that only this thread's request finds out (the others wait for it).

        The caller sets the attribute once the server answered; if its request failed
        for another reason, the next waiter tries in turn.
        """
        known = getattr(self, name)
        if known is not None:
            yield known
            return
        with self._deciding:
            yield getattr(self, name)


_CACHE: dict[str, Capabilities] = {}
_LOCK = threading.Lock()


def capabilities(client: LangfuseClient) -> Capabilities:
    """The cached capabilities of `client.host` (created on first use)."""
    host = client.host.rstrip("/")
    with _LOCK:
        return _CACHE.setdefault(host, Capabilities(host))


def reset() -> None:
    """Forget every host (tests; a long-lived process after a server upgrade)."""
    with _LOCK:
        _CACHE.clear()


def v2_missing(exc: ApiError) -> bool:
    """Whether an error of the v2 observations read says the endpoint is not there.

    Self-hosted v3 answers 404 with "only available in a Langfuse v4 write mode";
    servers older than the v2 API (< v3.132) answer 404 from the router. A missing
    session is an empty list on v4, never a 404.
    """
    return exc.status_code in (404, 405)
