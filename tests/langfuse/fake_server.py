"""A respx-based fake of the Langfuse public API parts the scorer uses.

Covers `GET /api/public/v2/observations` (session/trace/root filters or the JSON `filter`
param, which like the real API overrides them; field groups, cursor paging),
`POST /api/public/scores` (list body, upsert by id, 202/207; then the worker's async
check against the score config drops what does not fit, as `validateAndInflateScore`
does, into `fake.dropped`), `GET /api/public/v3/scores`
(sessionId/traceId/name/configId filters, details/subject groups, cursor paging), score
configs (list/create/patch), annotation queues (list/create queues, list/create items) and
`GET /api/public/projects`. Every response it sends is first parsed with the SDK's own
pydantic types, so a fake that drifts from the SDK fails loudly. Like Langfuse Cloud, any
answer over 5 MB (`max_response_bytes`) is a 413. `tests.langfuse.fake_v3` is a
self-hosted v3 server (no v2 observations, one score object per POST).

Usage::

    with FakeLangfuse(observations) as fake:
        client = fake.client()          # a LangfuseClient pointed at the fake
        ...
        assert fake.calls["observations"] == 1

Faults: `fake.fail("scores", httpx.Response(429, headers={"Retry-After": "7"}))` makes the
next call to that route return the given response (queue several for several calls).
Routes: observations, scores (POST), scores_v3 (GET), configs, projects, queues.
"""

from __future__ import annotations

import base64
import json
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from datetime import datetime
from typing import Any

import httpx
import respx
from langfuse.api import LangfuseAPI
from langfuse.api.annotation_queues.types.annotation_queue import AnnotationQueue
from langfuse.api.annotation_queues.types.annotation_queue_item import AnnotationQueueItem
from langfuse.api.annotation_queues.types.paginated_annotation_queue_items import (
    PaginatedAnnotationQueueItems,
)
from langfuse.api.annotation_queues.types.paginated_annotation_queues import (
    PaginatedAnnotationQueues,
)
from langfuse.api.commons.types.score_config import ScoreConfig
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response
from langfuse.api.projects.types.projects import Projects
from langfuse.api.score_configs.types.score_configs import ScoreConfigs
from langfuse.api.scores.types.create_score_batch_response import CreateScoreBatchResponse
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from langfuse.api.scores.types.create_score_request import CreateScoreRequest
from langfuse.api.scores.types.get_scores_v3response import GetScoresV3Response

from scorer.langfuse_client import LangfuseClient

HOST = "https://langfuse.test"
LIST_VERSION = "4.20.0"
"""A server newer than 4.16: takes the SDK's list body, like Cloud (SDK 5.0.4's docs)."""
PUBLIC_KEY = "pk-lf-test"
SECRET_KEY = "sk-lf-test"
PROJECT_ID = "proj-scorer-test"

# Which top-level keys each v2 field group returns (core is always included).
FIELD_GROUPS = {
    "core": ["id", "traceId", "startTime", "endTime", "projectId", "parentObservationId", "type"],
    "basic": [
        "name",
        "level",
        "statusMessage",
        "version",
        "environment",
        "bookmarked",
        "public",
        "userId",
        "sessionId",
        "isRootObservation",
    ],
    "time": ["completionStartTime", "createdAt", "updatedAt"],
    "io": ["input", "output"],
    "metadata": ["metadata"],
    "model": ["model", "internalModelId", "modelParameters"],
    "usage": ["usageDetails", "costDetails", "totalCost", "usagePricingTierName"],
    "prompt": ["promptId", "promptName", "promptVersion"],
    "metrics": ["latency", "timeToFirstToken"],
    "trace_context": ["tags", "release", "traceName"],
}
Rejecter = Callable[[dict[str, Any]], str | None]


def _check(type_: Any, body: Any) -> Any:
    """Parse with the SDK's own helper (it maps camelCase aliases like the client does)."""
    return parse_obj_as(type_, body)


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def _offset(cursor: str | None) -> int:
    return json.loads(base64.urlsafe_b64decode(cursor))["o"] if cursor else 0


def _truthy(value: str | None) -> bool | None:
    return None if value is None else value.lower() == "true"


def _dt(value: Any) -> datetime:
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


# The JSON `filter` of v2 observations: column → observation key, and the operators per
# condition type (reference §3.1). Anything else is a 400, as on the real server.
FILTER_COLUMNS = {"traceTags": "tags"}
_DATETIME_OPS: dict[str, Callable[[datetime, datetime], bool]] = {
    ">": lambda a, b: a > b,
    "<": lambda a, b: a < b,
    ">=": lambda a, b: a >= b,
    "<=": lambda a, b: a <= b,
}
_STRING_OPS: dict[str, Callable[[str, str], bool]] = {
    "=": lambda a, b: a == b,
    "contains": lambda a, b: b in a,
    "does not contain": lambda a, b: b not in a,
    "starts with": lambda a, b: a.startswith(b),
    "ends with": lambda a, b: a.endswith(b),
}


class FilterError(ValueError):
    """A filter condition the real API would answer with 400."""


def filter_matches(obs: dict[str, Any], cond: dict[str, Any]) -> bool:
    """Evaluate one JSON-filter condition against an observation (camelCase dict)."""
    kind, op, want = cond.get("type"), cond.get("operator"), cond.get("value")
    column = cond.get("column")
    if not column or kind is None or op is None:
        raise FilterError(f"malformed filter condition {cond!r}")
    have = obs.get(FILTER_COLUMNS.get(column, column))
    if kind == "datetime" and op in _DATETIME_OPS:
        return have is not None and _DATETIME_OPS[op](_dt(have), _dt(want))
    if kind == "string" and op in _STRING_OPS:
        return have is not None and _STRING_OPS[op](str(have), str(want))
    if kind in ("stringOptions", "categoryOptions") and op in ("any of", "none of"):
        if not isinstance(want, list):
            raise FilterError(f"{kind} needs a list value: {cond!r}")
        return (have in want) == (op == "any of")
    if kind == "arrayOptions" and op in ("any of", "none of", "all of"):
        if not isinstance(want, list):
            raise FilterError(f"{kind} needs a list value: {cond!r}")
        have_set = set(have or [])
        if op == "all of":
            return set(want) <= have_set
        return bool(have_set & set(want)) == (op == "any of")
    if kind == "boolean" and op in ("=", "<>"):
        if not isinstance(want, bool):
            raise FilterError(f"boolean filter needs true/false: {cond!r}")
        return (bool(have) == want) == (op == "=")
    raise FilterError(f"unsupported filter: type {kind!r} with operator {op!r}")


class FakeLangfuse:
    """In-memory Langfuse project behind respx routes (see the module docstring)."""

    def __init__(
        self,
        observations: list[dict[str, Any]] | None = None,
        *,
        host: str = HOST,
        project_id: str = PROJECT_ID,
        score_status: int = 202,
        max_response_bytes: int = 5_000_000,
        version: str = LIST_VERSION,
    ) -> None:
        self.host = host
        self.version = version
        """What `GET /api/public/health` says (decides the scorer's score write path)."""
        self.project_id = project_id
        self.observations = list(observations or [])
        self.scores: dict[str, dict[str, Any]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.score_batches: list[list[dict[str, Any]]] = []
        self.score_reads: list[httpx.Request] = []
        self.observation_requests: list[httpx.Request] = []
        self.observation_responses: list[httpx.Response] = []
        self.queues: dict[str, dict[str, Any]] = {}
        self.queue_items: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.calls: Counter[str] = Counter()
        self.score_status = score_status
        self.max_response_bytes = max_response_bytes
        """Langfuse Cloud's response limit: a bigger answer is a 413."""
        self.dropped: dict[str, str] = {}
        """Score id → why the (async) worker dropped it after the POST was accepted."""
        self.reject: Rejecter | None = None
        self.on_request: Callable[[str, httpx.Request], None] | None = None
        """Called before every handled request (tests raise from it to simulate a crash)."""
        self.on_response: Callable[[str, httpx.Response], None] | None = None
        """Called after a route handled a request, before the response is returned."""
        self._faults: dict[str, deque[httpx.Response]] = defaultdict(deque)
        self._config_seq = 0
        self._lock = threading.RLock()
        """One request at a time, like a real server's consistent reads: the backfill's
        worker threads call the fake concurrently, and its state is plain dicts (a v3
        scores read iterating `scores` while another thread's POST added to it was the
        "dictionary changed size during iteration" of issue 24)."""
        self.router = respx.mock(base_url=host, assert_all_called=False)
        self._routes()

    # ---- setup

    def __enter__(self) -> FakeLangfuse:
        self.router.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.router.__exit__(*exc)

    def client(self, *, secret: str = SECRET_KEY) -> LangfuseClient:
        api = LangfuseAPI(base_url=self.host, username=PUBLIC_KEY, password=secret, timeout=5)
        return LangfuseClient(api=api, host=self.host, public_key=PUBLIC_KEY)

    def fail(self, route: str, *responses: httpx.Response) -> None:
        """Answer the next calls to `route` (observations/scores/configs/projects) with these."""
        self._faults[route].extend(responses)

    def add_config(self, **fields: Any) -> dict[str, Any]:
        """Seed a score config as if created earlier (camelCase fields)."""
        self._config_seq += 1
        cfg = {
            "id": f"cfg-{self._config_seq}",
            "projectId": self.project_id,
            "createdAt": "2026-11-01T00:00:00Z",
            "updatedAt": "2026-11-01T00:00:00Z",
            "isArchived": False,
            **fields,
        }
        _check(ScoreConfig, cfg)
        self.configs[cfg["id"]] = cfg
        return cfg

    # ---- routes

    def _routes(self) -> None:
        r = self.router
        r.get("/api/public/v2/observations").mock(
            side_effect=self._guard("observations", self._observations)
        )
        r.post("/api/public/scores").mock(side_effect=self._guard("scores", self._post_scores))
        r.post("/api/public/ingestion").mock(side_effect=self._guard("ingestion", self._ingestion))
        r.get("/api/public/health").mock(side_effect=self._health)
        r.get("/api/public/score-configs").mock(
            side_effect=self._guard("configs", self._list_configs)
        )
        r.post("/api/public/score-configs").mock(
            side_effect=self._guard("configs", self._create_config)
        )
        r.patch(url__regex=r".*/api/public/score-configs/(?P<cid>[^/?]+)$").mock(
            side_effect=self._guard("configs", self._patch_config)
        )
        r.get("/api/public/projects").mock(side_effect=self._guard("projects", self._projects))
        r.get("/api/public/v3/scores").mock(side_effect=self._guard("scores_v3", self._get_scores))
        r.get("/api/public/annotation-queues").mock(
            side_effect=self._guard("queues", self._list_queues)
        )
        r.post("/api/public/annotation-queues").mock(
            side_effect=self._guard("queues", self._create_queue)
        )
        items = r".*/api/public/annotation-queues/(?P<qid>[^/?]+)/items$"
        r.get(url__regex=items.replace("$", r"(\?.*)?$")).mock(
            side_effect=self._guard("queues", self._list_items)
        )
        r.post(url__regex=items).mock(side_effect=self._guard("queues", self._create_item))
        # The deprecated reads must never be used: make them loud.
        for path in ("/api/public/sessions", "/api/public/traces", "/api/public/observations"):
            r.get(url__startswith=f"{self.host}{path}").mock(
                return_value=httpx.Response(410, json={"message": f"deprecated {path} used"})
            )

    def _guard(
        self, name: str, handler: Callable[..., httpx.Response]
    ) -> Callable[..., httpx.Response]:
        def wrapped(request: httpx.Request, **kw: Any) -> httpx.Response:
            with self._lock:
                return handle(request, **kw)

        def handle(request: httpx.Request, **kw: Any) -> httpx.Response:
            self.calls[name] += 1
            auth = request.headers.get("authorization", "")
            expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
            if auth != expected:
                return httpx.Response(401, json={"message": "Invalid credentials"})
            if self.on_request:
                self.on_request(name, request)
            if self._faults[name]:
                return self._faults[name].popleft()
            response = handler(request, **kw)
            if len(response.content) > self.max_response_bytes:
                message = f"Response size {len(response.content)} exceeds the 5 MB limit"
                response = httpx.Response(413, json={"message": message})
            if name == "observations":
                self.observation_responses.append(response)
            if self.on_response:
                self.on_response(name, response)
            return response

        return wrapped

    def _observations(self, request: httpx.Request) -> httpx.Response:
        self.observation_requests.append(request)
        q = request.url.params
        try:
            conds = self._conditions(q)
            rows = [o for o in self.observations if self._matches(o, q, conds)]
        except FilterError as exc:
            return httpx.Response(400, json={"message": f"Invalid filter: {exc}"})
        rows.sort(key=lambda o: (o["startTime"], o["id"]))
        limit = min(int(q.get("limit", 50)), 1000)
        start = _offset(q.get("cursor"))
        page = rows[start : start + limit]
        groups = {"core", *(q.get("fields") or "core,basic").split(",")}
        keys = [k for g in groups for k in FIELD_GROUPS.get(g, [])]
        data = [{k: o[k] for k in keys if k in o} for o in page]
        meta = {"cursor": _cursor(start + limit)} if start + limit < len(rows) else {}
        body = {"data": data, "meta": meta}
        _check(ObservationsV2Response, body)
        return httpx.Response(200, json=body)

    @staticmethod
    def _conditions(q: httpx.QueryParams) -> list[dict[str, Any]] | None:
        """The parsed JSON `filter`, or None when the request uses the plain params."""
        if "filter" not in q:
            return None
        try:
            conds = json.loads(q["filter"])
        except ValueError as exc:
            raise FilterError(f"filter is not JSON: {exc}") from None
        if not isinstance(conds, list):
            raise FilterError("filter must be a JSON list of conditions")
        return conds

    @classmethod
    def _matches(
        cls, obs: dict[str, Any], q: httpx.QueryParams, conds: list[dict[str, Any]] | None = None
    ) -> bool:
        conds = cls._conditions(q) if conds is None else conds
        if conds is not None:  # overrides every plain filter param, time bounds included
            return all(filter_matches(obs, c) for c in conds)
        checks = [
            ("sessionId", q.get("sessionId")),
            ("traceId", q.get("traceId")),
            ("isRootObservation", _truthy(q.get("isRootObservation"))),
            ("type", q.get("type")),
        ]
        return all(value is None or obs.get(key) == value for key, value in checks)

    def _post_scores(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        assert isinstance(body, list), "SDK 5 posts a list of scores"
        for item in body:
            _check(CreateScoreRequest, item)
        self.score_batches.append(body)
        errors = []
        for item in body:
            message = self.reject(item) if self.reject else None
            if message:
                errors.append({"message": message})
            else:
                self._ingest(item)
        if errors:
            out = {"accepted": len(body) - len(errors), "rejected": len(errors), "errors": errors}
            _check(CreateScoreBatchResults, out)
            return httpx.Response(207, json=out)
        if self.score_status == 200:  # an older server: single-score style answer
            return httpx.Response(200, json={"id": body[0].get("id")})
        _check(CreateScoreBatchResponse, {"message": "Accepted"})
        return httpx.Response(202, json={"message": "Accepted"})

    def _health(self, request: httpx.Request) -> httpx.Response:
        self.calls["health"] += 1  # no credentials needed, like the real endpoint
        return httpx.Response(200, json={"status": "OK", "version": self.version})

    def _ingestion(self, request: httpx.Request) -> httpx.Response:
        """`POST /api/public/ingestion` with `score-create` events, as a real 4.16.0 does
        it (measured): 207 with per-event successes/errors; the worker keeps the first
        event's timestamp as the score's and merges later events in timestamp order,
        where an equal timestamp does not override."""
        events = json.loads(request.content)["batch"]
        items = []
        successes, errors = [], []
        for event in events:
            assert event["type"] == "score-create" and event["timestamp"].endswith("Z")
            item = {**event["body"], "timestamp": event["timestamp"]}
            _check(CreateScoreRequest, item)
            items.append(item)
            message = self.reject(item) if self.reject else None
            if message:
                errors.append({"id": event["id"], "status": 400, "message": message})
                continue
            successes.append({"id": event["id"], "status": 201})
            have = self.scores.get(item["id"])
            if have is not None and item["timestamp"] <= have["_event_ts"]:
                continue  # an older or equal event does not win the merge
            first = have["timestamp"] if have else item["timestamp"]
            self._ingest({**item, "timestamp": first, "_event_ts": item["timestamp"]})
        self.score_batches.append(items)
        return httpx.Response(207, json={"successes": successes, "errors": errors})

    def _ingest(self, item: dict[str, Any]) -> None:
        """The worker's half, after the API said 202: `validateAndInflateScore` checks the
        score against its config and drops it silently when it does not fit."""
        reason = self.config_problem(item)
        if reason:
            self.dropped[item["id"]] = reason
            self.scores.pop(item["id"], None)
        else:
            self.scores[item["id"]] = item  # same id + timestamp = update

    def config_problem(self, item: dict[str, Any]) -> str | None:
        """Why the server's worker rejects a score against its config (its messages)."""
        cid = item.get("configId")
        if not cid:
            return None
        cfg = self.configs.get(cid)
        if cfg is None:
            return "The configId you provided does not match a valid config in this project"
        if item.get("dataType") and item["dataType"] != cfg["dataType"]:
            return f"Data type mismatch based on config: expected {cfg['dataType']}"
        if cfg.get("isArchived"):
            return "Config is archived and cannot be used to create new scores."
        if cfg["name"] != item["name"]:
            return f"Name mismatch based on config: expected {cfg['name']}, got {item['name']}"
        value = item["value"]
        if cfg["dataType"] == "CATEGORICAL":
            if value not in {c["label"] for c in cfg.get("categories") or []}:
                return f"Ingested score body not valid against provided config: {value}"
        elif not (
            (cfg.get("minValue") is None or value >= cfg["minValue"])
            and (cfg.get("maxValue") is None or value <= cfg["maxValue"])
        ):
            return f"Ingested score body not valid against provided config: value {value}"
        return None

    def _list_configs(self, request: httpx.Request) -> httpx.Response:
        page = int(request.url.params.get("page", 1))
        limit = int(request.url.params.get("limit", 50))
        items = list(self.configs.values())
        total_pages = max(1, -(-len(items) // limit))
        data = items[(page - 1) * limit : page * limit]
        meta = {"page": page, "limit": limit, "totalItems": len(items), "totalPages": total_pages}
        body = {"data": data, "meta": meta}
        _check(ScoreConfigs, body)
        return httpx.Response(200, json=body)

    def _create_config(self, request: httpx.Request) -> httpx.Response:
        cfg = self.add_config(**json.loads(request.content))
        return httpx.Response(200, json=cfg)

    def _patch_config(self, request: httpx.Request, cid: str) -> httpx.Response:
        if cid not in self.configs:
            return httpx.Response(404, json={"message": "not found"})
        self.configs[cid].update(json.loads(request.content))
        _check(ScoreConfig, self.configs[cid])
        return httpx.Response(200, json=self.configs[cid])

    def _projects(self, request: httpx.Request) -> httpx.Response:
        body = {
            "data": [
                {
                    "id": self.project_id,
                    "name": "scorer-test",
                    "metadata": {},
                    "organization": {"id": "org-1", "name": "Org"},
                }
            ]
        }
        _check(Projects, body)
        return httpx.Response(200, json=body)

    # ---- v3 scores

    def _get_scores(self, request: httpx.Request) -> httpx.Response:
        self.score_reads.append(request)
        q = request.url.params
        limit = int(q.get("limit", 50))
        if limit > 100:
            return httpx.Response(400, json={"message": "limit must be <= 100"})
        subjects = [k for k in ("traceId", "sessionId", "experimentId") if q.get(k)]
        if len(subjects) > 1:
            return httpx.Response(400, json={"message": f"{subjects} are mutually exclusive"})
        groups = set(filter(None, (q.get("fields") or "").split(",")))
        if groups - {"details", "subject", "annotation"}:
            return httpx.Response(400, json={"message": f"unknown fields {groups}"})
        wanted = {
            "id": q.get("id"),
            "sessionId": q.get("sessionId"),
            "traceId": q.get("traceId"),
            "name": q.get("name"),
            "configId": q.get("configId"),
        }
        rows = [
            item
            for item in self.scores.values()
            if all(v is None or item.get(k) in v.split(",") for k, v in wanted.items())
        ]
        rows.sort(key=lambda item: item["id"])
        start = _offset(q.get("cursor"))
        page = [self._score_v3(item, groups) for item in rows[start : start + limit]]
        meta: dict[str, Any] = {"limit": limit}
        if start + limit < len(rows):
            meta["cursor"] = _cursor(start + limit)
        body = {"data": page, "meta": meta}
        _check(GetScoresV3Response, body)
        return httpx.Response(200, json=body)

    def _score_v3(self, item: dict[str, Any], groups: set[str]) -> dict[str, Any]:
        data_type = item.get("dataType") or "NUMERIC"
        value = item["value"]
        if data_type == "BOOLEAN":
            value = bool(value)
        out = {
            "id": item["id"],
            "projectId": self.project_id,
            "name": item["name"],
            "value": value,
            "dataType": data_type,
            "source": item.get("source") or "API",
            "timestamp": item.get("timestamp") or "2026-11-22T00:00:00Z",
            "environment": item.get("environment") or "default",
            "createdAt": "2026-11-22T00:00:00Z",
            "updatedAt": "2026-11-22T00:00:00Z",
        }
        if "details" in groups:
            out.update(
                comment=item.get("comment"),
                configId=item.get("configId"),
                metadata=item.get("metadata"),
            )
        if "subject" in groups:
            if item.get("observationId"):
                subject = {"kind": "observation", "id": item["observationId"]}
                subject["traceId"] = item.get("traceId")
            elif item.get("traceId"):
                subject = {"kind": "trace", "id": item["traceId"]}
            else:
                subject = {"kind": "session", "id": item.get("sessionId")}
            out["subject"] = subject
        if "annotation" in groups:
            out.update(queueId=item.get("queueId"), authorUserId=None)
        return out

    def session_score_ids(self) -> dict[str, set[str]]:
        """sessionId → the distinct score ids stored for it (an upsert keeps one id)."""
        out: dict[str, set[str]] = defaultdict(set)
        for sid, item in self.scores.items():
            out[item.get("sessionId") or item.get("traceId") or "?"].add(sid)
        return dict(out)

    # ---- annotation queues

    @staticmethod
    def _paged(request: httpx.Request, items: list[dict[str, Any]]) -> dict[str, Any]:
        page = int(request.url.params.get("page", 1))
        limit = int(request.url.params.get("limit", 50))
        total_pages = max(1, -(-len(items) // limit))
        meta = {"page": page, "limit": limit, "totalItems": len(items), "totalPages": total_pages}
        return {"data": items[(page - 1) * limit : page * limit], "meta": meta}

    def _list_queues(self, request: httpx.Request) -> httpx.Response:
        body = self._paged(request, list(self.queues.values()))
        _check(PaginatedAnnotationQueues, body)
        return httpx.Response(200, json=body)

    def _create_queue(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        unknown = [c for c in body.get("scoreConfigIds", []) if c not in self.configs]
        if unknown:
            return httpx.Response(400, json={"message": f"unknown score configs {unknown}"})
        queue = {
            "id": f"queue-{len(self.queues) + 1}",
            "name": body["name"],
            "description": body.get("description"),
            "scoreConfigIds": body.get("scoreConfigIds", []),
            "createdAt": "2026-11-22T00:00:00Z",
            "updatedAt": "2026-11-22T00:00:00Z",
        }
        _check(AnnotationQueue, queue)
        self.queues[queue["id"]] = queue
        return httpx.Response(200, json=queue)

    def _list_items(self, request: httpx.Request, qid: str) -> httpx.Response:
        if qid not in self.queues:
            return httpx.Response(404, json={"message": "queue not found"})
        items = self.queue_items[qid]
        status = request.url.params.get("status")
        items = [i for i in items if status is None or i["status"] == status]
        body = self._paged(request, items)
        _check(PaginatedAnnotationQueueItems, body)
        return httpx.Response(200, json=body)

    def _create_item(self, request: httpx.Request, qid: str) -> httpx.Response:
        if qid not in self.queues:
            return httpx.Response(404, json={"message": "queue not found"})
        body = json.loads(request.content)
        item = {
            "id": f"{qid}-item-{len(self.queue_items[qid]) + 1}",
            "queueId": qid,
            "objectId": body["objectId"],
            "objectType": body["objectType"],
            "status": body.get("status") or "PENDING",
            "createdAt": "2026-11-22T00:00:00Z",
            "updatedAt": "2026-11-22T00:00:00Z",
        }
        _check(AnnotationQueueItem, item)
        self.queue_items[qid].append(item)
        return httpx.Response(200, json=item)
