"""Scores for servers that take one score object per POST (self-hosted Langfuse v3).

Older servers refuse SDK 5's list body with 400 and ignore `timestamp`: they stamp each
score with the time it arrived, and their scores table keeps one row per (day of that
timestamp, name, id). Re-sending the same deterministic id on the same UTC day replaces
the row; on a later day it would add a second row with the same id. So before sending,
`send_single` reads back which of the card's score ids the server already holds
(`GET /api/public/v3/scores?id=...`) and skips those with the same value: an unchanged
re-run sends nothing. A changed value (a `--rescore` with another result) is sent and,
on a later day than the first push, leaves the old row beside the new one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from langfuse.api.core.api_error import ApiError
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from scorer.errors import SinkError

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient


class PushTally(Protocol):
    """What a one-score-per-request push records (`push.PushResult` has these fields)."""

    session_id: str
    status_code: int | None
    accepted: list[str]
    rejected: dict[str, str]
    unchanged: list[str]
    batches: int


def send_single(client: LangfuseClient, batch: list[CreateScoreRequest], result: PushTally) -> None:
    """POST each score alone; a 4xx for one score rejects that score only."""
    have = existing_values(client, [r.id for r in batch if r.id])
    for item in batch:
        if item.id in have and _same(have[item.id], item.value):
            result.accepted.append(item.name)
            result.unchanged.append(item.name)
            continue
        body = item.dict(by_alias=True, exclude_none=True)
        body.pop("timestamp", None)  # ignored by these servers; never rely on it
        try:
            client.post_json(
                "api/public/scores",
                body,
                error=SinkError,
                what=f"writing score {item.name} of session {result.session_id}",
            )
        except SinkError as exc:
            status = _status(exc)
            if status is None or status >= 500 or status in (401, 403, 429):
                raise
            result.rejected[item.name] = str(exc)
            continue
        result.batches += 1
        result.status_code = 200
        result.accepted.append(item.name)


def existing_values(client: LangfuseClient, ids: list[str]) -> dict[str, Any]:
    """id → value of the scores the server already holds (empty when it cannot say)."""
    if not ids:
        return {}
    try:
        page = client.call(
            client.api.scores.get_many,
            error=SinkError,
            what="reading back existing scores",
            passthrough=(404, 405),
            id=",".join(ids),
            limit=100,
        )
    except ApiError:
        return {}  # a server without v3 scores (< v3.179): send everything
    return {s.id: s.value for s in page.data}


def _same(have: Any, want: Any) -> bool:
    if isinstance(want, int | float) and isinstance(have, int | float):
        return abs(float(have) - float(want)) < 1e-9
    return str(have) == str(want)


def _status(exc: SinkError) -> int | None:
    cause = exc.__cause__
    return cause.status_code if isinstance(cause, ApiError) else None
