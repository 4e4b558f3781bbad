"""What a Langfuse server can do, detected once per host and cached for the process.

    capability        Cloud / self-hosted v4        self-hosted v3
    observations_v2   GET /api/public/v2/observations  404 "only available in a Langfuse
                                                    v4 write mode" → legacy reads
                                                    (sessions → traces → observations)
    score_batches     POST /api/public/scores takes    400 on a list body; one score
                      a list (202 / 207)              object per request (200 {id}),
                                                    `timestamp` ignored

Detection is lazy, so Cloud pays no probe request: the first v2 read or list POST a
server refuses flips its flag, and every later call in the process goes straight to the
fallback. `None` means "not seen yet".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from langfuse.api.core.api_error import ApiError


@dataclass
class Capabilities:
    """One server's answers so far (None: not asked yet)."""

    host: str
    observations_v2: bool | None = None
    """GET /api/public/v2/observations exists (Cloud, self-hosted v4)."""
    score_batches: bool | None = None
    """POST /api/public/scores takes a list body (SDK 5); else one object per request."""


_CACHE: dict[str, Capabilities] = {}
_LOCK = threading.Lock()


def capabilities(client: Any) -> Capabilities:
    """The cached capabilities of `client.host` (created on first use)."""
    host = str(getattr(client, "host", client)).rstrip("/")
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


def list_body_rejected(exc: ApiError) -> bool:
    """Whether a list POST of scores was refused as a body shape (older servers' zod
    validation: 400 "Invalid request data"); 207 carries per-item rejections instead."""
    return exc.status_code in (400, 422)
