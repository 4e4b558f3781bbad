"""`scorer hook` through its console script: `--now` (what `/score` runs), `--wait`
(orchestrators), where settings come from, and a hook that must stay silent."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess

import pytest

from tests.conftest import require
from tests.jobs.hook.helpers import (
    REAL,
    SCORER,
    hook_env,
    ledger,
    log_text,
    payload,
    real,
    require_fresh_scorer,
    run_hook,
    stored_runs,
    wait_log,
)

TOOL_HEAVY = next(r for r in REAL if r.endswith("/tool_heavy.jsonl"))


def _run(args: list[str], env: dict[str, str], cwd=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCORER), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


@pytest.fixture
def env(tmp_path, cc_projects):
    require_fresh_scorer()
    require(real(TOOL_HEAVY))
    return hook_env(tmp_path / "home")


def test_now_prints_the_scorecard_then_the_stored_one(env, tmp_path):
    args = ["hook", "--now", "--transcript", str(real(TOOL_HEAVY)), "--session-id", "s-now"]
    done = _run(args, env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("**Session `s-now`**, scored by heuristic, cost $0.0000")
    assert "| goal_achievement |" in done.stdout and "| overall_quality | 0." in done.stdout
    assert "Recommendation:" in done.stdout
    again = _run(args, env)
    assert again.stdout.startswith("(already scored, and the transcript has not changed since)")
    assert "| overall_quality |" in again.stdout
    payload_json = json.loads(_run([*args, "--json"], env).stdout)
    assert payload_json["state"] == "unchanged"
    assert payload_json["scorecard"]["session_id"] == "s-now"


def test_now_on_a_missing_transcript_is_one_line_and_exit_1(env, tmp_path):
    done = _run(["hook", "--now", "--transcript", str(tmp_path / "nope.jsonl")], env)
    assert done.returncode == 1
    missing = tmp_path / "nope.jsonl"
    assert done.stdout.strip() == f"The session was not scored: transcript not found: {missing}"
    assert "Traceback" not in done.stderr


def test_wait_applies_the_policy_and_prints_one_line(env, tmp_path):
    relative = "notes.jsonl"
    (tmp_path / relative).write_text(real(TOOL_HEAVY).read_text())
    done = _run(["hook", "--wait", "--transcript", relative], env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"{REAL[TOOL_HEAVY]}: scored overall 0.")
    env["SCORER_HOOK_MIN_TOOL_CALLS"] = "50"
    done = _run(
        ["hook", "--wait", "--transcript", relative, "--session-id", "x"], env, cwd=tmp_path
    )
    assert (
        done.stdout.strip() == "x: skipped 6 tool call(s), fewer than SCORER_HOOK_MIN_TOOL_CALLS=50"
    )


def test_an_orchestrator_call_detaches_like_a_hook(env, tmp_path):
    args = ["hook", "--transcript", str(real(TOOL_HEAVY)), "--session-id", "orch-1"]
    done = _run(args, env)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    home = tmp_path / "home"
    wait_log(home, "orch-1: scored by heuristic")
    assert stored_runs(home) == {"orch-1": 1}
    assert ledger(home)["orch-1"] == ("scored", 1)


def test_settings_come_from_the_data_dir_not_the_project(env, tmp_path):
    home = tmp_path / "home"
    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text("SCORER_HOOK_ENABLED=0\n")  # the project's own .env
    body = payload(real(TOOL_HEAVY), "s-env", cwd=str(project))
    done = subprocess.run(
        [str(SCORER), "hook"], input=json.dumps(body).encode(), capture_output=True, env=env,
        cwd=project, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0
    wait_log(home, "s-env: scored by heuristic")
    (home / ".env").write_text("SCORER_HOOK_ENABLED=0\n")  # ours: the worker obeys it
    run_hook(payload(real(TOOL_HEAVY), "s-env-2"), env)
    wait_log(home, "s-env-2: refused: automatic scoring is off (SCORER_HOOK_ENABLED=0)")


def test_a_bad_setting_is_logged_by_the_hook_and_said_by_now(env, tmp_path):
    env["SCORER_HOOK_EVENTS"] = "SessionEnd,Teatime"
    done = run_hook(payload(real(TOOL_HEAVY), "s-bad"), env).done
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    wait_log(tmp_path / "home", "SCORER_HOOK_EVENTS")
    assert "Traceback" not in log_text(tmp_path / "home")
    now = _run(["hook", "--now", "--transcript", str(real(TOOL_HEAVY))], env)
    assert now.returncode == 2  # a bad setting is a usage error, on every command
    assert now.stderr.startswith("error: bad environment variable SCORER_HOOK_EVENTS (")


def test_the_kill_switch_starts_no_worker(env, tmp_path):
    env["SCORER_HOOK_ENABLED"] = "0"
    done = run_hook(payload(real(TOOL_HEAVY), "s-off"), env).done
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    log = log_text(tmp_path / "home")
    assert "s-off: not scored: automatic scoring is off" in log
    assert "background" not in log


def test_no_payload_at_a_terminal_is_a_usage_error(env):
    main, other = pty.openpty()
    try:
        done = subprocess.run(
            [str(SCORER), "hook"], stdin=other, capture_output=True, text=True, env=env,
            timeout=60,
        )  # fmt: skip
    finally:
        os.close(main)
        os.close(other)
    assert done.returncode == 2
    assert "no hook payload on stdin" in done.stderr


def test_the_umbrella_lists_hook_and_its_help_has_the_conventions(env):
    assert "hook" in _run(["--help"], env).stdout
    help_text = _run(["hook", "--help"], env).stdout
    assert "--transcript" in help_text and "--now" in help_text and "Exit codes" in help_text
    assert "--worker" not in help_text


def test_the_worker_can_be_run_by_hand(env, tmp_path):
    """What `detach` starts: `python -m scorer.cli.hook --worker …` (logs, prints nothing)."""
    transcript = tmp_path / "t.jsonl"
    shutil.copyfile(real(TOOL_HEAVY), transcript)
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "scorer.cli.hook", "--worker", "--event", "SessionEnd",
         "--session-id", "w-1", "--transcript", str(transcript)],
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "w-1: scored by heuristic" in log_text(tmp_path / "home")


def test_a_bad_payload_through_the_options_path(env, tmp_path):
    """`scorer hook --event …` (typer, not the bare fast path): silent; `--now` says it."""
    done = subprocess.run(
        [str(SCORER), "hook", "--event", "SessionEnd"], input=b"{oops", capture_output=True,
        env=env, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert "ignored a hook call: payload is not JSON" in log_text(tmp_path / "home")
    now = subprocess.run(
        [str(SCORER), "hook", "--now"], input="[1]", capture_output=True, text=True, env=env,
        timeout=60,
    )  # fmt: skip
    assert now.returncode == 1
    assert now.stderr.strip() == "error: payload is a JSON list, not an object"
