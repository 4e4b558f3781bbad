"""Read back what Langfuse already holds for a session (backfill's skip check)."""

from __future__ import annotations

from langfuse.api.core.api_error import ApiError

from scorer.errors import SourceError
from scorer.judge.rubric import default_rubric
from scorer.langfuse_client import LangfuseClient


def langfuse_has_scores(
    client: LangfuseClient,
    session_id: str,
    *,
    rubric_version: str,
    model: str | None,
    judge: str | None = None,
) -> bool:
    """Whether Langfuse already holds all of this session's scores for this rubric+judge.

    Reads the v3 scores of the session (every page), keeping those whose metadata names
    the same rubric version, judge and (for the LLM judge) model. All rubric scores must
    be there: a 207 that rejected some of them leaves the session to be pushed again.
    """
    wanted = {cfg.name for cfg in default_rubric().scores}
    found: set[str] = set()
    cursor: str | None = None
    while True:
        try:
            page = client.call(
                client.api.scores.get_many,
                error=SourceError,
                what=f"reading the scores of session {session_id}",
                passthrough=(404, 405),
                session_id=session_id,
                name=",".join(sorted(wanted)),
                fields="details",
                limit=100,
                cursor=cursor,
            )
        except ApiError:
            return False  # a server without v3 scores (< v3.179): cannot tell, so score
        for score in page.data:
            meta = getattr(score, "metadata", None) or {}
            if not isinstance(meta, dict) or str(meta.get("rubric_version")) != rubric_version:
                continue
            if judge is not None and meta.get("judge") != judge:
                continue
            if model is None or meta.get("model") == model:
                found.add(score.name)
        cursor = page.meta.cursor
        if wanted <= found or not cursor or not page.data:
            return wanted <= found
