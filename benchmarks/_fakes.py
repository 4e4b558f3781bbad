"""Loopback fakes for the benchmarks: a Messages API server and a Langfuse v2 observations
route. The only import from tests/ is the rate-limit metering (`tests.fakes.ratelimits`),
so the benchmarks and the tests meter one way.

Every reply is checked once against the SDK's own types (`anthropic.types.Message`,
Langfuse's `ObservationsV2Response`), like the test fakes.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo, for tests.fakes

from tests.fakes.ratelimits import Limits, MeteredAccount, Refused


def scoring_payload() -> dict[str, Any]:
    """A final scoring reply that validates against the default rubric's schema."""
    from scorer.judge.rubric import default_rubric

    reply: dict[str, Any] = {
        "requirements": [
            {
                "requirement": "fix the bug",
                "core": True,
                "evidence": [{"event": 1, "quote": "quote 1"}],
                "status": "met",
                "confidence": 90,
            }
        ],
        "accomplishments": ["fixed the bug"],
        "failures": [],
    }
    for cfg in default_rubric().dimensions:
        value: Any = cfg.labels[-2] if cfg.data_type == "CATEGORICAL" else 4
        reply[cfg.name] = {
            "evidence": [{"event": 1, "quote": "quote 1"}],
            "rationale": f"{cfg.name} rationale",
            "value": value,
        }
    reply["summary"] = "The agent fixed the bug and ran the tests."
    reply["recommendation"] = "complete"
    return reply


NOTES = {
    "progress": "progress",
    "errors_and_recoveries": [],
    "tool_patterns": ["targeted reads"],
    "evidence": [{"event": 1, "quote": "quote 1"}],
    "open_questions": [],
}


def message(payload: dict[str, Any], input_tokens: int) -> dict[str, Any]:
    return {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-5-5",
        "content": [{"type": "text", "text": json.dumps(payload)}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": 400,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    }


class FakeMessagesServer:
    """`POST /v1/messages` (and `/count_tokens`) on 127.0.0.1, each call delayed.

    Args:
        latency: Seconds a `/v1/messages` call sleeps; may be a callable of the request
            body, so the latency can be set per request. `count_tokens` answers at once.
        limits: Meter Messages calls with token-bucket RPM / ITPM / OTPM like the real API
            (the rate-limit headers on every reply, 429 + `retry-after` when over).
        time_scale: The metered fake's minute lasts `60 / time_scale` seconds.

    Attributes:
        calls: Messages calls served; `count_tokens_calls` likewise.
        max_in_flight: The most Messages calls the server held at one time.
        account: The metered buckets (None: unlimited); `account.refused` counts the 429s.
    """

    def __init__(
        self,
        latency: float | Callable[[dict], float] = 0.0,
        *,
        limits: Limits | None = None,
        time_scale: float = 1.0,
    ) -> None:
        from anthropic.types import Message

        Message.model_validate(message(scoring_payload(), 1))
        self.latency = latency
        self.account = MeteredAccount(limits, time_scale=time_scale) if limits else None
        self.calls = self.count_tokens_calls = self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()
        self._score = json.dumps(message(scoring_payload(), 0))
        self._notes = json.dumps(message(NOTES, 0))
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def reset(self, latency: float | Callable[[dict], float]) -> None:
        with self._lock:
            self.latency = latency
            self.calls = self.count_tokens_calls = self.max_in_flight = 0
        if self.account is not None:
            self.account.reset()

    def __enter__(self) -> FakeMessagesServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, path: str, raw: bytes) -> tuple[int, bytes, dict[str, str]]:
        """(status, body, headers) of one POST."""
        body = json.loads(raw or b"{}")
        size = len(raw) // 4  # a rough token figure; the benchmark does not check cost
        if path.split("?")[0].endswith("/count_tokens"):
            with self._lock:
                self.count_tokens_calls += 1
            return 200, json.dumps({"input_tokens": size}).encode(), {}
        grant = None
        if self.account is not None:
            grant = self.account.admit(
                body["model"], input_tokens=size, max_tokens=body["max_tokens"]
            )
            if isinstance(grant, Refused):
                error = {
                    "type": "error",
                    "error": {"type": "rate_limit_error", "message": grant.message},
                }
                return 429, json.dumps(error).encode(), grant.headers
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            delay = self.latency(body) if callable(self.latency) else self.latency
            time.sleep(delay)
        finally:
            with self._lock:
                self.in_flight -= 1
        notes = '"progress"' in json.dumps(body.get("output_config", {}))
        template = self._notes if notes else self._score
        out = template.replace('"input_tokens": 0', f'"input_tokens": {size}').encode()
        headers = self.account.finish(grant, output_tokens=400) if grant is not None else {}
        return 200, out, headers

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                status, out, headers = server.answer(self.path, raw)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        return Handler


# --- Langfuse --------------------------------------------------------------------------

LF_HOST = "https://langfuse.bench"
LF_PUBLIC, LF_SECRET = "pk-lf-bench", "sk-lf-bench"


def _matches(obs: dict[str, Any], cond: dict[str, Any]) -> bool:
    col, op, value = cond["column"], cond["operator"], cond["value"]
    have = obs.get(col)
    if cond["type"] == "datetime":
        return {">=": have >= value, "<": have < value, ">": have > value, "<=": have <= value}[op]
    if op == "all of":
        return set(value) <= set(have or [])
    if op == "any of":
        return have in value
    return have == value


class FakeObservations:
    """`GET /api/public/v2/observations` with the JSON `filter` and cursor paging (respx).

    Timestamps are compared as ISO strings, which is exact for same-format UTC `Z` times.
    `requests` counts the calls.
    """

    def __init__(self, observations: list[dict[str, Any]]) -> None:
        import respx

        self.observations = sorted(observations, key=lambda o: (o["startTime"], o["id"]))
        self.requests = 0
        self.router = respx.mock(base_url=LF_HOST, assert_all_called=False)
        self.router.get("/api/public/v2/observations").mock(side_effect=self._list)
        self._checked = False

    def __enter__(self) -> FakeObservations:
        self.router.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.router.__exit__(*exc)

    def api(self) -> LangfuseClient:
        """A Langfuse client (the SDK's API object, wrapped) pointed at the fake."""
        from langfuse.api import LangfuseAPI

        from scorer.langfuse_client import LangfuseClient

        return LangfuseClient.wrap(
            LangfuseAPI(base_url=LF_HOST, username=LF_PUBLIC, password=LF_SECRET)
        )

    def _list(self, request: httpx.Request) -> httpx.Response:
        self.requests += 1
        expected = base64.b64encode(f"{LF_PUBLIC}:{LF_SECRET}".encode()).decode()
        if request.headers.get("authorization") != f"Basic {expected}":
            return httpx.Response(401, json={"message": "Invalid credentials"})
        q = request.url.params
        conds = json.loads(q["filter"])
        rows = [o for o in self.observations if all(_matches(o, c) for c in conds)]
        limit = min(int(q.get("limit", 50)), 1000)
        start = int(q.get("cursor") or 0)
        more = start + limit < len(rows)
        body = {
            "data": rows[start : start + limit],
            "meta": {"cursor": str(start + limit)} if more else {},
        }
        if not self._checked:
            from langfuse.api.core.pydantic_utilities import parse_obj_as
            from langfuse.api.observations.types.observations_v2response import (
                ObservationsV2Response,
            )

            parse_obj_as(ObservationsV2Response, body)  # as the SDK parses it
            self._checked = True
        return httpx.Response(200, json=body)
