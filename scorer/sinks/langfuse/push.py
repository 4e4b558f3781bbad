"""Write a scorecard's scores to Langfuse: the seven, and `goal_probability` when it has one.

`push_scorecard` sends the scores in one request with deterministic ids and a stable
timestamp, so re-running updates instead of duplicating. A card with a goal probability
gets it as an eighth, NUMERIC 0-1 score (the derived config `goal_probability.toml`),
its comment saying how it was made; a card without one (judged before it existed)
pushes seven, as before. The request is the one
the server takes, decided before anything is sent (`modes.score_write_mode`): a list
`POST /api/public/scores` (Cloud), a batch of `score-create` events on the ingestion
endpoint (self-hosted up to 4.16, `ingestion.send_ingestion`), or, for a server that
refused a list although its version said otherwise, one score per request
(`single.send_single`). A 207 partial answer is reported per item; only items rejected
for a transient reason are re-sent, never the whole batch.
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
from scorer.langfuse_caps import capabilities
from scorer.langfuse_client import RETRY, LangfuseClient, get_client
from scorer.models import DimensionScore, Scorecard, checklist_line
from scorer.sinks.langfuse.configs import config_ids, project_id
from scorer.sinks.langfuse.derived import derived_values, probability_comment, probability_details
from scorer.sinks.langfuse.ingestion import post_events
from scorer.sinks.langfuse.modes import WriteMode, remember_refusal, score_write_mode
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
    path: WriteMode | None = None
    """How the scores were sent: one list POST, one ingestion batch, or one POST per
    score (`sinks/langfuse/modes.py`)."""
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
        **score_metadata_base(scorecard),
    }


def score_metadata_base(scorecard: Scorecard) -> dict[str, Any]:
    """What every pushed score depends on: judge, model, versions, hashes, tokens, cost."""
    return {
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
    """The batch body: one request per rubric score, then the derived ones (pure).

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

    def request(name: str, value: float | str, kind: str, **fields: Any) -> CreateScoreRequest:
        return CreateScoreRequest(
            id=score_id(scorecard, name, target_key=target_key),
            name=name,
            value=value,
            data_type=ScoreDataType(kind),
            config_id=ids.get(name),
            timestamp=_stable_timestamp(scorecard),
            **fields,
            **subject,
        )

    requests = []
    for cfg in rubric.scores:
        score = scorecard.scores[cfg.name]
        value: float | str = score.value
        if cfg.data_type == "CATEGORICAL":
            value = score.label or next(c.label for c in cfg.categories if c.value == score.value)
        comment = _comment(scorecard, cfg.name, score.rationale)
        metadata = score_metadata(scorecard, score)
        requests.append(request(cfg.name, value, cfg.data_type, comment=comment, metadata=metadata))
    for name, p in derived_values(scorecard, rubric).items():
        comment = _redact(probability_comment(scorecard))[:COMMENT_LIMIT]
        metadata = {"normalized": p, **score_metadata_base(scorecard)}
        metadata.update(_redact(probability_details(scorecard)))
        requests.append(request(name, p, "NUMERIC", comment=comment, metadata=metadata))
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
    client: LangfuseClient | None = None,
    rubric: Rubric | None = None,
    target: Literal["session", "trace"] = "session",
    trace_id: str | None = None,
) -> PushResult:
    """Write the seven scores of `scorecard` (and its goal probability) in one batch.

    Args:
        client: The Langfuse project, or None to build one from the settings.
        rubric: The rubric the scorecard was judged with (default: bundled).
        target: "session" (session-level scores) or "trace" (the session's first trace,
            or `trace_id` when given).

    Returns:
        A `PushResult` with per-item outcomes and the deep link to the session.

    Raises:
        SinkError: Unscored scorecard, or the API failed after retries.
        CredentialsError: The keys were rejected.
    """
    client = get_client(client)
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
    _send(client, batch, result, scorecard.created_at)
    pid = project_id(client)
    result.url = session_url(client.host, pid, scorecard.session_id) if pid else None
    return result


def _send(
    client: LangfuseClient,
    batch: list[CreateScoreRequest],
    result: PushResult,
    judged: datetime,
) -> None:
    result.path = score_write_mode(client)
    if result.path == "list":
        # Until one list POST was answered, threads send theirs one at a time: a server
        # that refuses lists after all refuses one, not one per backfill worker.
        with capabilities(client).trying("score_list") as taken:
            try:
                if taken is False:
                    raise _ListRefused(batch)
                _resend_transient(batch, result, lambda items: _post_list(client, items, result))
                capabilities(client).score_list = True
                return
            except _ListRefused as refused:
                # The version said lists, the server said no: never again from this host.
                remember_refusal(client)
                result.path, batch = "single", refused.pending
    if result.path == "ingestion":
        _resend_transient(batch, result, lambda items: post_events(client, items, result, judged))
        return
    send_single(client, batch, result)


Rejections = tuple[dict[str, str], list[str]]
"""Score name → the server's message, and messages that named no item."""


def _resend_transient(
    batch: list[CreateScoreRequest],
    result: PushResult,
    send: Callable[[list[CreateScoreRequest]], Rejections],
) -> None:
    """Send, then re-send only the items rejected for a transient reason (a few times)."""
    pending = batch
    for attempt in range(TRANSIENT_RETRIES + 1):
        rejected, loose = send(pending)
        result.batches += 1
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


class _ListRefused(Exception):
    def __init__(self, pending: list[CreateScoreRequest]) -> None:
        self.pending = pending


def _post_list(
    client: LangfuseClient, pending: list[CreateScoreRequest], result: PushResult
) -> Rejections:
    what = f"writing scores for session {result.session_id}"
    try:
        raw = client.call(
            client.api.scores.with_raw_response.create,
            error=SinkError,
            what=what,
            passthrough=(400, 422),
            request=pending,
        )
    except ApiError as exc:
        if not list_body_rejected(exc):
            raise client.translate(exc, error=SinkError, what=what) from exc
        raise _ListRefused(pending) from exc
    # The SDK keeps the httpx response private; the status tells 200 (old server) from 202.
    http = getattr(raw, "_response", None)
    result.status_code = http.status_code if http is not None else None
    if isinstance(raw.data, CreateScoreBatchResults) and raw.data.rejected:
        return attribute_errors(pending, [e.message for e in raw.data.errors])
    return {}, []  # 202 Accepted, or 200 from an older server


def list_body_rejected(exc: ApiError) -> bool:
    """Whether a list POST of scores was refused as a body shape (zod's 400 "expected
    object, received array" on self-hosted up to 4.16); a 207 carries per-item rejections."""
    return exc.status_code in (400, 422)


def _backoff(attempt: int, sleep: Callable[[float], None] | None = None) -> None:
    (sleep or RETRY.sleep)(min(RETRY.base_wait * 2**attempt, RETRY.max_wait))
