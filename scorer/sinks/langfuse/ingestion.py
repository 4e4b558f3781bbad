"""Scores through `POST /api/public/ingestion` (self-hosted Langfuse up to 4.16.x).

These servers refuse SDK 5's list body and stamp a one-object POST with their own clock.
Their batched ingestion endpoint takes the seven scores (eight with the goal probability)
as `score-create` events in one request and answers 207 with per-event successes and errors. The worker stores each
score with its *event's* timestamp, and the scores table keeps one row per (day of that
timestamp, name, id), so the card's stable timestamp makes every re-push land on the
same row (measured on a real 4.16.0, see docs/langfuse.md).

The event id is a hash of the event: sending the same card again (a resumed run)
rewrites the same event, and a re-judged card is a new event that the worker merges over
the old one in timestamp order (`event_time`).
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from scorer.errors import SinkError
from scorer.sinks.langfuse.single import PushTally

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient

PATH = "api/public/ingestion"


def score_event(item: CreateScoreRequest, judged: datetime) -> dict[str, Any]:
    """One `score-create` event for `item`, a score of a card judged at `judged` (pure)."""
    body = item.dict(by_alias=True, exclude_none=True)
    first = body.pop("timestamp")
    stamp = event_time(first, judged).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    blob = json.dumps({"body": body, "ts": stamp}, sort_keys=True, default=str)
    return {
        "id": hashlib.sha256(blob.encode()).hexdigest()[:32],
        "type": "score-create",
        "timestamp": stamp,
        "body": body,
    }


def post_events(
    client: LangfuseClient,
    pending: list[CreateScoreRequest],
    result: PushTally,
    judged: datetime,
) -> tuple[dict[str, str], list[str]]:
    """POST the scores as one batch of events; returns the 207's rejections (score name →
    message) and the error messages that named none of our events.

    Raises:
        SinkError: The request failed after the client's retries (an outage, a 4xx).
        CredentialsError: The keys were rejected.
    """
    events = {r.name: score_event(r, judged) for r in pending}
    what = f"writing scores for session {result.session_id}"
    answer = client.post_json(PATH, {"batch": list(events.values())}, error=SinkError, what=what)
    result.status_code = 207
    return _rejections(answer, events)


def _rejections(answer: Any, events: dict[str, dict[str, Any]]) -> tuple[dict[str, str], list[str]]:
    by_event = {event["id"]: name for name, event in events.items()}
    errors = answer.get("errors") if isinstance(answer, dict) else None
    out: dict[str, str] = {}
    loose: list[str] = []
    for error in errors or []:
        message = str(error.get("message") or "rejected")
        if error.get("status"):
            message = f"{message} (status {error['status']})"
        if error.get("error"):  # zod's issues, as a JSON string
            message = f"{message}: {' '.join(str(error['error']).split())[:300]}"
        name = by_event.get(str(error.get("id")))
        if name is None:
            loose.append(message)
        else:
            out[name] = message
    return out, loose


def event_time(first: datetime, judged: datetime) -> datetime:
    """The event timestamp of a score first pushed at `first` and judged at `judged` (pure).

    The stored row keeps the timestamp of the first event (`first`, the card's stable
    timestamp), but the worker merges a score's events in timestamp order and an equal
    timestamp does not make the newer one win (measured). So a later judgement's event
    comes a little later: by a delay that grows with how much later it was judged,
    strictly at millisecond resolution for about a year of re-scores, and never past the
    end of `first`'s UTC day, where a lost event log would start a second row.
    """
    later_ms = max((judged - first).total_seconds() * 1000, 0.0)
    day_end = first.replace(hour=23, minute=59, second=59, microsecond=999000)
    room_ms = max((day_end - first).total_seconds() * 1000, 0.0)
    delay_ms = math.floor(room_ms * later_ms / (later_ms + _HOUR_MS))
    return first + timedelta(milliseconds=delay_ms)


_HOUR_MS = 3_600_000.0
