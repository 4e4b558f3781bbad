"""Helpers for the backfill acceptance tests: a cloned 50-session Langfuse world, a fake
judge with header-carrying faults and a poisoned session, and FakeLangfuse over real HTTP.

`LoopbackLangfuse` serves a `FakeLangfuse` on 127.0.0.1 so a *subprocess* can talk to it
(respx only patches httpx inside the process that entered it): each request is rebuilt
as an `httpx.Request` against the fake's host and handed to the fake's respx router
without patching anything (`Router.handler`). `arm(n)` makes the server hold the response
to the first score batch that brings the count to `n`: Langfuse has stored the scores, the
client never hears back, and the test can `kill -9` the client at exactly that point.
"""

from __future__ import annotations

import json
import threading
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import CC_PROJECTS
from tests.jobs.helpers import FA, FakeJudgeServer, transcript_lines
from tests.jobs.test_backfill_langfuse import rename, retime
from tests.langfuse.fake_server import FakeLangfuse
from tests.langfuse.plugin_fixture import convert_transcript

TEMPLATES = ("short.jsonl", "tool_heavy.jsonl", "sample_main_transcript.jsonl")
"""The real transcripts the clones are made from (the small and middle-sized ones)."""
INVALID_MARKER = "ZZ-POISONED-TASK-ZZ"
"""A task containing this gets an invalid judge reply every time (first call and repair)."""


# --- the world -----------------------------------------------------------------------


def templates() -> list[list[dict]]:
    """The real transcripts of `TEMPLATES` as plugin-shaped observations."""
    paths = {p.name: p for p in CC_PROJECTS.glob("*/*.jsonl")}
    return [convert_transcript(paths[name]) for name in TEMPLATES]


def clone_sessions(
    n: int, *, last_end: datetime, spacing: timedelta = timedelta(hours=1)
) -> dict[str, list[dict]]:
    """`n` sessions cloned round-robin from the real templates, fresh session/trace ids.

    Session `k` ends `k * spacing` before `last_end`, so they spread over the window.
    """
    base = templates()
    world: dict[str, list[dict]] = {}
    for k in range(n):
        sid = f"clone-{k:03d}-{base[k % len(base)][0]['sessionId'][:8]}"
        world[sid] = retime(rename(base[k % len(base)], sid, f"k{k}"), last_end - k * spacing)
    return world


def synthetic_session(
    tmp: Path, session_id: str, end_at: datetime, *, task: str, n_steps: int = 3
) -> list[dict]:
    """A small generated session (one chunk) with its own task text."""
    path = tmp / f"{session_id}.jsonl"
    rows = transcript_lines(session_id, end_at - timedelta(minutes=2), n_steps=n_steps, task=task)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return retime(convert_transcript(path), end_at)


# --- the judge -----------------------------------------------------------------------


class FaultyJudge(FakeJudgeServer):
    """`FakeJudgeServer` whose faults carry headers and whose poisoned task never parses.

    Args:
        faults: `(status, headers)` answered before succeeding, in order across calls.
    """

    def __init__(self, faults: list[tuple[int, dict[str, str]]], **kw: Any) -> None:
        super().__init__(**kw)
        self.header_faults = list(faults)
        self.invalid_replies = 0

    def handle_post(self, path: str, body: dict) -> tuple[int, Any, dict]:
        if path.endswith("/v1/messages") and self.header_faults:
            with self._lock:
                status, headers = self.header_faults.pop(0) if self.header_faults else (0, {})
                if status:
                    self.calls += 1
                    self.fault_count[status] += 1
            if status:
                return status, json.loads(FA.error_response(status).content), dict(headers)
        return super().handle_post(path, body)

    def reply_for(self, body: dict) -> dict:
        text = "".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))
        if INVALID_MARKER in text:
            with self._lock:
                self.invalid_replies += 1
            return FA.message_json("I cannot produce JSON for this one {", output_tokens=12)
        return super().reply_for(body)


# --- FakeLangfuse over real HTTP -------------------------------------------------------


class LoopbackLangfuse:
    """Serve a `FakeLangfuse` on 127.0.0.1 (see the module docstring).

    Usage::

        with LoopbackLangfuse(FakeLangfuse(observations)) as lf:
            env["LANGFUSE_BASE_URL"] = lf.url
            lf.arm(5)            # hold the response that brings the batch count to 5
            lf.held.wait(30)     # ... then kill the client and lf.release()
    """

    def __init__(self, fake: FakeLangfuse) -> None:
        self.fake = fake
        self.held = threading.Event()
        self._release = threading.Event()
        self._armed: int | None = None
        self._lock = threading.Lock()
        adapter = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a: Any) -> None:
                pass

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                response = adapter.handle(self.command, self.path, dict(self.headers), body)
                try:
                    self.send_response(response.status_code)
                    for key, value in response.headers.items():
                        if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                            self.send_header(key, value)
                    self.send_header("content-length", str(len(response.content)))
                    self.end_headers()
                    self.wfile.write(response.content)
                except OSError:  # the client was killed while we held its response
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _any

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> LoopbackLangfuse:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()

    def arm(self, batches: int) -> None:
        """Hold the response to the score batch that brings the total to `batches` or more."""
        with self._lock:
            self._armed = batches
            self.held.clear()
            self._release.clear()

    def release(self) -> None:
        """Let held responses go (to a dead client, usually) and disarm."""
        with self._lock:
            self._armed = None
        self._release.set()

    def handle(self, method: str, path: str, headers: dict[str, str], body: bytes) -> Any:
        """One request through the fake's router; may block (see `arm`)."""
        headers = {k: v for k, v in headers.items() if k.lower() != "host"}
        request = httpx.Request(method, self.fake.host + path, headers=headers, content=body)
        with self._lock:  # the fake's state is plain dicts and lists: one request at a time
            response = self.fake.router.handler(request)
            hold = (
                self._armed is not None
                and request.url.path == "/api/public/scores"
                and method == "POST"
                and len(self.fake.score_batches) >= self._armed
            )
            if hold:
                self._armed = None
                self.held.set()
        if hold:
            self._release.wait(60)
        return response
