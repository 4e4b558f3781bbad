"""A self-hosted Langfuse v3 server (the one our first users run), as a respx fake.

What differs from Cloud / v4 (read from the server source, `web/src/pages/api/public/`):

* `GET /api/public/v2/observations` → 404 "The observations v2 API is only available in a
  Langfuse v4 write mode" (`v2/observations/index.ts`).
* Reads go through the legacy endpoints: `GET /api/public/sessions/{id}` (the session
  with its traces), `GET /api/public/traces` (page-based list with time/tags/environment
  filters) and `GET /api/public/observations?traceId=` (v1 observations: input/output
  as JSON values, no sessionId/projectId), all page-based.
* `POST /api/public/scores` takes ONE score object (`PostScoresBodyV1`): a list body is a
  zod 400 "Invalid request data"; the answer is `200 {"id"}`. `timestamp` is not in
  the schema, so the server stamps the score with its own clock; the scores table keeps
  one row per (day of that timestamp, name, id), so the same id sent on another day is
  a second row (`rows`), visible to readers as a duplicate.
* `POST /api/public/ingestion` (the base fake's) takes `score-create` events and keeps
  the event's timestamp: what the scorer uses on these servers (`GET /api/public/health`
  says 3.x). `version=` makes the fake claim another version (e.g. a newer one that
  still refuses lists: the remembered `single` fallback).

The SDK 5.0.4 has no types for the legacy reads; their bodies follow the OpenAPI spec
(`SessionWithTraces`, `Traces`, `ObservationsViews`). Everything else (configs, v3 score
reads, projects, queues, the async config check) is the base fake's.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import httpx
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from tests.langfuse.fake_server import FakeLangfuse, _check, _dt

V1_OBSERVATION_KEYS = {
    "id", "traceId", "type", "name", "startTime", "endTime", "completionStartTime",
    "model", "modelParameters", "input", "output", "metadata", "level", "statusMessage",
    "parentObservationId", "version", "environment", "usageDetails", "costDetails",
    "promptId", "promptName", "promptVersion", "latency", "timeToFirstToken",
}  # fmt: skip
V4_ONLY = (
    "The observations v2 API is only available in a Langfuse v4 write mode. "
    "Learn more at: https://langfuse.com/docs/v4"
)


class FakeLangfuseV3(FakeLangfuse):
    """Self-hosted Langfuse v3 (see the module docstring). `today` is the server's date."""

    def __init__(
        self, *args: Any, today: str = "2026-11-22", version: str = "3.179.0", **kw: Any
    ) -> None:
        self.today = today
        self.rows: dict[tuple[str, str], dict[str, Any]] = {}
        """(server day, score id) → the stored row: what the ClickHouse table keeps."""
        self.legacy_requests: list[httpx.Request] = []
        super().__init__(*args, version=version, **kw)

    def _routes(self) -> None:
        r = self.router
        # Before the base routes: theirs answer these legacy paths with 410.
        r.get(url__regex=r".*/api/public/sessions/(?P<sid>[^?]+)(\?.*)?$").mock(
            side_effect=self._guard("sessions", self._session)
        )
        r.get(url__regex=r".*/api/public/traces(\?.*)?$").mock(
            side_effect=self._guard("traces", self._traces)
        )
        r.get(url__regex=r".*/api/public/observations(\?.*)?$").mock(
            side_effect=self._guard("observations_v1", self._observations_v1)
        )
        super()._routes()
        # After: respx replaces a route with an identical pattern (the v2 read).
        missing = httpx.Response(404, json={"message": V4_ONLY, "error": "LangfuseNotFoundError"})
        r.get("/api/public/v2/observations").mock(
            side_effect=self._guard("observations", lambda request: missing)
        )

    # ---- legacy reads

    def _by_trace(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for obs in self.observations:
            out[obs["traceId"]].append(obs)
        return out

    def _trace(self, group: list[dict[str, Any]]) -> dict[str, Any]:
        root = min(group, key=lambda o: (bool(o.get("parentObservationId")), o["startTime"]))
        ends = [_dt(o.get("endTime") or o["startTime"]) for o in group]
        latency = (max(ends) - _dt(root["startTime"])).total_seconds()
        return {
            "id": root["traceId"],
            "timestamp": root["startTime"],
            "name": root.get("traceName"),
            "sessionId": root.get("sessionId"),
            "userId": root.get("userId"),
            "tags": root.get("tags") or [],
            "environment": root.get("environment") or "default",
            "metadata": root.get("metadata"),
            "input": _json(root.get("input")),
            "output": _json(root.get("output")),
            "latency": latency,
            "htmlPath": f"/project/{self.project_id}/traces/{root['traceId']}",
        }

    def _session(self, request: httpx.Request, sid: str) -> httpx.Response:
        self.legacy_requests.append(request)
        from urllib.parse import unquote

        sid = unquote(sid)
        traces = [self._trace(g) for g in self._by_trace().values() if g[0].get("sessionId") == sid]
        if not traces:
            return httpx.Response(404, json={"message": "Session not found"})
        traces.sort(key=lambda t: t["timestamp"])
        body = {
            "id": sid,
            "createdAt": traces[0]["timestamp"],
            "projectId": self.project_id,
            "environment": traces[0]["environment"],
            "traces": traces,
        }
        return httpx.Response(200, json=body)

    def _traces(self, request: httpx.Request) -> httpx.Response:
        self.legacy_requests.append(request)
        q = request.url.params
        traces = [self._trace(g) for g in self._by_trace().values()]
        lo, hi = q.get("fromTimestamp"), q.get("toTimestamp")
        tags = q.get_list("tags")
        envs = q.get_list("environment")
        rows = [
            t
            for t in traces
            if (lo is None or _dt(t["timestamp"]) >= _dt(lo))
            and (hi is None or _dt(t["timestamp"]) < _dt(hi))
            and set(tags) <= set(t["tags"])
            and (not envs or t["environment"] in envs)
            and (q.get("userId") is None or t["userId"] == q.get("userId"))
        ]
        rows.sort(key=lambda t: (t["timestamp"], t["id"]), reverse=True)
        return httpx.Response(200, json=self._paged(request, rows))

    def _observations_v1(self, request: httpx.Request) -> httpx.Response:
        self.legacy_requests.append(request)
        q = request.url.params
        limit = int(q.get("limit", 50))
        if limit > 100:
            return httpx.Response(400, json={"message": "limit must be <= 100"})
        rows = [o for o in self.observations if o["traceId"] == q.get("traceId")]
        rows.sort(key=lambda o: (o["startTime"], o["id"]))
        v1 = [self._v1(o) for o in rows]
        return httpx.Response(200, json=self._paged(request, v1))

    @staticmethod
    def _v1(obs: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in obs.items() if k in V1_OBSERVATION_KEYS}
        out["input"], out["output"] = _json(obs.get("input")), _json(obs.get("output"))
        out["calculatedTotalCost"] = obs.get("totalCost")
        return out

    # ---- one score per POST, server-stamped

    def _post_scores(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        if isinstance(body, list):
            issue = {"code": "invalid_type", "expected": "object", "received": "array"}
            return httpx.Response(400, json={"message": "Invalid request data", "error": [issue]})
        _check(CreateScoreRequest, body)
        self.score_batches.append([body])
        item = {k: v for k, v in body.items() if k != "timestamp"}
        item["timestamp"] = f"{self.today}T12:00:00Z"  # the server's clock, not ours
        message = self.reject(item) if self.reject else None
        if message:
            return httpx.Response(400, json={"message": message})
        self._ingest(item)
        return httpx.Response(200, json={"id": item["id"]})

    def _ingest(self, item: dict[str, Any]) -> None:
        super()._ingest(item)
        if item["id"] in self.scores:  # the row's key: the day of the score's timestamp
            self.rows[(item["timestamp"][:10], item["id"])] = item

    def duplicate_ids(self) -> set[str]:
        """Score ids stored in more than one row (sent again on another day)."""
        days: dict[str, int] = defaultdict(int)
        for _day, sid in self.rows:
            days[sid] += 1
        return {sid for sid, n in days.items() if n > 1}


def _json(value: Any) -> Any:
    """v2 sends input/output as raw strings; v1 sends the JSON value."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value
