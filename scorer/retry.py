"""One retry vocabulary for every API the scorer calls (Anthropic, Langfuse).

`RetryDecision` is what a client's classifier returns for a failed call (rate limited
with the server's wait, transient, or fatal), and `parse_retry_after` is the only reader
of `retry-after-ms` / `retry-after` headers. The per-API rules stay with their clients
(`judge.retry.classify`, `langfuse_client.decide`); the shared bucket pause
(`jobs.ratelimit`) uses the same parser.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from enum import StrEnum
from typing import Any


class RetryKind(StrEnum):
    """Why a failed call is (or is not) retried."""

    RATE_LIMITED = "rate_limited"
    TRANSIENT = "transient"
    FATAL = "fatal"


@dataclass(frozen=True)
class RetryDecision:
    """What to do about one failed call."""

    kind: RetryKind
    wait: float | None = None
    """Seconds the server asked us to wait (`retry-after`), else None: back off."""
    reason: str = ""

    @property
    def retry(self) -> bool:
        return self.kind is not RetryKind.FATAL


def parse_retry_after(headers: Any) -> float | None:
    """Seconds from `retry-after-ms`, or `retry-after` (seconds or an HTTP date).

    Args:
        headers: httpx/httpx2 headers, or a plain dict in any letter case, or None.

    Returns:
        The wait (never negative), or None when no usable header is present. Callers cap it.
    """
    if not headers:
        return None
    if isinstance(headers, dict):
        headers = {str(k).lower(): v for k, v in headers.items()}
    raw_ms = headers.get("retry-after-ms")
    if raw_ms:
        try:
            return max(0.0, float(raw_ms) / 1000)
        except ValueError:
            pass
    raw = headers.get("retry-after")
    if not raw:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
