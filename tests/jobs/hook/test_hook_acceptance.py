"""Issue 27's acceptance: real hook payloads piped into `scorer hook` return within a
second; the detached worker leaves one stored run and eight Langfuse session scores (the
seven and goal_probability) per session; a second identical payload adds nothing; a bad payload or transcript only logs.

Everything runs as Claude Code runs it: the `scorer` console script in a subprocess, the
payload on stdin, stdout and stderr captured (a worker holding them would keep the hook
waiting), the LLM judge behind `ANTHROPIC_BASE_URL` (`FakeJudgeServer`) and Langfuse
behind `LANGFUSE_BASE_URL` (`FakeLangfuse` over loopback HTTP).
"""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import require
from tests.jobs.acceptance_helpers import LoopbackLangfuse
from tests.jobs.helpers import FakeJudgeServer
from tests.jobs.hook.helpers import (
    REAL,
    SHORT,
    assert_quick_and_silent,
    camel,
    hook_env,
    ledger,
    log_text,
    payload,
    real,
    run_hook,
    start_hook,
    stored_runs,
    wait_for,
    wait_log,
    wait_settled,
)
from tests.langfuse.fake_server import PUBLIC_KEY, SECRET_KEY, FakeLangfuse

pytestmark = pytest.mark.slow


@pytest.fixture
def world(tmp_path):
    """A fake judge, a fake Langfuse and the environment pointing at both."""
    for relative in (*REAL, SHORT[0]):
        require(real(relative))
    with FakeJudgeServer() as judge, LoopbackLangfuse(FakeLangfuse()) as lf:
        home = tmp_path / "home"
        env = hook_env(
            home,
            ANTHROPIC_API_KEY="test-key",
            ANTHROPIC_BASE_URL=judge.url,
            LANGFUSE_PUBLIC_KEY=PUBLIC_KEY,
            LANGFUSE_SECRET_KEY=SECRET_KEY,
            LANGFUSE_BASE_URL=lf.url,
        )
        yield home, env, judge, lf.fake


def test_real_payloads_score_each_session_once_in_the_background(world):
    home, env, judge, langfuse = world
    sessions = list(REAL.values())
    for relative, session_id in REAL.items():
        body = payload(real(relative), session_id)
        if session_id.startswith("491e"):
            body = camel(body)  # the camelCase field names are read too
        assert_quick_and_silent(run_hook(body, env))
    assert_quick_and_silent(run_hook(payload(real(SHORT[0]), SHORT[1]), env))  # 2 tool calls
    wait_settled(home, [*sessions, SHORT[1]])

    assert stored_runs(home) == dict.fromkeys(sessions, 1)
    assert {s: len(ids) for s, ids in langfuse.session_score_ids().items()} == dict.fromkeys(
        sessions, 8
    )
    assert len(langfuse.scores) == 8 * len(sessions)
    rows = ledger(home)
    assert {s: rows[s] for s in sessions} == dict.fromkeys(sessions, ("scored", 1))
    assert rows[SHORT[1]] == ("skipped", 0)  # trivial: under SCORER_HOOK_MIN_TOOL_CALLS
    log = log_text(home)
    assert "2 tool call(s), fewer than SCORER_HOOK_MIN_TOOL_CALLS=3" in log
    assert log.count("scored by llm (claude-sonnet-5-5)") == len(sessions)

    # The same payloads again: nothing judged, stored or pushed.
    calls, batches = judge.calls, len(langfuse.score_batches)
    for relative, session_id in REAL.items():
        assert_quick_and_silent(run_hook(payload(real(relative), session_id), env))
    wait_log(home, "unchanged since it was scored", count=len(sessions))
    assert judge.calls == calls and len(langfuse.score_batches) == batches
    assert stored_runs(home) == dict.fromkeys(sessions, 1)
    assert {s: ledger(home)[s] for s in sessions} == dict.fromkeys(sessions, ("scored", 1))


def test_missing_or_garbage_input_only_logs(world, tmp_path):
    home, env, judge, langfuse = world
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\x01 not a transcript \xff\n" * 50)
    not_json = tmp_path / "notes.jsonl"
    not_json.write_text("this is { not json\nnor is this\n")
    cases = [
        payload(tmp_path / "missing.jsonl", "11111111-1111-1111-1111-111111111111"),
        payload(garbage, "22222222-2222-2222-2222-222222222222"),
        payload(not_json, "33333333-3333-3333-3333-333333333333"),
        b"this is not a payload",
        b'["a", "list"]',
        b"",
        payload(tmp_path, "44444444-4444-4444-4444-444444444444"),  # a directory
    ]
    for body in cases:
        assert_quick_and_silent(run_hook(body, env))
    wait_log(home, "transcript not found: " + str(tmp_path / "missing.jsonl"))
    wait_log(home, "22222222-2222-2222-2222-222222222222: failed:")
    wait_log(home, "33333333-3333-3333-3333-333333333333: failed:")
    wait_log(home, "transcript is not a regular file")
    log = log_text(home)
    assert "ignored a hook call: payload is not JSON" in log
    assert "ignored a hook call: payload is a JSON list, not an object" in log
    assert "ignored a hook call: empty payload on stdin" in log
    assert "Traceback" not in log
    assert judge.calls == 0 and langfuse.score_batches == []
    assert stored_runs(home) == {}
    # A bad transcript is not retried until it changes.
    run_hook(payload(garbage, "22222222-2222-2222-2222-222222222222"), env)
    wait_log(home, "unchanged since it failed")


def test_two_hooks_racing_judge_the_session_once(world):
    home, env, judge, langfuse = world
    relative, session_id = next(iter(REAL.items()))
    racers = [start_hook(payload(real(relative), session_id), env) for _ in range(4)]
    assert [proc.wait(30) for proc in racers] == [0, 0, 0, 0]
    # Every worker logs one outcome: one scored it, the others found it taken or done.
    outcomes = (f"{session_id}: scored by", f"{session_id}: busy:", f"{session_id}: unchanged:")
    wait_for(lambda: sum(log_text(home).count(o) for o in outcomes) >= 4, what="4 outcomes")
    assert log_text(home).count(outcomes[0]) == 1
    assert ledger(home)[session_id] == ("scored", 1)
    assert judge.calls == 1  # one chunk, one call: judged once
    assert stored_runs(home) == {session_id: 1}
    assert len(langfuse.session_score_ids()[session_id]) == 8


def test_a_resumed_session_is_scored_again_when_it_ends_again(world, tmp_path):
    home, env, judge, langfuse = world
    relative = next(r for r in REAL if r.endswith("/subagent.jsonl"))  # 25 tool calls
    session_id = REAL[relative]
    lines = real(relative).read_text().splitlines(keepends=True)
    transcript = tmp_path / "projects" / "-workspace" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True)
    transcript.write_text("".join(lines[: len(lines) * 2 // 3]))

    run_hook(payload(transcript, session_id), env)
    wait_log(home, f"{session_id}: scored by")
    first = judge.calls
    shutil.copyfile(real(relative), transcript)  # the user resumed it; it ends again
    assert_quick_and_silent(run_hook(payload(transcript, session_id), env))
    wait_log(home, f"{session_id}: scored by", count=2)
    wait_settled(home, [session_id])

    assert judge.calls == 2 * first
    assert ledger(home)[session_id] == ("scored", 2)
    assert stored_runs(home) == {session_id: 1}  # the newer run replaced the older
    assert len(langfuse.session_score_ids()[session_id]) == 8  # same ids, updated
    log = log_text(home)
    assert "(the transcript changed)" in log
