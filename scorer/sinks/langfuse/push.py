"""Write a scorecard's seven scores to Langfuse.

`push_scorecard` posts the seven scores in one `POST /api/public/scores` batch with
deterministic ids and a stable timestamp, so re-running updates instead of duplicating.
A 207 partial answer is reported per item; only items rejected for a transient reason
are re-sent, never the whole batch. A server that refuses the list body (self-hosted v3:
400) gets one score per request with the same ids (`single.send_single`); that is
detected once per host (`langfuse_caps`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

from langfuse.api.commons.types.score_data_type import ScoreDataType
from langfuse.api.core.api_error import ApiError
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from langfuse.api.scores.types.create_score_request import CreateScoreRequest
from pydantic import BaseModel, Field

from scorer.errors import SinkError
from scorer.judge.rubric import Rubric, default_rubric
from scorer.langfuse_caps import capabilities, list_body_rejected
from scorer.langfuse_client import RETRY, LangfuseClient, get_client
from scorer.models import DimensionScore, Scorecard, checklist_line
from scorer.sinks.langfuse.configs import config_ids, project_id
from scorer.sinks.langfuse.single import send_single
from scorer.sources.langfuse import fetch_observations, session_url

COMMENT_LIMIT = 2000


QUOTE_LIMIT = 200


TRANSIENT_RETRIES = 2


_TRANSIENT = re.compile(
    r"timeout|timed out|temporar|unavailable|rate.?limit|too many|try again|overloaded"
    r"|internal (server )?error|\b(429|500|502|503|504)\b",
    re.IGNORECASE,
)


class PushResult(BaseModel):
    """The outcome of pushing one scorecard."""

    session_id: str
    target: Literal["session", "trace"]
    trace_id: str | None = None
    status_code: int | None = None
    score_ids: dict[str, str] = Field(default_factory=dict)
    accepted: list[str] = Field(default_factory=list)
    rejected: dict[str, str] = Field(default_factory=dict)
    """Score name → the server's message, for items that stayed rejected."""
    unattributed_errors: list[str] = Field(default_factory=list)
    """207 error messages that named no item of the batch."""
    retried: list[str] = Field(default_factory=list)
    unchanged: list[str] = Field(default_factory=list)
    """One-object servers: scores already stored with the same value (not re-sent)."""
    single: bool = False
    """Sent one score per request (a server that refuses list bodies)."""
    batches: int = 0
    url: str | None = None

    @property
    def ok(self) -> bool:
        return not self.rejected and not self.unattributed_errors


def score_id(scorecard: Scorecard, name: str, *, target_key: str = "") -> str:
    """Deterministic score id: the same judge on the same session updates, not duplicates."""
    seed = "|".join(
        [
            scorecard.session_id,
            name,
            scorecard.rubric_version,
            scorecard.judge,
            scorecard.model or "-",
            target_key,
        ]
    )
    return hashlib.sha256(seed.encode()).hexdigest()[:32]


def _redact(value: Any) -> Any:
    try:
        from scorer.prepare.redact import redact_value
    except ImportError:  # the redactor is optional for this module
        return value
    result = redact_value(value)
    # redact_value returns (value, counts); accept a bare value too.
    return result[0] if isinstance(result, tuple) and len(result) == 2 else result


def _stable_timestamp(scorecard: Scorecard) -> datetime:
    """The first time this session was scored (kept by the store across re-scores), so a
    re-run sends the same id AND timestamp, which is what makes Langfuse update in place."""
    first = scorecard.meta.get("first_scored_at")
    ts = datetime.fromisoformat(first) if isinstance(first, str) else scorecard.created_at
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)


def score_metadata(scorecard: Scorecard, score: DimensionScore) -> dict[str, Any]:
    """Evidence refs and everything the score depends on (versions, hashes, cost)."""
    evidence = [
        {"event": e.event, "quote": e.quote[:QUOTE_LIMIT], "valid": e.valid} for e in score.evidence
    ]
    return {
        "evidence": _redact(evidence),
        "normalized": score.normalized,
        "judge": scorecard.judge,
        "model": scorecard.model,
        "answered_by": scorecard.answered_by,
        "effort": scorecard.effort,
        "prompt_version": scorecard.prompt_version,
        "prompt_hash": scorecard.prompt_hash,
        "rubric_version": scorecard.rubric_version,
        "rubric_hash": scorecard.rubric_hash,
        "n_chunks": scorecard.n_chunks,
        "tokens": scorecard.usage.model_dump(),
        "cost_usd": scorecard.cost_usd,
        "package_version": scorecard.package_version,
        "source": scorecard.source,
        "recommendation": scorecard.recommendation,
    }


def build_score_requests(
    scorecard: Scorecard,
    rubric: Rubric,
    ids: dict[str, str],
    *,
    trace_id: str | None = None,
) -> list[CreateScoreRequest]:
    """The batch body: one request per rubric score (pure).

    Raises:
        SinkError: When the scorecard is unscored or misses a score.
    """
    if scorecard.status != "scored":
        raise SinkError(
            f"refusing to push unscored scorecard for session {scorecard.session_id}: "
            f"{scorecard.unscored_reason or 'no reason given'}"
        )
    missing = [s.name for s in rubric.scores if s.name not in scorecard.scores]
    if missing:
        raise SinkError(f"scorecard for {scorecard.session_id} is missing scores {missing}")
    subject: dict[str, Any] = (
        {"trace_id": trace_id} if trace_id else {"session_id": scorecard.session_id}
    )
    target_key = f"trace:{trace_id}" if trace_id else ""
    requests = []
    for cfg in rubric.scores:
        score = scorecard.scores[cfg.name]
        value: float | str = score.value
        if cfg.data_type == "CATEGORICAL":
            value = score.label or next(c.label for c in cfg.categories if c.value == score.value)
        comment = _comment(scorecard, cfg.name, score.rationale)
        requests.append(
            CreateScoreRequest(
                id=score_id(scorecard, cfg.name, target_key=target_key),
                name=cfg.name,
                value=value,
                data_type=ScoreDataType(cfg.data_type),
                config_id=ids.get(cfg.name),
                comment=comment,
                metadata=score_metadata(scorecard, score),
                timestamp=_stable_timestamp(scorecard),
                **subject,
            )
        )
    return requests


def _comment(card: Scorecard, name: str, rationale: str) -> str | None:
    """The score's rationale; goal_achievement leads with the short requirement checklist."""
    text = rationale or ""
    if name == "goal_achievement" and card.requirements:
        text = checklist_line(card.requirements, limit=COMMENT_LIMIT // 2) + "\n" + text
    return _redact(text)[:COMMENT_LIMIT] if text.strip() else None


def attribute_errors(
    batch: list[CreateScoreRequest], errors: list[str]
) -> tuple[dict[str, str], list[str]]:
    """Match 207 error messages to items by id (else by name); the rest are unattributed."""
    by_item: dict[str, str] = {}
    loose: list[str] = []
    for message in errors:
        item = next((r for r in batch if r.id and r.id in message), None)
        item = item or next(
            (r for r in batch if re.search(rf"\b{re.escape(r.name)}\b", message)), None
        )
        if item is None or item.name in by_item:
            loose.append(message)
        else:
            by_item[item.name] = message
    return by_item, loose


def is_transient(message: str) -> bool:
    """Whether a per-item rejection looks temporary (worth re-sending that item)."""
    return bool(_TRANSIENT.search(message))


def first_trace_id(client: LangfuseClient, session_id: str) -> str:
    """The session's first trace: its earliest root observation."""
    roots = fetch_observations(
        client, session_id=session_id, is_root_observation=True, fields="core,basic"
    )
    if not roots:
        raise SinkError(f"no traces for session {session_id} in Langfuse at {client.host}")
    return min(roots, key=lambda o: o.start_time).trace_id or roots[0].id


def push_scorecard(
    scorecard: Scorecard,
    *,
    api: Any = None,
    rubric: Rubric | None = None,
    target: Literal["session", "trace"] = "session",
    trace_id: str | None = None,
) -> PushResult:
    """Write the seven scores of `scorecard` to Langfuse in one batch.

    Args:
        api: A `LangfuseClient`/`LangfuseAPI`, or None to build one from env vars.
        rubric: The rubric the scorecard was judged with (default: bundled).
        target: "session" (session-level scores) or "trace" (the session's first trace,
            or `trace_id` when given).

    Returns:
        A `PushResult` with per-item outcomes and the deep link to the session.

    Raises:
        SinkError: Unscored scorecard, or the API failed after retries.
        CredentialsError: The keys were rejected.
    """
    client = get_client(api)
    rubric = rubric or default_rubric()
    if scorecard.status != "scored":
        build_score_requests(scorecard, rubric, {})  # raises the refusal
    ids = config_ids(client, rubric)
    if target == "trace" and trace_id is None:
        trace_id = first_trace_id(client, scorecard.session_id)
    batch = build_score_requests(
        scorecard, rubric, ids, trace_id=trace_id if target == "trace" else None
    )
    result = PushResult(
        session_id=scorecard.session_id,
        target=target,
        trace_id=trace_id,
        score_ids={r.name: r.id or "" for r in batch},
    )
    _send(client, batch, result)
    pid = project_id(client)
    result.url = session_url(client.host, pid, scorecard.session_id) if pid else None
    return result


def _send(client: LangfuseClient, batch: list[CreateScoreRequest], result: PushResult) -> None:
    caps = capabilities(client)
    if caps.score_batches is False:
        result.single = True
        send_single(client, batch, result)
        return
    pending = batch
    what = f"writing scores for session {result.session_id}"
    for attempt in range(TRANSIENT_RETRIES + 1):
        try:
            raw = client.call(
                client.api.scores.with_raw_response.create,
                error=SinkError,
                what=what,
                passthrough=(400, 422) if caps.score_batches is None else (),
                request=pending,
            )
        except ApiError as exc:
            if not list_body_rejected(exc):
                raise client.translate(exc, error=SinkError, what=what) from exc
            # An older server: one score object per request (detected once per host).
            caps.score_batches = False
            result.single = True
            send_single(client, pending, result)
            return
        caps.score_batches = True
        result.batches += 1
        # The SDK keeps the httpx response private; the status tells 200 (old server) from 202.
        http = getattr(raw, "_response", None)
        result.status_code = http.status_code if http is not None else None
        rejected, loose = _rejections(raw.data, pending)
        result.accepted.extend(r.name for r in pending if r.name not in rejected)
        result.unattributed_errors.extend(loose)
        retry = [r for r in pending if r.name in rejected and is_transient(rejected[r.name])]
        for r in pending:
            if r.name in rejected and r not in retry:
                result.rejected[r.name] = rejected[r.name]
        if not retry:
            return
        if attempt == TRANSIENT_RETRIES:
            result.rejected.update({r.name: rejected[r.name] for r in retry})
            return
        result.retried.extend(r.name for r in retry)
        _backoff(attempt)
        pending = retry


def _rejections(data: Any, pending: list[CreateScoreRequest]) -> tuple[dict[str, str], list[str]]:
    if isinstance(data, CreateScoreBatchResults) and data.rejected:
        return attribute_errors(pending, [e.message for e in data.errors])
    return {}, []  # 202 Accepted, or 200 from an older server


def _backoff(attempt: int, sleep: Callable[[float], None] | None = None) -> None:
    (sleep or RETRY.sleep)(min(RETRY.base_wait * 2**attempt, RETRY.max_wait))
