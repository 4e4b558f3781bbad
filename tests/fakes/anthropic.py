"""A fake Messages API behind the real anthropic client (httpx2.MockTransport).

    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    judge = AnthropicJudge(fake.client())
    ...
    fake.message_bodies[0]["output_config"]

One module for every Anthropic fake in the tests: `FakeAnthropic` (a queue of replies, in
process), `serve(fake)` (the same fake on a loopback port, for code that builds its own
client from `ANTHROPIC_BASE_URL`) and `FakeJudgeServer` (a scripted loopback Messages API
plus Message Batches, with latency and faults, for backfill runs). All replies are built by
the helpers here and validated with the SDK's own types.

Replies are served in order from a queue; an entry may be an `httpx2.Response`, a callable
`(body: dict) -> httpx2.Response` (for replies that depend on the request) or an exception
instance to raise (e.g. `httpx2.ConnectTimeout`). `count_tokens` requests are answered from
`count_tokens_value` (an int, or by default Claude-like: ~1.31 x cl100k, so never equal to
the tiktoken estimate) without using the queue. Every request is kept in `history`.

What the real Sonnet 5.5 does, reproduced here:
    thinking_reply(payload, thinking_tokens=)  thinking blocks first; thinking counts
        against the request's `max_tokens`: when thinking + answer do not fit, the reply is
        cut (`stop_reason: max_tokens`, partial JSON, output_tokens == max_tokens)
    refusal_response(category=)      `stop_reason: refusal` with `stop_details.category`
    context_exceeded_response()      `stop_reason: model_context_window_exceeded`
    model=...                        the reply's `model` may differ from the request's
    streaming                        a request with `"stream": true` gets the same message
                                     as server-sent events (what `messages.stream` reads)
    limits=Limits(rpm, itpm, otpm)   token-bucket rate limits with the real headers on every
                                     Messages response and 429 + `retry-after` when over
                                     (`tests.fakes.ratelimits`); `FakeJudgeServer` then also
                                     caches the system prompt like the real prompt cache
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anthropic
import httpx2
from anthropic.types import Message, MessageTokensCount

from scorer.judge.rubric import Rubric, default_rubric
from tests.fakes.ratelimits import Limits, MeteredAccount, Refused

Reply = httpx2.Response | Callable[[dict], httpx2.Response] | Exception

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def message_json(
    payload: dict | str,
    *,
    stop_reason: str = "end_turn",
    input_tokens: int = 100,
    output_tokens: int = 50,
    cache_read: int = 0,
    cache_write: int = 0,
    model: str = "claude-sonnet-5-5",
    thinking: str | None = None,
    stop_details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Messages API response body, checked against the SDK's own `Message` type.

    `thinking` adds a thinking block before the text (its tokens belong in `output_tokens`).
    """
    text = payload if isinstance(payload, str) else json.dumps(payload)
    content: list[dict[str, Any]] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking, "signature": "sig-fake"})
    if text or stop_reason not in ("refusal", "model_context_window_exceeded"):
        content.append({"type": "text", "text": text})
    body = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_details": stop_details,
        "stop_sequence": None,
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cache_read_input_tokens": cache_read,
            "cache_creation_input_tokens": cache_write,
        },
    }
    Message.model_validate(body)
    return body


def message_response(payload: dict | str, **kwargs: Any) -> httpx2.Response:
    """A 200 response carrying `message_json(payload, **kwargs)`."""
    return httpx2.Response(200, json=message_json(payload, **kwargs))


def thinking_reply(
    payload: dict | str,
    *,
    thinking_tokens: int,
    answer_tokens: int | None = None,
    model: str | None = None,
) -> Callable[[dict], httpx2.Response]:
    """A reply that thinks for `thinking_tokens` first, like Sonnet 5.5 by default.

    Thinking and answer share the request's `max_tokens`: when they do not both fit the
    answer is cut where the budget ends (`stop_reason: max_tokens`). `model` defaults to
    the request's model.
    """
    text = payload if isinstance(payload, str) else json.dumps(payload)
    answer = answer_tokens if answer_tokens is not None else max(1, len(text) // 4)

    def reply(body: dict) -> httpx2.Response:
        budget = body["max_tokens"]
        used_thinking = min(thinking_tokens, budget)
        room = budget - used_thinking
        kwargs: dict[str, Any] = {
            "model": model or body["model"],
            "thinking": "Let me check each requirement against the events. " * 3,
        }
        if answer <= room:
            return message_response(text, output_tokens=used_thinking + answer, **kwargs)
        cut = text[: len(text) * room // answer]
        return message_response(cut, stop_reason="max_tokens", output_tokens=budget, **kwargs)

    return reply


def refusal_response(
    category: str | None = "cyber", *, model: str = "claude-sonnet-5-5"
) -> httpx2.Response:
    """`stop_reason: refusal` with the classifier's category, as Sonnet 5.5 sends it."""
    details = {"type": "refusal", "category": category, "explanation": "policy"}
    return message_response(
        "", stop_reason="refusal", output_tokens=3, model=model, stop_details=details
    )


def context_exceeded_response(input_tokens: int = 990_000) -> httpx2.Response:
    """The model ran out of context window while answering."""
    return message_response(
        "", stop_reason="model_context_window_exceeded", input_tokens=input_tokens
    )


def sse_response(message: dict[str, Any]) -> httpx2.Response:
    """The same message as a Messages API event stream (for `messages.stream`)."""
    start = {**message, "content": [], "stop_reason": None, "stop_details": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for i, block in enumerate(message["content"]):
        if block["type"] == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": block["thinking"]},
                {"type": "signature_delta", "signature": block["signature"]},
            ]
        else:
            empty = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": block["text"]}]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": i, "content_block": empty},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    delta = {
        "stop_reason": message["stop_reason"],
        "stop_sequence": None,
        "stop_details": message.get("stop_details"),
    }
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(("message_stop", {"type": "message_stop"}))
    raw = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events)
    return httpx2.Response(200, content=raw.encode(), headers={"content-type": "text/event-stream"})


def claude_like_count(body: dict[str, Any]) -> int:
    """What `count_tokens` says for a request: ~1.31 x cl100k, never the tiktoken estimate."""
    from scorer.prepare.tokens import TokenCounter

    return math.ceil(TokenCounter(1.0).raw(_request_text(body)) * 1.31) + 7


def _request_text(body: dict[str, Any]) -> str:
    system = "".join(b["text"] for b in body.get("system", []))
    return system + "".join(m["content"] for m in body["messages"] if isinstance(m["content"], str))


def error_response(
    status: int, *, headers: dict[str, str] | None = None, message: str = "fake error"
) -> httpx2.Response:
    """An Anthropic-shaped error response."""
    body = {
        "type": "error",
        "error": {"type": _ERROR_TYPES.get(status, "api_error"), "message": message},
    }
    return httpx2.Response(status, json=body, headers=headers or {})


def with_headers(response: httpx2.Response, headers: Any) -> httpx2.Response:
    """The same response with `headers` added (rate-limit headers on a canned reply)."""
    merged = {**dict(response.headers), **dict(headers)}
    merged.pop("content-length", None)
    return httpx2.Response(response.status_code, content=response.content, headers=merged)


def rate_limited(refused: Refused) -> httpx2.Response:
    """The 429 the API sends when a request is over a rate limit."""
    return error_response(429, headers=refused.headers, message=refused.message)


CONFIDENCE = {"met": 90, "likely_met": 65, "unmet": 10, "not_attempted": 3}
"""The confidence a fake reply gives a requirement of each status."""


def valid_scoring_payload(
    rubric: Rubric | None = None,
    *,
    events: tuple[int, ...] = (1,),
    numeric: int = 4,
    labels: dict[str, str] | None = None,
    recommendation: str = "complete",
    requirements: list[tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """A scoring reply that validates against `scoring_model(rubric)`.

    `requirements`: `(requirement, status)` pairs; a `met` one cites `events`.
    """
    rubric = rubric or default_rubric()
    labels = labels or {}
    checks = requirements if requirements is not None else [("fix the date parser", "met")]
    reply: dict[str, Any] = {
        "requirements": [
            {
                "requirement": text,
                "core": True,
                "evidence": [{"event": e, "quote": f"quote {e}"} for e in events]
                if status == "met"
                else [],
                "status": status,
                "confidence": CONFIDENCE[status],
            }
            for text, status in checks
        ],
        "accomplishments": ["fixed the bug"],
        "failures": [],
    }
    for cfg in rubric.dimensions:
        value: Any = numeric
        if cfg.data_type == "CATEGORICAL":
            value = labels.get(cfg.name, cfg.labels[-2])
        reply[cfg.name] = {
            "evidence": [{"event": e, "quote": f"quote {e}"} for e in events],
            "rationale": f"{cfg.name} rationale",
            "value": value,
        }
    reply["summary"] = "The agent fixed the bug and ran the tests."
    reply["recommendation"] = recommendation
    return reply


def notes_payload(events: tuple[int, ...] = (1,), progress: str = "progress") -> dict[str, Any]:
    """A `ChunkNotes` reply."""
    return {
        "progress": progress,
        "errors_and_recoveries": [],
        "tool_patterns": ["targeted reads"],
        "evidence": [{"event": e, "quote": f"quote {e}"} for e in events],
        "open_questions": [],
    }


class FakeAnthropic:
    """A queue of canned replies and a history of requests, thread-safe."""

    def __init__(
        self,
        replies: list[Reply] | None = None,
        *,
        count_tokens_value: int | None = 1000,
        limits: Limits | None = None,
        clock: Callable[[], float] = time.monotonic,
        time_scale: float = 1.0,
    ):
        self.replies: deque[Reply] = deque(replies or [])
        self.history: list[Recorded] = []
        self.count_tokens_value = count_tokens_value
        self.account = (
            MeteredAccount(limits, clock=clock, time_scale=time_scale) if limits else None
        )
        """The metered rate limits (None: unlimited); a refused request keeps its reply queued."""
        self._lock = threading.Lock()

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        with self._lock:
            self.history.append(Recorded(request.url.path, dict(request.headers), body))
            if request.url.path.endswith("/count_tokens"):
                value = self.count_tokens_value
                count = {"input_tokens": value if value is not None else claude_like_count(body)}
                MessageTokensCount.model_validate(count)
                return httpx2.Response(200, json=count)
            if not self.replies:  # a 4xx is fatal, so an unexpected call fails the test loudly
                return error_response(418, message="FakeAnthropic: no reply queued")
            reply = self.replies.popleft()
        if isinstance(reply, Exception):
            raise reply
        response = reply(body) if callable(reply) else reply
        if self.account is not None and request.url.path.endswith("/v1/messages"):
            response = self._metered(body, reply, response)
        if body.get("stream") and response.status_code == 200:
            return with_headers(sse_response(json.loads(response.content)), response.headers)
        return response

    def _metered(self, body: dict, reply: Reply, response: httpx2.Response) -> httpx2.Response:
        """Charge the reply's usage to the account: a 429 (the reply stays queued) or the
        response with the rate-limit headers."""
        assert self.account is not None
        model = body.get("model", "")
        if response.status_code != 200:
            return with_headers(response, self.account.headers(model))
        usage = json.loads(response.content)["usage"]
        charged = usage["input_tokens"] + (usage.get("cache_creation_input_tokens") or 0)
        grant = self.account.admit(model, input_tokens=charged, max_tokens=body["max_tokens"])
        if isinstance(grant, Refused):
            with self._lock:
                self.replies.appendleft(reply)
            return rate_limited(grant)
        return with_headers(
            response, self.account.finish(grant, output_tokens=usage["output_tokens"])
        )

    def client(self, **kwargs: Any) -> anthropic.Anthropic:
        """The real SDK client wired to this fake."""
        transport = httpx2.MockTransport(self.handler)
        return anthropic.Anthropic(
            api_key="test",
            base_url="https://api.test",
            http_client=httpx2.Client(transport=transport),
            max_retries=0,
            **kwargs,
        )

    @property
    def message_bodies(self) -> list[dict[str, Any]]:
        """Bodies of the `/v1/messages` calls, in arrival order."""
        return [r.body for r in self.history if r.path.endswith("/v1/messages")]

    @property
    def count_token_bodies(self) -> list[dict[str, Any]]:
        return [r.body for r in self.history if r.path.endswith("/count_tokens")]


class Loopback:
    """A threaded HTTP server on 127.0.0.1 (free port) answering through `handle`.

    Args:
        handle: `(method, path, headers, body) -> httpx2.Response`.
    """

    def __init__(self, handle: Callable[[str, str, dict, bytes], httpx2.Response]) -> None:
        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                response = handle(self.command, self.path, dict(self.headers), body)
                raw = response.read()
                self.send_response(response.status_code)
                for key, value in response.headers.items():
                    if key.lower() not in {
                        "content-length",
                        "transfer-encoding",
                        "content-encoding",
                    }:
                        self.send_header(key, value)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serve(fake: FakeAnthropic) -> Iterator[str]:
    """Serve a `FakeAnthropic` on loopback for the duration; yields its base URL."""

    def handle(method: str, path: str, headers: dict, body: bytes) -> httpx2.Response:
        request = httpx2.Request(method, f"http://loopback{path}", headers=headers, content=body)
        return fake.handler(request)

    server = Loopback(handle)
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


# --- loopback servers (for code that builds its own client from ANTHROPIC_BASE_URL) ---


SERVER_THINKING_TOKENS = {
    "low": 500,
    "medium": 2_000,
    "high": 5_000,
    "xhigh": 10_000,
    "max": 16_000,
}
"""Thinking tokens `FakeJudgeServer` bills per reply at each effort (a little under typical)."""


class FakeJudgeServer:
    """Messages API + Message Batches on 127.0.0.1, with latency and injected faults.

    Args:
        latency: Seconds each `/v1/messages` call sleeps.
        faults: Statuses to answer before succeeding, consumed in order across calls
            (e.g. `[429, 529, 500]`); 429/529 carry `retry-after: 0`.
        batch_polls: How many `retrieve` calls a batch stays `in_progress`.

    Message Batches like the real API: `created_at` is the server's clock, the list is
    newest first with `limit` (default 20) and `after_id` / `before_id` pages. Two hooks
    stand in for what a client cannot see: `on_create(batch_id)` runs once the batch
    exists and before the reply is sent (a test kills the client there), and
    `create_faults` are statuses answered *after* creating the batch (a 500 whose batch
    was made anyway).
        limits: Meter `/v1/messages` like the real API (`tests.fakes.ratelimits`): the
            rate-limit headers on every response, 429 + `retry-after` when over a limit,
            and the system prompt cached (read at no ITPM charge) for five minutes.
        time_scale: The metered fake's minute lasts `60 / time_scale` seconds (the cache
            lifetime too); `latency` is not scaled.
    """

    def __init__(
        self,
        latency: float = 0.0,
        faults: list[int] | None = None,
        batch_polls: int = 1,
        *,
        limits: Limits | None = None,
        time_scale: float = 1.0,
    ) -> None:
        from scorer.prepare.tokens import TokenCounter

        self.latency = latency
        self.account = MeteredAccount(limits, time_scale=time_scale) if limits else None
        self.latencies: list[float] = []
        """Seconds each admitted metered call spent in the fake (the reply's latency)."""
        self._cached: dict[str, float] = {}
        self.faults = list(faults or [])
        self.counter = TokenCounter(1.25)
        self.calls = 0
        self.fault_count = Counter()
        self.input_tokens = 0
        self.batches: dict[str, dict] = {}
        self.batch_creates = 0
        self.batch_polls = batch_polls
        self.on_create: Callable[[str], None] | None = None
        self.create_faults: list[int] = []
        self.gate: threading.Event | None = None
        """When set to an Event, every `/v1/messages` call waits for it before answering
        (tests hold the calls of several processes until all of them have started)."""
        self._lock = threading.Lock()
        self._server = Loopback(self.handle)
        self.url = self._server.url

    def __enter__(self) -> FakeJudgeServer:
        self._server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.stop()

    def handle(self, method: str, path: str, headers: dict, content: bytes) -> httpx2.Response:
        if method == "GET":
            status, payload, extra = self.handle_get(path)
        else:
            body = json.loads(content or b"{}")
            status, payload, extra = self.handle_post(path, body)
            if status == 200 and body.get("stream"):  # `messages.stream` (large max_tokens)
                streamed = sse_response(payload)
                return httpx2.Response(200, content=streamed.content, headers=streamed.headers)
        raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        extra.setdefault("content-type", "application/json")
        return httpx2.Response(status, content=raw, headers=extra)

    def reply_for(self, body: dict) -> dict:
        """A valid Message for a request (notes or scoring, judged by its schema)."""
        return self._message(body, self.counter.count(_request_text(body)))

    def _message(self, body: dict, tokens: int, read: int = 0, write: int = 0) -> dict:
        """The reply to `body` billing `tokens` of input, `read`/`write` of them cached."""
        schema = json.dumps(body.get("output_config", {}))
        payload = notes_payload() if '"progress"' in schema else valid_scoring_payload()
        with self._lock:
            self.input_tokens += tokens
        effort = body.get("output_config", {}).get("effort", "high")  # the model's default
        thinking = SERVER_THINKING_TOKENS[effort]
        return message_json(
            payload,
            input_tokens=tokens - read - write,
            cache_read=read,
            cache_write=write,
            output_tokens=400 + thinking,
            thinking="Checking.",
        )

    def _cached_prefix(self, body: dict) -> tuple[str, int, bool]:
        """The request's cached system prompt: (text, tokens, already in the cache)."""
        text = "".join(b["text"] for b in body.get("system", []) if b.get("cache_control"))
        if not text:
            return "", 0, False
        with self._lock:
            warm = self._cached.get(text, 0.0) > time.monotonic()
        return text, self.counter.count(text), warm

    def _metered(self, body: dict, account: MeteredAccount) -> tuple[int, Any, dict]:
        """Admit the request against the account's buckets, answer after `latency`."""
        began = time.monotonic()
        prefix, cached, warm = self._cached_prefix(body)
        tokens = self.counter.count(_request_text(body))
        charged = tokens - cached if warm else tokens  # cache reads are not charged
        grant = account.admit(body["model"], input_tokens=charged, max_tokens=body["max_tokens"])
        if isinstance(grant, Refused):
            return 429, json.loads(rate_limited(grant).content), grant.headers
        read, write = (cached, 0) if warm else (0, cached)
        message = self._message(body, tokens, read, write)
        if prefix:  # written or read: cached for five (fake) minutes from now
            with self._lock:
                self._cached[prefix] = time.monotonic() + 5 * account.period
        if self.latency:
            time.sleep(self.latency)
        headers = account.finish(grant, output_tokens=message["usage"]["output_tokens"])
        with self._lock:
            self.latencies.append(time.monotonic() - began)
        return 200, message, headers

    def handle_post(self, path: str, body: dict) -> tuple[int, Any, dict]:
        if path.endswith("/v1/messages/batches"):
            return self._create_batch(body)
        if path.endswith("/count_tokens"):  # what the same request would bill
            count = {"input_tokens": self.counter.count(_request_text(body))}
            MessageTokensCount.model_validate(count)
            return 200, count, {}
        if self.gate is not None:
            self.gate.wait()
        with self._lock:
            self.calls += 1
            fault = self.faults.pop(0) if self.faults else None
        if fault:
            self.fault_count[fault] += 1
            headers = {"retry-after": "0"} if fault in (429, 529) else {}
            err = error_response(fault)
            return fault, json.loads(err.content), headers
        if self.account is not None:
            return self._metered(body, self.account)
        if self.latency:
            time.sleep(self.latency)
        return 200, self.reply_for(body), {}

    # --- Message Batches

    def _create_batch(self, body: dict) -> tuple[int, Any, dict]:
        with self._lock:
            self.batch_creates += 1
            bid = f"msgbatch_{len(self.batches) + 1:04d}"
            now = datetime.now(UTC)
            self.batches[bid] = {"requests": body["requests"], "polls": 0, "created_at": now}
            fault = self.create_faults.pop(0) if self.create_faults else None
        if self.on_create is not None:
            self.on_create(bid)
        if fault:
            return fault, json.loads(error_response(fault).content), {}
        return 200, self._batch_json(bid, "in_progress"), {}

    def add_batch(self, custom_ids: list[str], *, ended: bool, ago: float = 0.0) -> str:
        """A batch someone else made (a decoy), `ago` seconds before now."""
        with self._lock:
            bid = f"msgbatch_{len(self.batches) + 1:04d}"
            when = datetime.now(UTC) - timedelta(seconds=ago)
            requests = [
                {"custom_id": c, "params": {"model": "x", "max_tokens": 1, "messages": []}}
                for c in custom_ids
            ]
            polls = self.batch_polls + 1 if ended else -(10**9)
            self.batches[bid] = {"requests": requests, "polls": polls, "created_at": when}
        return bid

    def _status(self, bid: str) -> str:
        return "ended" if self.batches[bid]["polls"] > self.batch_polls else "in_progress"

    def _list_batches(self, query: str) -> dict:
        """`GET /v1/messages/batches`: newest first, `limit`, `after_id` / `before_id`."""
        args = {k: v[0] for k, v in parse_qs(query).items()}
        limit = int(args.get("limit", 20))
        if not 1 <= limit <= 1000:
            raise ValueError(f"limit {limit} out of range")
        with self._lock:
            ids = sorted(self.batches, key=lambda b: self.batches[b]["created_at"], reverse=True)
            if "after_id" in args:
                ids = ids[ids.index(args["after_id"]) + 1 :]
            elif "before_id" in args:
                ids = ids[: ids.index(args["before_id"])][-limit:]
            page = ids[:limit]
            data = [self._batch_json(b, self._status(b)) for b in page]
        more = len(ids) > limit
        return {
            "data": data,
            "has_more": more,
            "first_id": page[0] if page else None,
            "last_id": page[-1] if page else None,
        }

    def _batch_json(self, bid: str, status: str) -> dict:
        n = len(self.batches[bid]["requests"])
        done = status == "ended"
        created = self.batches[bid].get("created_at") or datetime(2026, 11, 22, tzinfo=UTC)
        return {
            "id": bid,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": 0 if done else n,
                "succeeded": n if done else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": created.isoformat().replace("+00:00", "Z"),
            "expires_at": (created + timedelta(days=1)).isoformat().replace("+00:00", "Z"),
            "ended_at": created.isoformat().replace("+00:00", "Z") if done else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{bid}/results" if done else None,
        }

    def handle_get(self, path: str) -> tuple[int, Any, dict]:
        split = urlsplit(path)
        parts = split.path.rstrip("/").split("/")
        if parts[-1] == "batches":
            return 200, self._list_batches(split.query), {}
        if parts[-1] == "results":
            bid = parts[-2]
            lines = [
                json.dumps(
                    {
                        "custom_id": r["custom_id"],
                        "result": {"type": "succeeded", "message": self.reply_for(r["params"])},
                    }
                )
                for r in self.batches[bid]["requests"]
            ]
            return 200, ("\n".join(lines) + "\n").encode(), {"content-type": "application/binary"}
        bid = parts[-1]
        with self._lock:
            self.batches[bid]["polls"] += 1
            ended = self.batches[bid]["polls"] > self.batch_polls
        return 200, self._batch_json(bid, "ended" if ended else "in_progress"), {}
