"""The judge's requests sent through the user's own Claude Code (`claude -p`).

Most Claude Code users log in with a subscription and have no API key. This transport
sends the LLM judge's exact request (system prompt, material, output schema, model,
effort, output budget) through `claude -p`, so it runs on whatever login Claude Code has.
The judging step is the same (`AnthropicJudge`); only the send changes, and the reply is
handed back shaped like a Messages API `Message`, so refusals, the larger budget and
invalid output follow the same rules (`judge.calls`).

    params ─► claude -p --output-format json --json-schema S --system-prompt P
                        --tools "" --no-session-persistence --model M --effort E
                        --settings '{"disableAllHooks": true}' …   (material on stdin)
           ◄─ {"structured_output": …, "usage": …, "modelUsage": …}  ─► `ClaudeCodeReply`

No recursion and no trace in the user's history: hooks are disabled for the call (and
`SCORER_HOOK_ENABLED=0` is in its environment), nothing is persisted, and it runs in a
private empty folder, so no project settings, CLAUDE.md or session file of the user's
is read or written.

What a result means (Claude Code's own retries are off: `CLAUDE_CODE_MAX_RETRIES=0`):

    structured_output             a reply (stop_reason end_turn)
    plain text, no structured     a reply that fails validation: one repair, as for the API
    error_max_structured_output_  Claude Code already asked again several times: invalid,
        retries                   no repair of ours (`no_repair`)
    stop_reason refusal           stop_reason refusal: the fallback model, then unscored
    "exceeded the … output token  stop_reason max_tokens: the same request with a larger
        maximum"                  budget (`CLAUDE_CODE_MAX_OUTPUT_TOKENS`)
    400 prompt too long           ContextWindowExceeded: re-chunk
    401/403, not logged in        CredentialsError
    429 (plan limit with a reset) JudgeError at once: waiting minutes will not help
    429/529/5xx, timeout          retried (`judge.retry`), then JudgeError
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.errors import CredentialsError, JudgeError
from scorer.retry import RetryDecision, RetryKind

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0
"""Seconds one `claude -p` call may take before it is killed (`SCORER_CLAUDE_TIMEOUT`)."""
HOOK_SETTINGS = json.dumps({"disableAllHooks": True})
"""Passed with `--settings`: the judging call fires no hook (ours or anyone's)."""
_CUT_OFF = re.compile(r"exceeded the \d+ output token maximum", re.IGNORECASE)
_PLAN_LIMIT = re.compile(r"usage limit|hit your limit|limit reached|resets? (at|in)\b", re.I)
_NOT_LOGGED_IN = re.compile(r"not logged in|please run /login|invalid api key", re.I)
_TOO_LONG = re.compile(r"prompt is too long|too long", re.I)


class ClaudeCodeFailure(JudgeError):
    """A `claude -p` call that failed for a reason worth retrying (rate limit, overload,
    a server error, a timeout); `decision` says which (`judge.retry.classify` reads it)."""

    def __init__(self, message: str, decision: RetryDecision) -> None:
        super().__init__(message)
        self.decision = decision


@dataclass(frozen=True)
class TextBlock:
    """A text content block, as the SDK's `TextBlock` reads."""

    text: str
    type: str = "text"


@dataclass(frozen=True)
class ReplyUsage:
    """Token usage with the SDK's field names (`UsageTally.add` reads these)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


@dataclass(frozen=True)
class ClaudeCodeReply:
    """A `claude -p` result shaped like the Messages API `Message` the judge reads."""

    model: str
    stop_reason: str
    content: list[TextBlock]
    usage: ReplyUsage
    stop_details: Any = None
    no_repair: bool = False
    """Claude Code already asked the model again for valid output: do not repair."""
    reported_cost_usd: float | None = None
    """What Claude Code says the call cost (`total_cost_usd`; API prices, not a plan)."""
    session_id: str | None = None


def find_claude(configured: str | None = None) -> str | None:
    """The `claude` executable: `SCORER_CLAUDE_BIN` when set, else the one on PATH."""
    if configured:
        return configured if Path(configured).is_file() else shutil.which(configured)
    return shutil.which("claude")


@dataclass(frozen=True)
class ClaudeCodeTransport:
    """Sends one judge request (Messages API params) through `claude -p`.

    Args:
        binary: The `claude` executable.
        timeout: Seconds before a call is killed (and retried as transient).
        env: The environment to start it with (default: this process's).
        workdir: Where it runs (default: a private empty temp folder per call).
    """

    binary: str
    timeout: float = DEFAULT_TIMEOUT
    env: Mapping[str, str] | None = None
    workdir: Path | None = None
    extra_args: Sequence[str] = field(default_factory=tuple)

    def __call__(self, params: dict[str, Any]) -> ClaudeCodeReply:
        """Send `params` once (no retries here; `judge.retry` decides).

        Raises:
            ClaudeCodeFailure: Rate limited, overloaded, a server error or a timeout.
            CredentialsError: Claude Code is not logged in, or its login was rejected.
            ContextWindowExceeded: The request is too long for the model.
            JudgeError: Anything else Claude Code refused or failed at.
        """
        argv = self.argv(params)
        stdin = flatten_messages(params["messages"])
        result = self._run(argv, stdin, params)
        return reply_of(result, params)

    def argv(self, params: dict[str, Any]) -> list[str]:
        """The command line of one request (the material goes on stdin)."""
        schema = params["output_config"]["format"]["schema"]
        argv = [
            self.binary, "-p", "--output-format", "json",
            "--json-schema", json.dumps(schema, separators=(",", ":")),
            "--system-prompt", system_text(params["system"]),
            "--tools", "", "--no-session-persistence",
            "--model", params["model"],
            "--settings", HOOK_SETTINGS,
            "--disable-slash-commands", "--strict-mcp-config",
        ]  # fmt: skip
        effort = params.get("output_config", {}).get("effort")
        if effort:
            argv += ["--effort", effort]
        return [*argv, *self.extra_args]

    def environment(self, params: dict[str, Any]) -> dict[str, str]:
        """The call's environment: the user's (so their login applies) plus our limits."""
        env = dict(os.environ if self.env is None else self.env)
        env.update(
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",  # no title call, no telemetry
            CLAUDE_CODE_MAX_RETRIES="0",  # one retry policy: ours
            CLAUDE_CODE_MAX_OUTPUT_TOKENS=str(params["max_tokens"]),
            SCORER_HOOK_ENABLED="0",  # belt and braces against scoring our own call
        )
        env.pop("CLAUDECODE", None)  # a hook inherits it from the session it ran in
        return env

    def _run(self, argv: list[str], stdin: str, params: dict[str, Any]) -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="scorer-judge-") as private:
            cwd = self.workdir or Path(private)
            try:
                done = _run_killable(argv, stdin, self.environment(params), cwd, self.timeout)
            except FileNotFoundError as exc:
                raise JudgeError(f"Claude Code not found: {self.binary}") from exc
        if done is None:
            decision = RetryDecision(RetryKind.TRANSIENT, reason="timeout")
            raise ClaudeCodeFailure(f"claude -p timed out after {self.timeout:.0f} s", decision)
        returncode, out, err = done
        return parse_result(out, err, returncode)


def _run_killable(
    argv: list[str], stdin: str, env: dict[str, str], cwd: Path, timeout: float
) -> tuple[int, str, str] | None:
    """Run to the end, or kill its whole process group at `timeout` (None)."""
    proc = subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=env, cwd=cwd, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return None
    except BaseException:  # Ctrl-C or a stop: leave no judge running behind us
        _kill_group(proc)
        raise
    return proc.returncode, out, err


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def system_text(system: Any) -> str:
    """The system prompt as one text (the API's blocks joined; cache marks dropped)."""
    if isinstance(system, str):
        return system
    return "\n\n".join(block["text"] for block in system if block.get("type") == "text")


def flatten_messages(messages: list[dict[str, Any]]) -> str:
    """The conversation as one prompt: `claude -p` reads one user message on stdin.

    A repair conversation (user, the invalid reply, the error) keeps its turns in order,
    each marked, so the model sees what it answered and why that was not usable.
    """
    texts = [_text_of(m["content"]) for m in messages]
    if len(messages) == 1:
        return texts[0]
    parts = [texts[0]]
    for message, text in zip(messages[1:], texts[1:], strict=True):
        who = "Your previous reply" if message["role"] == "assistant" else "Next request"
        parts.append(f"=== {who} ===\n{text}")
    return "\n\n".join(parts)


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def parse_result(out: str, err: str, returncode: int) -> dict[str, Any]:
    """The JSON result `claude -p --output-format json` printed.

    Raises:
        JudgeError: It printed none (a crash, an unknown option of an old Claude Code).
    """
    for line in reversed(out.strip().splitlines()):
        try:
            result = json.loads(line)
        except ValueError:
            continue
        if isinstance(result, dict) and result.get("type") == "result":
            return result
    said = (err.strip() or out.strip() or f"exit code {returncode}").splitlines()[-1][:300]
    raise JudgeError(f"claude -p gave no result ({said})")


def reply_of(result: dict[str, Any], params: dict[str, Any]) -> ClaudeCodeReply:
    """The reply a result stands for, or the typed error it is (see the module doc)."""
    usage, model = usage_of(result, params["model"])
    text = str(result.get("result") or "")
    cost = result.get("total_cost_usd")
    reply = dict(model=model, usage=usage, session_id=result.get("session_id"),
                 reported_cost_usd=float(cost) if cost is not None else None)  # fmt: skip
    if result.get("structured_output") is not None and not result.get("is_error"):
        payload = json.dumps(result["structured_output"], ensure_ascii=False)
        return ClaudeCodeReply(stop_reason="end_turn", content=[TextBlock(payload)], **reply)  # type: ignore[arg-type]
    if result.get("stop_reason") == "refusal":
        return ClaudeCodeReply(stop_reason="refusal", content=[TextBlock("")], **reply)  # type: ignore[arg-type]
    if _CUT_OFF.search(text):
        return ClaudeCodeReply(stop_reason="max_tokens", content=[TextBlock("")], **reply)  # type: ignore[arg-type]
    if result.get("subtype") == "error_max_structured_output_retries":
        why = "; ".join(result.get("errors") or []) or "no valid structured output"
        return ClaudeCodeReply(
            stop_reason="end_turn", content=[TextBlock(f"(Claude Code: {why})")],
            no_repair=True, **reply,  # type: ignore[arg-type]
        )  # fmt: skip
    if result.get("is_error") or result.get("subtype") != "success":
        raise failure_of(result, text)
    return ClaudeCodeReply(stop_reason="end_turn", content=[TextBlock(text)], **reply)  # type: ignore[arg-type]


def usage_of(result: dict[str, Any], asked: str) -> tuple[ReplyUsage, str]:
    """Summed usage of every model call the run made, and the model that did most of it."""
    per_model = result.get("modelUsage") or {}
    if not per_model:
        u = result.get("usage") or {}
        return ReplyUsage(
            input_tokens=int(u.get("input_tokens") or 0),
            output_tokens=int(u.get("output_tokens") or 0),
            cache_read_input_tokens=int(u.get("cache_read_input_tokens") or 0),
            cache_creation_input_tokens=int(u.get("cache_creation_input_tokens") or 0),
        ), asked
    total = ReplyUsage(
        input_tokens=sum(int(m.get("inputTokens") or 0) for m in per_model.values()),
        output_tokens=sum(int(m.get("outputTokens") or 0) for m in per_model.values()),
        cache_read_input_tokens=sum(
            int(m.get("cacheReadInputTokens") or 0) for m in per_model.values()
        ),
        cache_creation_input_tokens=sum(
            int(m.get("cacheCreationInputTokens") or 0) for m in per_model.values()
        ),
    )
    busiest = max(per_model, key=lambda name: int(per_model[name].get("outputTokens") or 0))
    return total, busiest


def failure_of(result: dict[str, Any], text: str) -> Exception:
    """The typed error of a failed result (see the module doc)."""
    from scorer.judge.client import ContextWindowExceeded

    status = result.get("api_error_status")
    said = " ".join(text.split())[:300] or str(result.get("subtype") or "error")
    if status in (401, 403) or _NOT_LOGGED_IN.search(text):
        return CredentialsError(
            f"Claude Code could not use its login ({said}): run `claude` and /login, "
            "or set ANTHROPIC_API_KEY for the API judge"
        )
    if status == 400 and (result.get("terminal_reason") == "prompt_too_long" or _TOO_LONG.search(text)):  # fmt: skip
        return ContextWindowExceeded(None, 0, None, why=f"claude -p: {said}")
    if result.get("terminal_reason") == "prompt_too_long":
        return ContextWindowExceeded(None, 0, None, why=f"claude -p: {said}")
    if status == 429 and _PLAN_LIMIT.search(text):
        return JudgeError(f"Claude Code's usage limit is reached ({said}); the next run retries")
    if status == 429:
        return ClaudeCodeFailure(
            f"claude -p rate limited ({said})", RetryDecision(RetryKind.RATE_LIMITED, None, "429")
        )
    if status is not None and (status in (408, 409, 529) or int(status) >= 500):
        decision = RetryDecision(RetryKind.TRANSIENT, reason=str(status))
        return ClaudeCodeFailure(f"claude -p failed ({status}: {said})", decision)
    return JudgeError(f"claude -p failed: {said}")
