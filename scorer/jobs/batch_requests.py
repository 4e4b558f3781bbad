"""Message Batches request bookkeeping: stable custom ids, size-limited groups, poll pace."""

from __future__ import annotations

import hashlib
import json
from typing import Any

MAX_BATCH_REQUESTS = 10_000
"""Requests per batch (the API allows 100,000; smaller batches finish sooner)."""


MAX_BATCH_BYTES = 200 * 1024 * 1024
"""Serialized request bytes per batch (the API allows 256 MB)."""


_KINDS = {"score": "s", "notes": "n", "final": "f"}


def custom_id(session_id: str, kind: str, index: int | None = None) -> str:
    """A batch custom_id: ≤ 64 chars of `[a-zA-Z0-9_-]`, stable for a session and request.

    Session ids can be long or contain any character, so they are hashed (24 hex).
    """
    digest = session_hash(session_id)
    return f"{_KINDS[kind]}-{digest}" + (f"-{index}" if index is not None else "")


def session_hash(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()[:24]


def group_requests(
    items: list[tuple[str, str, dict[str, Any]]],
) -> list[list[tuple[str, str, dict[str, Any]]]]:
    """Split requests into batches under the count and size limits."""

    groups: list[list[tuple[str, str, dict[str, Any]]]] = []
    size = 0
    for item in items:
        n = len(json.dumps(item[2], default=str))
        if not groups or len(groups[-1]) >= MAX_BATCH_REQUESTS or size + n > MAX_BATCH_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(item)
        size += n
    return groups


def result_reason(result: Any) -> str:
    """Why a batch request has no usable message (errored with its error, expired...)."""
    if result.type == "errored":
        err = getattr(getattr(result, "error", None), "error", None)
        detail = f"{getattr(err, 'type', 'error')}: {getattr(err, 'message', '')}".strip(": ")
        return f"errored ({detail})"
    return result.type  # expired / canceled / missing


def missing_result(cid: str) -> Any:
    """A stand-in result for a request the ended batch did not return."""

    class _Result:
        type = "missing from the batch results"

    class _Item:
        custom_id = cid
        result = _Result()

    return _Item()
