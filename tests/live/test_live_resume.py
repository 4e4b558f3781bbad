"""Issue 15, live sessions, with real tmux, git and pytest: a fixed failure is not the next
step, uncommitted files are counted right, a folder outside git is refused, and a saved
pane capture is a scorable source. Every tmux server here is private (`-L scorer-test-*`).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

import libtmux
import pytest

from tests.live.test_live_e2e import git, one_error_line, scorer
from tests.live.test_live_tmux import wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
PYTEST = f"{sys.executable} -m pytest -q test_calc.py"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repo whose add() is wrong; no .gitignore, so pytest leaves __pycache__ behind."""
    root = tmp_path / "calc"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "calc with a bug")
    return root


def fail_fix_pass(srv: libtmux.Server, repo: Path, name: str = "agent") -> None:
    """The issue's run: pytest fails, the file is fixed, pytest passes.

    The end markers are quoted so the typed command line does not already show them.
    """
    session = srv.new_session(
        name, window_command="env -u PYTHONDONTWRITEBYTECODE PS1='$ ' bash --norc --noprofile",
        x=120, y=40, start_directory=str(repo),
    )  # fmt: skip
    pane = session.active_window.active_pane
    wait_for(srv, name, "$")  # the shell is ready: nothing is echoed before its prompt
    # the fix changes the file's size: within the same second a same-size edit would keep
    # the stale __pycache__ bytecode (its check is mtime in seconds + size)
    pane.send_keys(f"{PYTEST}; sed -i 's/a - b/a + b  # fixed/' calc.py; {PYTEST}; echo RUN-'DONE'")
    wait_for(srv, name, "RUN-DONE", timeout=60)


def score(srv: libtmux.Server, repo: Path, base: str, name: str = "agent"):
    return scorer(
        "session", name, "--source", "tmux", "--tmux-socket", srv.socket_name,
        "--repo", str(repo), "--base", base, "--judge", "heuristic", "--json", "--no-store",
    )  # fmt: skip


def test_fixed_failure_is_superseded_and_one_file_is_one_file(server, repo, clean_env):
    base = git(repo, "rev-parse", "HEAD").strip()
    fail_fix_pass(server, repo)
    assert list(repo.glob("__pycache__/*.pyc"))  # pytest's own leftovers are there

    result = score(server, repo, base)
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    assert card["scores"]["goal_achievement"]["label"] == "complete", card
    assert card["summary"].endswith("; 1 test run; 1 file changed.")  # one command block
    evaluation = json.loads((repo / ".scorer" / "evaluation.json").read_text())
    signals = evaluation["terminal_signals"]
    assert signals["tests"]["ok"] and signals["error_lines"] == []
    assert signals["superseded_errors"] >= 1  # the FAILED line of the first run
    assert evaluation["git"]["unstaged"] == ["calc.py"] and evaluation["git"]["untracked"] == []
    assert evaluation["git"]["artifacts"] >= 2  # calc and test_calc .pyc files

    resumed = scorer("resume-prompt", str(repo))
    assert resumed.exit_code == 0, resumed.stderr
    prompt = (repo / ".scorer" / "next-prompt.md").read_text()
    assert "Investigate" not in prompt and "FAILED" not in prompt
    assert "1. Review and commit 1 uncommitted file.\n" in prompt
    assert "(s)" not in prompt and "__pycache__" not in prompt
    assert "- calc.py" in prompt and "(last: 1 passed, 0 failed)" in prompt

    assessed = scorer("assess", str(repo), "--json")
    assert assessed.exit_code == 0, assessed.stderr
    data = json.loads(assessed.stdout)
    assert data["blockers"] == [] and data["uncommitted"] == ["calc.py"]
    assert data["untracked"] == [] and data["pending"] == ["Review and commit 1 uncommitted file."]


def test_failure_after_the_last_green_run_stays_a_blocker(server, repo, clean_env):
    base = git(repo, "rev-parse", "HEAD").strip()
    fail_fix_pass(server, repo)
    pane = server.sessions[0].active_window.active_pane
    pane.send_keys(f"{sys.executable} -c 'import calc; calc.nope()'; echo BROKE-'AGAIN'")
    wait_for(server, "agent", "BROKE-AGAIN")
    assert score(server, repo, base).exit_code == 0
    data = json.loads(scorer("assess", str(repo), "--json").stdout)
    assert data["blockers"] == ["AttributeError: module 'calc' has no attribute 'nope'"]
    assert data["pending"][0].startswith("Investigate the last error: AttributeError")


def test_staged_unstaged_and_untracked_are_each_counted_once(server, repo, clean_env):
    base = git(repo, "rev-parse", "HEAD").strip()
    fail_fix_pass(server, repo)
    git(repo, "add", "calc.py")  # staged
    (repo / "calc.py").write_text("def add(a, b):\n    return b + a\n")  # and changed again
    (repo / "test_calc.py").write_text("from calc import add\n")  # unstaged
    (repo / "notes.md").write_text("todo\n")  # untracked
    (repo / "node_modules").mkdir()
    (repo / "node_modules" / "x.js").write_text("")  # build output: not the agent's work

    card = json.loads(score(server, repo, base).stdout)
    assert "3 files changed." in card["summary"]
    data = json.loads(scorer("assess", str(repo), "--json").stdout)
    assert data["uncommitted"] == ["calc.py", "test_calc.py"] and data["untracked"] == ["notes.md"]
    assert "Review and commit 3 uncommitted files." in data["pending"]
    evaluation = json.loads((repo / ".scorer" / "evaluation.json").read_text())
    git_event = evaluation["git"]
    assert (git_event["staged"], git_event["unstaged"]) == (
        ["calc.py"],
        ["calc.py", "test_calc.py"],
    )

    from scorer.live.git import git_progress

    summary = git_progress(repo, base=base).summary()
    assert "0 commits changing 0 files" in summary
    assert "Uncommitted: 2 files (1 staged, 2 unstaged): calc.py, test_calc.py." in summary
    assert "Untracked: 1 file: notes.md." in summary and "In all 3 files changed" in summary
    assert "build/cache files ignored" in summary


@pytest.mark.parametrize("command", ["assess", "resume-prompt"])
def test_outside_git_refuses_and_writes_nothing(tmp_path, clean_env, command):
    plain = tmp_path / "plain"
    plain.mkdir()
    result = scorer(command, str(plain))
    assert result.exit_code == 1 and result.stdout == ""
    line = one_error_line(result)
    assert line.startswith("error: ") and "not a git repository" in line
    assert list(plain.iterdir()) == []  # no .scorer/ folder, nothing else either


def test_scoring_a_pane_with_a_non_git_repo_saves_nothing_there(server, tmp_path, clean_env):
    plain = tmp_path / "plain"
    plain.mkdir()
    fail_fix_pass(server, plain)  # pytest fails twice here: there is no calc.py
    result = score(server, plain, "HEAD")
    assert result.exit_code == 0, result.stderr  # judged from the terminal alone
    assert f"{plain} is not a git repository; no evaluation saved" in result.stderr
    assert not (plain / ".scorer").exists()
    assert scorer("assess", str(plain)).exit_code == 1


def test_a_folder_inside_the_repo_is_accepted(repo, clean_env):
    (repo / "pkg").mkdir()
    result = scorer("assess", str(repo / "pkg"), "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["git_status"] == "ok"


def test_saved_pane_capture_is_scored_from_the_file(server, repo, tmp_path, clean_env):
    fail_fix_pass(server, repo)
    lines = server.cmd("capture-pane", "-p", "-J", "-S", "-", "-t", "agent").stdout
    capture = tmp_path / "saved" / "agent.txt"
    capture.parent.mkdir()
    capture.write_text("\n".join(lines) + "\n")
    server.kill()  # the session is gone; the file is all there is

    result = scorer("session", str(capture), "--judge", "heuristic", "--json", "--no-store")
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    digest = hashlib.sha256(capture.read_bytes()).hexdigest()[:10]
    assert card["session_id"] == f"terminal:agent.txt:{digest}" and card["source"] == "terminal"
    assert card["scores"]["goal_achievement"]["label"] == "complete"  # the last run is green
    dry = json.loads(scorer("session", str(capture), "--dry-run", "--json").stdout)
    assert dry["source"] == "terminal" and dry["signals"]["last_test_run"]["passed"] == 1
