"""Read observations from any Langfuse: v2 with size-aware pages, or the legacy reads.

v2 (Cloud, self-hosted v4): `GET /api/public/v2/observations`, cursor paging. Langfuse
Cloud caps a response at 5 MB and the Claude Code plugin keeps up to 20,000 characters
per input/output field, so 1,000 full observations can be far over. The first page asks
for `FIRST_PAGE` observations; its bytes per observation size every later page to stay
under `TARGET_BYTES` (at most 1,000). A 413 halves the page and asks again at once; a
5xx halves it after the usual backoff (it may be the size, it may be load); after
`RETRY.attempts` failures in a row the read fails. Small observations read in at most
⌈observations/1000⌉ + 1 requests.

Legacy (self-hosted v3, where v2 answers 404): `GET /api/public/sessions/{id}` for the
session's traces, then `GET /api/public/observations?traceId=` (page-based) per trace;
each legacy observation is mapped to the SDK's `ObservationV2` (input/output as the raw
strings v2 sends), so everything downstream is the same.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from langfuse.api.commons.types.observation_v2 import ObservationV2
from langfuse.api.core.api_error import ApiError
from langfuse.api.core.pydantic_utilities import parse_obj_as

from scorer.errors import SourceError
from scorer.langfuse_caps import capabilities, v2_missing
from scorer.langfuse_client import RETRY, LangfuseClient, backoff

FIELDS = "core,basic,io,metadata,model,usage,metrics,trace_context"
# Metadata values over 200 chars come back truncated unless listed here.
EXPAND_METADATA = ",".join(
    [
        "tool_id",
        "tool_name",
        "cwd",
        "git_branch",
        "description",
        "agent_type",
        "transcript_path",
        "subagent_description",
        "claude.tool_id",
        "claude.tool_name",
        "claude.cwd",
        "claude.git_branch",
    ]
)
PAGE_SIZE = 1000
"""The API's maximum page."""
FIRST_PAGE = 50
"""The probe page: small enough to fit 5 MB even at ~100 KB per observation."""
TARGET_BYTES = 4_000_000
"""Aim below Langfuse Cloud's 5 MB response limit, with room for a fatter page."""
MIN_PAGE = 5
SHRINK_ON = (413, 500, 502, 503, 504)
LEGACY_PAGE = 100
LEGACY_OBSERVATION_KEYS = {
    "id", "traceId", "type", "name", "startTime", "endTime", "completionStartTime",
    "model", "modelParameters", "input", "output", "metadata", "level", "statusMessage",
    "parentObservationId", "version", "environment", "usageDetails", "costDetails",
    "promptId", "promptName", "promptVersion", "latency", "timeToFirstToken",
}  # fmt: skip


@dataclass
class ReadStats:
    """What one read cost (benchmarks and tests look at it)."""

    requests: int = 0
    halvings: int = 0
    largest_response: int = 0
    legacy: bool = False


def next_limit(bytes_per_obs: float, cap: int = PAGE_SIZE) -> int:
    """Observations per page so a response stays under `TARGET_BYTES` (pure)."""
    fit = int(TARGET_BYTES // max(bytes_per_obs, 1.0))
    return max(MIN_PAGE, min(cap, fit))


def fetch_observations(
    client: LangfuseClient,
    *,
    session_id: str | None = None,
    trace_id: str | None = None,
    is_root_observation: bool | None = None,
    fields: str = FIELDS,
    page_size: int = PAGE_SIZE,
    stats: ReadStats | None = None,
) -> list[ObservationV2]:
    """Every observation matching the filters, on whatever API the server has.

    Pages are deduplicated by id: observations are backdated and uploads can race with
    the read, so an id may show up on two pages.
    """
    stats = stats if stats is not None else ReadStats()
    caps = capabilities(client)
    with caps.trying("observations_v2") as v2:
        if v2 is not False:
            try:
                found = _fetch_v2(
                    client, session_id, trace_id, is_root_observation, fields, page_size, stats
                )
            except _V2Missing:
                caps.observations_v2 = False
            else:
                caps.observations_v2 = True
                return found
    stats.legacy = True
    return legacy_observations(
        client, session_id=session_id, trace_id=trace_id, roots_only=bool(is_root_observation)
    )


class _V2Missing(Exception):
    pass


def _fetch_v2(
    client: LangfuseClient,
    session_id: str | None,
    trace_id: str | None,
    is_root: bool | None,
    fields: str,
    page_size: int,
    stats: ReadStats,
) -> list[ObservationV2]:
    what = f"reading session {session_id}" if session_id else f"reading trace {trace_id}"
    seen: dict[str, ObservationV2] = {}
    cursor: str | None = None
    limit = min(FIRST_PAGE, page_size)
    per_obs = 0.0
    failures = 0
    ceiling = page_size
    while True:
        try:
            stats.requests += 1
            raw = client.call(
                client.api.observations.with_raw_response.get_many,
                error=SourceError,
                what=what,
                passthrough=(404, 405, *SHRINK_ON),
                fields=fields,
                expand_metadata=EXPAND_METADATA if "metadata" in fields else None,
                limit=limit,
                cursor=cursor,
                session_id=session_id,
                trace_id=trace_id,
                is_root_observation=is_root,
            )
        except ApiError as exc:
            if v2_missing(exc) and cursor is None:
                raise _V2Missing from exc
            failures += 1
            if v2_missing(exc) or failures >= RETRY.attempts:
                raise client.translate(exc, error=SourceError, what=what) from exc
            if exc.status_code != 413:  # a struggling server also gets the backoff
                RETRY.sleep(backoff(failures))
            # Later pages stay at or below what last failed, halved.
            ceiling = limit = max(MIN_PAGE, limit // 2)
            stats.halvings += 1
            continue
        failures = 0
        page = raw.data
        size = _response_bytes(raw)
        stats.largest_response = max(stats.largest_response, size)
        for obs in page.data:
            seen.setdefault(obs.id, obs)
        if page.data:
            per_obs = max(per_obs, size / len(page.data))
            limit = next_limit(per_obs, ceiling)
        cursor = page.meta.cursor
        if not cursor or not page.data:
            return list(seen.values())


def _response_bytes(raw: Any) -> int:
    http = getattr(raw, "_response", None)
    if http is not None:
        return len(http.content)
    return len(json.dumps(raw.data.dict(by_alias=True), default=str))


# ---------------------------------------------------------------- legacy (self-hosted v3)


def legacy_observations(
    client: LangfuseClient,
    *,
    session_id: str | None = None,
    trace_id: str | None = None,
    roots_only: bool = False,
) -> list[ObservationV2]:
    """sessions → traces → observations, mapped to `ObservationV2`.

    `roots_only` answers from the traces alone (one root per trace: what discovery and
    "the session's first trace" need), without reading any observation.
    """
    project = _project_id(client)
    if session_id is not None:
        traces = _session_traces(client, session_id)
    else:
        traces = [{"id": trace_id, "sessionId": None}]
    if roots_only:
        return [trace_root(t, project) for t in traces if t.get("timestamp")]
    out: list[ObservationV2] = []
    for trace in traces:
        out.extend(_trace_observations(client, trace, session_id, project))
    return out


def _session_traces(client: LangfuseClient, session_id: str) -> list[dict[str, Any]]:
    try:
        body = client.get_json(
            f"api/public/sessions/{quote(session_id, safe='')}",
            error=SourceError,
            what=f"reading session {session_id} (legacy API)",
        )
    except SourceError as exc:
        if "HTTP 404" in str(exc):
            return []  # no such session: the caller reports it as empty
        raise
    return list(body.get("traces") or [])


def _trace_observations(
    client: LangfuseClient, trace: dict[str, Any], session_id: str | None, project: str
) -> list[ObservationV2]:
    out: list[ObservationV2] = []
    page = 1
    while True:
        body = client.get_json(
            "api/public/observations",
            error=SourceError,
            what=f"reading trace {trace['id']} (legacy API)",
            traceId=trace["id"],
            page=page,
            limit=LEGACY_PAGE,
        )
        out.extend(from_legacy(o, trace, session_id, project) for o in body.get("data") or [])
        meta = body.get("meta") or {}
        if page >= int(meta.get("totalPages") or 1) or not body.get("data"):
            return out
        page += 1


def from_legacy(
    obs: dict[str, Any], trace: dict[str, Any], session_id: str | None, project: str
) -> ObservationV2:
    """A v1 observation (+ its trace) as the SDK's v2 model (pure)."""
    data = {k: v for k, v in obs.items() if k in LEGACY_OBSERVATION_KEYS}
    for key in ("input", "output"):
        value = data.get(key)
        if value is not None:  # v2 sends every value JSON-encoded, strings included
            data[key] = json.dumps(value, ensure_ascii=False)
    if data.get("metadata") is not None and not isinstance(data["metadata"], dict):
        data["metadata"] = {"value": data["metadata"]}
    data.update(
        projectId=obs.get("projectId") or project,
        sessionId=session_id or trace.get("sessionId"),
        isRootObservation=not obs.get("parentObservationId"),
        totalCost=obs.get("calculatedTotalCost"),
        tags=trace.get("tags"),
        traceName=trace.get("name"),
        userId=trace.get("userId"),
    )
    data.setdefault("environment", trace.get("environment"))
    return parse_obj_as(ObservationV2, data)


def trace_root(trace: dict[str, Any], project: str) -> ObservationV2:
    """One stand-in root observation for a legacy trace (id = trace id)."""
    return parse_obj_as(
        ObservationV2,
        {
            "id": trace["id"],
            "traceId": trace["id"],
            "startTime": trace["timestamp"],
            "endTime": _trace_end(trace),
            "projectId": trace.get("projectId") or project,
            "type": "SPAN",
            "name": trace.get("name"),
            "sessionId": trace.get("sessionId"),
            "userId": trace.get("userId"),
            "environment": trace.get("environment"),
            "tags": trace.get("tags"),
            "isRootObservation": True,
        },
    )


def _trace_end(trace: dict[str, Any]) -> str | None:
    from datetime import datetime, timedelta

    latency = trace.get("latency")
    if not isinstance(latency, int | float):
        return None
    start = datetime.fromisoformat(str(trace["timestamp"]).replace("Z", "+00:00"))
    return (start + timedelta(seconds=float(latency))).isoformat()


def _project_id(client: LangfuseClient) -> str:
    projects = client.call(client.api.projects.get, error=SourceError, what="reading the project")
    return projects.data[0].id if projects.data else ""
