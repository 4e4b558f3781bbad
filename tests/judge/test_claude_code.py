"""The `claude-code` judge: the same requests and cards, sent through `claude -p`.

The mapping from Claude Code's JSON result to a reply or a typed error is pure and tested
on results recorded from Claude Code 2.1.197 (shapes below); the transport itself runs
the real CLI (`.ci/run` installs it) against a loopback Messages API
(`tests/fakes/claude_code.py`).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from scorer.errors import CredentialsError, JudgeError
from scorer.judge.anthropic import AnthropicJudge, ContextWindowExceeded
from scorer.judge.claude_code import (
    ClaudeCodeFailure,
    ClaudeCodeTransport,
    flatten_messages,
    reply_of,
    system_text,
)
from scorer.judge.retry import classify
from scorer.models import Session
from scorer.prepare import prepare
from scorer.retry import RetryKind
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import valid_scoring_payload
from tests.fakes.claude_code import ClaudeCodeAPI

PARAMS = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 16_000,
    "system": [{"type": "text", "text": "Judge.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "the material"}],
    "output_config": {"effort": "medium", "format": {"type": "json_schema", "schema": {}}},
}
USAGE = {"input_tokens": 1000, "output_tokens": 50, "cache_read_input_tokens": 0,
         "cache_creation_input_tokens": 0}  # fmt: skip
MODEL_USAGE = {"claude-sonnet-5-5": {"inputTokens": 2000, "outputTokens": 100,
               "cacheReadInputTokens": 30, "cacheCreationInputTokens": 7, "costUSD": 0.0075}}  # fmt: skip


def result(**fields) -> dict:
    """A `claude -p --output-format json` result (2.1.197's fields)."""
    base = {"type": "result", "subtype": "success", "is_error": False, "api_error_status": None,
            "num_turns": 1, "result": "", "stop_reason": "end_turn", "session_id": "s1",
            "total_cost_usd": 0.0075, "usage": USAGE, "modelUsage": MODEL_USAGE}  # fmt: skip
    return {**base, **fields}


# --- the mapping (pure) -------------------------------------------------------------


def test_structured_output_is_the_reply_text_with_every_calls_usage():
    reply = reply_of(result(structured_output={"a": 1}, stop_reason="tool_use"), PARAMS)
    assert reply.stop_reason == "end_turn"
    assert json.loads(reply.content[0].text) == {"a": 1}
    assert reply.model == "claude-sonnet-5-5"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (2000, 100)
    assert (reply.usage.cache_read_input_tokens, reply.usage.cache_creation_input_tokens) == (30, 7)
    assert reply.reported_cost_usd == 0.0075 and not reply.no_repair


@pytest.mark.parametrize(
    ("fields", "stop", "no_repair"),
    [
        ({"is_error": True, "stop_reason": "refusal", "result": "API Error: ... Usage Policy"},
         "refusal", False),
        ({"is_error": True, "result": "API Error: Claude's response exceeded the 64000 output "
          "token maximum. To configure this behavior, set CLAUDE_CODE_MAX_OUTPUT_TOKENS."},
         "max_tokens", False),
        ({"subtype": "error_max_structured_output_retries", "is_error": True,
          "errors": ["Failed to provide valid structured output after 5 attempts"]},
         "end_turn", True),
        ({"result": "I think it went well."}, "end_turn", False),
    ],
)  # fmt: skip
def test_what_the_model_did_maps_to_the_stop_reasons_the_judge_follows(fields, stop, no_repair):
    reply = reply_of(result(**fields), PARAMS)
    assert (reply.stop_reason, reply.no_repair) == (stop, no_repair)


@pytest.mark.parametrize(
    ("fields", "error", "retry"),
    [
        ({"api_error_status": 401, "result": "Failed to authenticate. API Error: 401 nope"},
         CredentialsError, None),
        ({"result": "Not logged in · Please run /login"}, CredentialsError, None),
        ({"api_error_status": 400, "terminal_reason": "prompt_too_long",
          "result": "Prompt is too long"}, ContextWindowExceeded, None),
        ({"api_error_status": 429, "result": "API Error: Request rejected (429) · slow down"},
         ClaudeCodeFailure, RetryKind.RATE_LIMITED),
        ({"api_error_status": 429, "result": "Claude AI usage limit reached · resets 3pm"},
         JudgeError, RetryKind.FATAL),
        ({"api_error_status": 529, "result": "API Error: 529 overloaded"},
         ClaudeCodeFailure, RetryKind.TRANSIENT),
        ({"api_error_status": 500, "result": "API Error: 500"}, ClaudeCodeFailure,
         RetryKind.TRANSIENT),
        ({"api_error_status": 404, "result": "model not found"}, JudgeError, RetryKind.FATAL),
    ],
)  # fmt: skip
def test_failures_map_onto_the_api_judges_errors_and_retry_rules(fields, error, retry):
    with pytest.raises(error) as caught:
        reply_of(result(is_error=True, **fields), PARAMS)
    if retry is not None:
        assert classify(caught.value).kind is retry


def test_a_repair_conversation_is_one_prompt_with_its_turns_marked():
    text = flatten_messages(
        [
            {"role": "user", "content": "MATERIAL"},
            {"role": "assistant", "content": '{"bad": 1}'},
            {"role": "user", "content": "Your reply could not be used: x"},
        ]
    )
    assert text.index("MATERIAL") < text.index('{"bad": 1}') < text.index("could not be used")
    assert "=== Your previous reply ===" in text
    assert system_text(PARAMS["system"]) == "Judge."


def test_the_command_line_asks_for_no_tools_no_hooks_no_history_and_the_schema():
    argv = ClaudeCodeTransport("claude").argv(PARAMS)
    assert argv[:2] == ["claude", "-p"]
    for flag in ("--no-session-persistence", "--strict-mcp-config", "--disable-slash-commands"):
        assert flag in argv
    pairs = dict(zip(argv[2::1], argv[3::1], strict=False))  # noqa: RUF007 - flag → value
    assert pairs["--tools"] == "" and pairs["--model"] == "claude-sonnet-5-5"
    assert pairs["--effort"] == "medium" and pairs["--system-prompt"] == "Judge."
    assert json.loads(pairs["--settings"]) == {"disableAllHooks": True}
    assert json.loads(pairs["--json-schema"]) == {}
    env = ClaudeCodeTransport("claude", env={"CLAUDECODE": "1", "HOME": "/h"}).environment(PARAMS)
    assert env["SCORER_HOOK_ENABLED"] == "0" and "CLAUDECODE" not in env
    assert env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] == "16000" and env["HOME"] == "/h"


# --- the real CLI against a loopback API -------------------------------------------------


def logged_in_home(tmp_path: Path) -> Path:
    """A HOME whose Claude Code login is an `apiKeyHelper` (no key in the environment)."""
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"apiKeyHelper": "echo sk-ant-helper"}')
    return home


def demo() -> Session:
    return resolve(str(REPO / "examples" / "demo-session.jsonl")).load()


def judge_via(claude: str, api: ClaudeCodeAPI, home: Path, **extra: str) -> AnthropicJudge:
    env = api.env(home, ANTHROPIC_API_KEY="", **extra)
    return AnthropicJudge(None, transport=ClaudeCodeTransport(claude, env=env, timeout=60))


def test_a_logged_in_claude_code_gives_the_same_card_as_the_api(claude, tmp_path):
    with ClaudeCodeAPI() as api:
        card = judge_via(claude, api, logged_in_home(tmp_path)).judge(prepare(demo()))
        (body,) = api.judge_calls
    assert card.status == "scored" and card.judge == "llm" and card.backend == "claude-code"
    assert card.scores["goal_achievement"].label == "complete"
    assert card.usage.requests == 1 and card.usage.output_tokens == 900 and card.cost_usd > 0
    assert body["model"] == "claude-sonnet-5-5" and body["output_config"]["effort"] == "medium"
    assert "careful, calibrated reviewer" in json.dumps(body["system"])
    assert "median" in json.dumps(body["messages"])  # the material went on stdin
    assert not list((tmp_path / "home" / ".claude").glob("projects/**/*.jsonl"))  # no history


def test_a_refusal_is_retried_on_the_fallback_model(claude, tmp_path):
    with ClaudeCodeAPI(judge_script=["refusal"]) as api:
        card = judge_via(claude, api, logged_in_home(tmp_path)).judge(prepare(demo()))
        models = [b["model"] for b in api.judge_calls]
    assert models == ["claude-sonnet-5-5", "claude-sonnet-4-6"]
    assert card.status == "scored" and card.refusals[0].model == "claude-sonnet-5-5"


def test_invalid_output_is_repaired_once_then_unscored(claude, tmp_path):
    with ClaudeCodeAPI(judge_script=["text", "text", "text", "text"]) as api:
        card = judge_via(claude, api, logged_in_home(tmp_path)).judge(prepare(demo()))
        n = len(api.judge_calls)
    assert card.status == "unscored" and card.unscored_code == "invalid_output"
    assert "It went well." in (card.raw_reply or "") and n >= 2


def test_rate_limits_are_retried_by_our_policy(claude, tmp_path, fast_retry_waits):
    with ClaudeCodeAPI(judge_script=[429, 529]) as api:
        card = judge_via(claude, api, logged_in_home(tmp_path)).judge(prepare(demo()))
        n = len(api.judge_calls)
    assert card.status == "scored" and n == 3 and len(fast_retry_waits.anthropic) == 2


def test_not_logged_in_is_a_credentials_error_naming_what_to_do(claude, tmp_path):
    home = tmp_path / "bare-home"
    home.mkdir()
    with ClaudeCodeAPI() as api, pytest.raises(CredentialsError, match="/login"):
        judge_via(claude, api, home).judge(prepare(demo()))


def test_a_hung_call_is_killed_at_the_timeout(tmp_path):
    sleeper = tmp_path / "claude"
    sleeper.write_text("#!/bin/sh\nsleep 30\n")
    sleeper.chmod(0o755)
    transport = ClaudeCodeTransport(str(sleeper), timeout=0.5)
    with pytest.raises(ClaudeCodeFailure, match="timed out") as caught:
        transport({**PARAMS, "output_config": {"format": {"schema": {}}}})
    assert classify(caught.value).kind is RetryKind.TRANSIENT


def test_score_session_judge_claude_code_end_to_end(claude, tmp_path):
    home = logged_in_home(tmp_path)
    with ClaudeCodeAPI() as api:
        env = {**api.env(home, ANTHROPIC_API_KEY=""), "SCORER_HOME": str(tmp_path / "sh"),
               "SCORER_CLAUDE_BIN": claude}  # fmt: skip
        done = subprocess.run(
            [str(REPO / ".venv" / "bin" / "score-session"), str(REPO / "examples" / "demo-session.jsonl"),
             "--judge", "claude-code", "--json"],
            env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["judge"] == "llm" and card["backend"] == "claude-code"
    assert valid_scoring_payload()["summary"] == card["summary"]
