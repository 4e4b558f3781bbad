"""A respx-based fake of the Langfuse public API parts the scorer uses.

Covers `GET /api/public/v2/observations` (session/trace/root filters or the JSON `filter`
param, which like the real API overrides them; field groups, cursor paging),
`POST /api/public/scores` (list body, upsert by id, 202/207), `GET /api/public/v3/scores`
(sessionId/traceId/name/configId filters, details/subject groups, cursor paging), score
configs (list/create/patch), annotation queues (list/create queues, list/create items) and
`GET /api/public/projects`. Every response it sends is first parsed with the SDK's own
pydantic types, so a fake that drifts from the SDK fails loudly.

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
from collections import Counter, defaultdict, deque
from collections.abc import Callable
from typing import Any

import httpx
import respx
from langfuse.api import LangfuseAPI
from langfuse.api.commons.types.score_config import ScoreConfig
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response
from langfuse.api.projects.types.projects import Projects
from langfuse.api.score_configs.types.score_configs import ScoreConfigs
from langfuse.api.scores.types.create_score_batch_response import CreateScoreBatchResponse
from langfuse.api.scores.types.create_score_batch_results import CreateScoreBatchResults
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from scorer.langfuse_client import LangfuseClient

HOST = "https://langfuse.test"
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


class FakeLangfuse:
    """In-memory Langfuse project behind respx routes (see the module docstring)."""

    def __init__(
        self,
        observations: list[dict[str, Any]] | None = None,
        *,
        host: str = HOST,
        project_id: str = PROJECT_ID,
        score_status: int = 202,
    ) -> None:
        self.host = host
        self.project_id = project_id
        self.observations = list(observations or [])
        self.scores: dict[str, dict[str, Any]] = {}
        self.configs: dict[str, dict[str, Any]] = {}
        self.score_batches: list[list[dict[str, Any]]] = []
        self.observation_requests: list[httpx.Request] = []
        self.calls: Counter[str] = Counter()
        self.score_status = score_status
        self.reject: Rejecter | None = None
        self._faults: dict[str, deque[httpx.Response]] = defaultdict(deque)
        self._config_seq = 0
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
        # The deprecated reads must never be used: make them loud.
        for path in ("/api/public/sessions", "/api/public/traces", "/api/public/observations"):
            r.get(url__startswith=f"{self.host}{path}").mock(
                return_value=httpx.Response(410, json={"message": f"deprecated {path} used"})
            )

    def _guard(
        self, name: str, handler: Callable[..., httpx.Response]
    ) -> Callable[..., httpx.Response]:
        def wrapped(request: httpx.Request, **kw: Any) -> httpx.Response:
            self.calls[name] += 1
            auth = request.headers.get("authorization", "")
            expected = "Basic " + base64.b64encode(f"{PUBLIC_KEY}:{SECRET_KEY}".encode()).decode()
            if auth != expected:
                return httpx.Response(401, json={"message": "Invalid credentials"})
            if self._faults[name]:
                return self._faults[name].popleft()
            return handler(request, **kw)

        return wrapped

    def _observations(self, request: httpx.Request) -> httpx.Response:
        self.observation_requests.append(request)
        q = request.url.params
        rows = [o for o in self.observations if self._matches(o, q)]
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
    def _matches(obs: dict[str, Any], q: httpx.QueryParams) -> bool:
        if "filter" in q:
            raise AssertionError("the fake only implements the simple query-param filters")
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
                self.scores[item["id"]] = item  # same id + timestamp = update
        if errors:
            out = {"accepted": len(body) - len(errors), "rejected": len(errors), "errors": errors}
            _check(CreateScoreBatchResults, out)
            return httpx.Response(207, json=out)
        if self.score_status == 200:  # an older server: single-score style answer
            return httpx.Response(200, json={"id": body[0].get("id")})
        _check(CreateScoreBatchResponse, {"message": "Accepted"})
        return httpx.Response(202, json={"message": "Accepted"})

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
