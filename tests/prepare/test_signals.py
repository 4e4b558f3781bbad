from __future__ import annotations

import pytest

from scorer.models import Event, Session, SourceKind
from scorer.prepare import (
    claims_success,
    compute_signals,
    looks_like_test_command,
    parse_test_output,
)
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.stream_json import StreamJsonSource
from tests.conftest import SPOTTER, TERMINAL_BENCH, require
from tests.prepare.sessions import Builder, sample_session


def test_sample_session_signals():
    sig = compute_signals(sample_session())
    assert sig.tool_calls == 7
    assert sig.calls_per_tool == {
        "Bash": 2,
        "Edit": 1,
        "Grep": 1,
        "Read": 1,
        "Task": 1,
        "mcp__thing__do": 1,
    }
    assert sig.tool_errors == 1 and sig.tool_error_rate == pytest.approx(1 / 7)
    assert sig.error_events == [6, 16]
    assert [
        (r.framework, r.passed, r.failed, r.ok, r.call_event, r.result_event) for r in sig.test_runs
    ] == [
        ("pytest", 3, 1, False, 5, 6),
        ("pytest", 4, 0, True, 20, 21),
    ]
    assert sig.last_test_run is not None and sig.last_test_run.ok
    assert sig.files_written == ["src/x.py"]
    assert sig.compactions == [15] and sig.api_errors == [16] and sig.interruptions == [17]
    assert sig.subagents == 1 and sig.human_prompts == 1
    assert sig.cache_hit_ratio == pytest.approx(0.9) and sig.duration_seconds == 750
    assert sig.final_message_event == 22 and sig.claims_success is True


def test_repeated_failures_and_retries():
    b = Builder()
    events: list[Event] = []
    for _ in range(3):
        call = b.call("Bash", command="make build")
        events += [call, b.result(call, "Exit code 2\nboom")]  # failure from the text alone
    other = b.call("Bash", command="ls")
    events += [other, b.result(other, "a b")]
    again = b.call("Bash", command="make build")
    events += [again, b.result(again, "boom", is_error=True)]
    sig = compute_signals(Session(session_id="r", source=SourceKind.CLAUDE_CODE, events=events))
    assert sig.tool_errors == 4
    assert sig.retries == [3, 5]  # #9 follows a successful `ls`, so it is no retry
    assert len(sig.repeated_failures) == 1
    rep = sig.repeated_failures[0]
    assert (rep.tool, rep.call, rep.events) == ("Bash", "Bash: make build", [1, 3, 5, 9])


def test_test_run_from_exit_code_when_output_unparsed():
    b = Builder()
    call = b.call("Bash", command="npm test")
    events = [call, b.result(call, "npm ERR! Test failed.", is_error=True, exit_code=1)]
    sig = compute_signals(Session(session_id="n", source=SourceKind.CLAUDE_CODE, events=events))
    assert [(r.framework, r.ok) for r in sig.test_runs] == [("exit-code", False)]


def test_empty_session():
    sig = compute_signals(Session(session_id="e", source=SourceKind.TMUX))
    assert sig.tool_calls == 0 and sig.tool_error_rate is None and sig.claims_success is None


PYTEST = "============================== 4 failed, 1 passed in 0.20s =========================="
PYTEST_Q = (
    "..F.\nFAILED tests/test_a.py::test_x - assert 1 == 2\n1 failed, 3 passed, 2 skipped in 0.12s"
)
PYTEST_ERR = "======================== 1 passed, 133 errors in 0.35s ========================="
JEST = "Test Suites: 1 failed, 2 passed, 3 total\nTests:       2 failed, 10 passed, 12 total\nSnapshots:   0 total"
VITEST = " Test Files  1 failed | 3 passed (4)\n      Tests  1 failed | 20 passed | 2 skipped (23)\n   Start at  10:00:00"
GO_FAIL = "--- FAIL: TestAdd (0.00s)\n    add_test.go:9: got 3\n--- PASS: TestSub (0.00s)\nFAIL\nFAIL\texample.com/m\t0.004s"
GO_OK = "ok  \texample.com/m\t0.003s\nok  \texample.com/m/sub\t(cached)"
CARGO = "test result: ok. 5 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured"
MIX = "Finished in 1.2 seconds (0.5s async, 0.7s sync)\n297 tests, 11 failures"
UNITTEST = "......\n----------------------------------------------------------------------\nRan 6 tests in 0.010s\n\nFAILED (failures=1, errors=1)"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PYTEST, ("pytest", 1, 4, 0, 0, False)),
        (PYTEST_Q, ("pytest", 3, 1, 0, 2, False)),
        (PYTEST_ERR, ("pytest", 1, 0, 133, 0, False)),
        ("== 2 passed in 0.05s ==", ("pytest", 2, 0, 0, 0, True)),
        (JEST, ("jest", 10, 2, 0, 0, False)),
        (VITEST, ("vitest", 20, 1, 0, 2, False)),
        (GO_FAIL, ("go", 1, 1, 0, 0, False)),
        (GO_OK, ("go", 2, 0, 0, 0, True)),
        (CARGO, ("cargo", 7, 1, 0, 1, False)),
        (MIX, ("mix", 286, 11, 0, 0, False)),
        (UNITTEST, ("unittest", 4, 1, 1, 0, False)),
        ("Ran 3 tests in 0.001s\n\nOK", ("unittest", 3, 0, 0, 0, True)),
    ],
)
def test_parse_test_output(text, expected):
    run = parse_test_output(text)
    assert run is not None
    assert (run.framework, run.passed, run.failed, run.errors, run.skipped, run.ok) == expected


def test_parse_test_output_none_for_other_text():
    assert parse_test_output("compiled 3 files\nall good") is None


def test_test_command_detection():
    assert looks_like_test_command("cd app && python -m pytest -x tests/")
    assert looks_like_test_command("go test ./...") and looks_like_test_command("yarn test --ci")
    assert not looks_like_test_command("git commit -m 'add tests'")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("All tests pass and the feature is implemented.", True),
        ("I successfully refactored the module.", True),
        ("I could not get the build to work.", False),
        ("Done, but 2 tests are still failing.", False),
        ("Here is the plan for the next step.", None),
    ],
)
def test_claims_success(text, expected):
    assert claims_success(text) is expected


def test_real_big_session_signals(big_session):
    sig = compute_signals(ClaudeCodeSource(big_session).load())
    assert sig.tool_calls == 254
    assert sig.calls_per_tool["Bash"] == 120 and sig.calls_per_tool["Edit"] == 67
    assert sig.tool_errors == 12 and sig.subagents == 1 and len(sig.compactions) == 1
    mix_runs = [r for r in sig.test_runs if r.framework == "mix"]
    assert len(mix_runs) == 9 and (mix_runs[2].passed, mix_runs[2].failed) == (286, 11)
    assert sig.last_test_run is not None and (sig.last_test_run.passed, sig.last_test_run.ok) == (
        309,
        True,
    )
    assert any(len(r.events) == 5 for r in sig.repeated_failures)
    assert len(sig.files_written) == 21


def test_real_spotter_small_transcripts():
    short = compute_signals(ClaudeCodeSource(require(SPOTTER / "short.jsonl")).load())
    assert (short.tool_calls, short.tool_errors, short.interruptions) == (2, 2, [8])
    heavy = compute_signals(ClaudeCodeSource(require(SPOTTER / "tool_heavy.jsonl")).load())
    assert heavy.tool_calls == 6 and heavy.tool_errors == 0 and heavy.interruptions == [7, 23]
    sub = compute_signals(ClaudeCodeSource(require(SPOTTER / "subagent.jsonl")).load())
    assert sub.subagents == 1 and sub.calls_per_tool["WebSearch"] == 5


def test_real_pytest_runs_in_terminal_bench():
    path = require(TERMINAL_BENCH / "swe-bench-langcodes" / "session.jsonl")
    sig = compute_signals(StreamJsonSource(path).load())
    pytest_runs = [(r.passed, r.failed, r.ok) for r in sig.test_runs if r.framework == "pytest"]
    assert pytest_runs[0] == (1, 4, False)
    assert pytest_runs[-1] == (1, 0, True)
