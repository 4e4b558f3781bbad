"""The real Claude Code CLI in the test loop: where its binary is, and a loopback
Messages API it talks to.

    with ClaudeCodeAPI() as api:                      # streams SSE like the real API
        run(claude(), "-p", ..., env=api.env(home))   # ANTHROPIC_BASE_URL → the fake
        api.judge_calls                               # requests that asked for our card

`ClaudeCodeAPI` answers three kinds of request, told apart by what Claude Code sends:

- **judge** requests (the `StructuredOutput` tool is offered and the system prompt is the
  judge's): a `StructuredOutput` tool call carrying a valid scoring or chunk-notes reply
  (by the schema asked), or a scripted fault from `judge_script` (`refusal`, `text`,
  `cut`, `invalid`, an HTTP status such as 429 or 401);
- **agent** requests (Claude Code working on a prompt, with its tools): `agent_steps` Bash
  calls, one per turn, then a final text — enough tool calls for the hook to score;
- anything else (a title, a summary): a short text.

Replies are built with the SDK's own `Message` type (validated), then streamed as
server-sent events when the request asks for a stream, as Claude Code always does.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import threading
from collections import deque
from pathlib import Path
from typing import Any

import httpx2
from anthropic.types import Message

from tests.conftest import REPO
from tests.fakes.anthropic import Loopback, notes_payload, valid_scoring_payload

_IDS = itertools.count(1)
"""Message ids: Claude Code merges consecutive assistant messages that share one."""
CLAUDE_CODE_VERSION = "2.1.197"
"""The pinned CLI `.ci/run` installs (the newest that installs on Node 20)."""
JUDGE_MARK = "You are a careful, calibrated reviewer of coding-agent sessions"
"""Opens the judge's system prompt (`prompts/`): how a judge request is recognised."""


def claude_binary() -> str | None:
    """The Claude Code CLI for tests: `$SCORER_TEST_CLAUDE`, `.ci/claude-code`'s link
    (what `.ci/run` installs), or `claude` on PATH."""
    configured = os.environ.get("SCORER_TEST_CLAUDE")
    if configured:
        return configured if Path(configured).is_file() else None
    installed = REPO / ".ci" / "claude-code" / "bin" / "claude"
    if installed.is_file():
        return str(installed)
    return shutil.which("claude")


def _sse(message: dict[str, Any]) -> bytes:
    """`message` as the Messages API's event stream (text and tool_use blocks)."""
    start = {**message, "content": [], "stop_reason": None}
    start["usage"] = {**message["usage"], "output_tokens": 1}
    events: list[tuple[str, dict[str, Any]]] = [("message_start", {"message": start})]
    for i, block in enumerate(message["content"]):
        if block["type"] == "tool_use":
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            empty = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events += [
            ("content_block_start", {"index": i, "content_block": empty}),
            ("content_block_delta", {"index": i, "delta": delta}),
            ("content_block_stop", {"index": i}),
        ]
    stop = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    usage = {"output_tokens": message["usage"]["output_tokens"]}
    events += [("message_delta", {"delta": stop, "usage": usage}), ("message_stop", {})]
    return "".join(
        f"event: {name}\ndata: {json.dumps({'type': name, **data})}\n\n" for name, data in events
    ).encode()


def _message(body: dict[str, Any], content: list[dict], stop: str, output: int = 60) -> dict:
    message = {
        "id": f"msg_fake_{next(_IDS):06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-sonnet-5-5"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 1_200,
            "output_tokens": output,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },
    }
    Message.model_validate(message)
    return message


def _tool_use(name: str, payload: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_fake{n:04d}", "name": name, "input": payload}


def _error(status: int, message: str = "fake failure") -> httpx2.Response:
    kinds = {401: "authentication_error", 403: "permission_error", 429: "rate_limit_error",
             529: "overloaded_error", 400: "invalid_request_error"}  # fmt: skip
    body = {"type": "error", "error": {"type": kinds.get(status, "api_error"), "message": message}}
    return httpx2.Response(status, json=body, headers={"retry-after": "0"})


class ClaudeCodeAPI:
    """A loopback Messages API for the real Claude Code CLI (see the module doc).

    Args:
        agent_steps: Bash calls the agent makes (one per turn) before its final answer.
        judge_script: Faults to answer judge requests with, in order, before valid replies.
    """

    def __init__(self, agent_steps: int = 3, judge_script: list[str | int] | None = None) -> None:
        self.agent_steps = agent_steps
        self.judge_script: deque[str | int] = deque(judge_script or [])
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server = Loopback(self._handle)
        self._n = 0

    def __enter__(self) -> ClaudeCodeAPI:
        self._server.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.stop()

    @property
    def url(self) -> str:
        return self._server.url

    def env(self, home: Path, **extra: str) -> dict[str, str]:
        """An environment for `claude`: this server, a private HOME and a key (unless
        `extra` removes it with an empty value)."""
        env = {
            "HOME": str(home),
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-for-tests",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "IS_SANDBOX": "1",
        }
        env.update(extra)
        return {k: v for k, v in env.items() if v}

    def kind_of(self, body: dict[str, Any]) -> str:
        tools = {t.get("name") for t in body.get("tools") or []}
        system = json.dumps(body.get("system") or "")
        if "StructuredOutput" in tools and JUDGE_MARK in system:
            return "judge"
        return "agent" if "Bash" in tools else "other"

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r["body"] for r in self.requests if r["kind"] == kind]

    @property
    def judge_calls(self) -> list[dict[str, Any]]:
        """The judge requests received (one per judge call that reached the model)."""
        return self.of_kind("judge")

    def _handle(self, method: str, path: str, headers: dict, raw: bytes) -> httpx2.Response:
        body = json.loads(raw or b"{}")
        if path.split("?")[0].endswith("/count_tokens"):
            return httpx2.Response(200, json={"input_tokens": 1_000})
        kind = self.kind_of(body)
        with self._lock:
            self.requests.append({"path": path, "kind": kind, "body": body, "headers": headers})
            self._n += 1
            n = self._n
        if kind == "judge":
            answer: httpx2.Response | dict = self._judge(body, n)
        elif kind == "agent":
            answer = self._agent(body, n)
        else:
            answer = _message(body, [{"type": "text", "text": "A fake reply."}], "end_turn")
        if isinstance(answer, httpx2.Response):
            return answer
        if body.get("stream"):
            return httpx2.Response(
                200, content=_sse(answer), headers={"content-type": "text/event-stream"}
            )
        return httpx2.Response(200, json=answer)

    def _judge(self, body: dict[str, Any], n: int) -> httpx2.Response | dict:
        with self._lock:
            fault = self.judge_script.popleft() if self.judge_script else None
        if isinstance(fault, int):
            return _error(fault, "Prompt is too long" if fault == 400 else "fake failure")
        if fault == "refusal":
            return _message(body, [{"type": "text", "text": ""}], "refusal", 3)
        if fault == "cut":
            return _message(body, [{"type": "text", "text": '{"requ'}], "max_tokens")
        if fault == "text":
            return _message(body, [{"type": "text", "text": "It went well."}], "end_turn")
        tool = next(t for t in body["tools"] if t["name"] == "StructuredOutput")
        schema = tool.get("input_schema") or {}
        if fault == "invalid":
            payload: dict[str, Any] = {"summary": 5}
        elif "progress" in (schema.get("properties") or {}):
            payload = notes_payload()
        else:
            payload = valid_scoring_payload()
        return _message(body, [_tool_use("StructuredOutput", payload, n)], "tool_use", 900)

    def _agent(self, body: dict[str, Any], n: int) -> dict:
        done = sum(
            1
            for m in body.get("messages", [])
            if m["role"] == "assistant" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        )
        last = body["messages"][-1]
        fresh_prompt = isinstance(last["content"], str) or not any(
            b.get("type") == "tool_result" for b in last["content"]
        )
        if done < self.agent_steps and not (fresh_prompt and done):
            command = {"command": f"echo step {done + 1}", "description": f"Step {done + 1}"}
            return _message(body, [_tool_use("Bash", command, n)], "tool_use")
        return _message(body, [{"type": "text", "text": "All steps are done."}], "end_turn")
