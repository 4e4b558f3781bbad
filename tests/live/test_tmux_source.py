"""TmuxSource end to end: a real tmux pane + a real git repo → a Session."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime

import pytest

from scorer.errors import SourceError
from scorer.models import EventKind, SourceKind
from scorer.sources.base import SessionSource
from scorer.sources.tmux import (
    MAX_BLOCK_LINES,
    NO_GIT_NOTE,
    TmuxSource,
    split_blocks,
    terminal_events,
)
from tests.conftest import FIXTURES
from tests.live.test_live_tmux import wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "work"
    root.mkdir()
    git = ["git", "-c", "user.name=T", "-c", "user.email=t@e.com"]
    subprocess.run([*git, "init", "-q", "-b", "main"], cwd=root, check=True)
    (root / "app.py").write_text("print('hi')\n")
    subprocess.run([*git, "add", "."], cwd=root, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "add app"], cwd=root, check=True)
    (root / "test_app.py").write_text("def test(): pass\n")
    return root


def run_script(srv, name, cwd):
    session = srv.new_session(
        name, window_command="env PS1='$ ' bash --norc --noprofile", x=120, y=30,
        start_directory=str(cwd),
    )  # fmt: skip
    wait_for(srv, name, "$")  # typed before the prompt, the command would echo on its own
    session.active_window.active_pane.send_keys(
        f"{sys.executable} {FIXTURES / 'live' / 'scripted_run.py'}"
    )
    wait_for(srv, name, "SCRIPT-FINISHED")


def test_source_builds_session_with_git_evidence(server, repo):
    run_script(server, "dev", repo)
    src = TmuxSource("dev", repo=repo, prompt="Fix the build", socket_name=server.socket_name)
    assert isinstance(src, SessionSource) and src.kind == SourceKind.TMUX
    session = src.load()
    assert session.session_id.startswith("tmux:dev:") and session.source == SourceKind.TMUX
    assert session.task == "Fix the build" and session.git_branches == ["main"]
    assert [e.index for e in session.events] == list(range(1, len(session.events) + 1))
    git_event, machine = session.events[:2]
    assert git_event.kind == EventKind.SYSTEM and git_event.meta == {"git": True}
    assert (
        "1 commit changing 1 file" in git_event.text
        and "Untracked: 1 file: test_app.py" in git_event.text
    )
    assert machine.text.startswith("Machine: load ")
    terminal = [e for e in session.events if e.kind == EventKind.TERMINAL]
    run = next(e for e in terminal if "scripted_run.py" in e.meta["first_line"])
    assert run.is_error  # ERROR line and a failed test run
    assert run.meta["tests"]["failed"] == 1 and run.meta["tests"]["passed"] == 3
    assert "Downloading deps 100%" in run.text and "\x1b" not in run.text
    extra = session.extra
    assert extra["git"]["status"] == "ok" and extra["git"]["commits"] == 1
    assert extra["git_available"] and not extra["terminal_only"] and not extra["from_cache"]
    assert extra["phase"] in {"early", "mid", "late", "complete"}
    assert 0 <= extra["progress_percent"] <= 100
    assert extra["resources"]["cores"] >= 1

    server.kill()
    cached = TmuxSource("dev", repo=repo, socket_name=server.socket_name).load()
    assert cached.extra["from_cache"]
    assert any("tmux session has ended" in e.text for e in cached.events[:3])
    assert cached.session_id == session.session_id  # the ended session is the same one
    assert cached.started_at == session.started_at


def test_ids_are_stable_per_session_and_unique_across_sessions(server, repo, tmp_path):
    """Every capture of one tmux session has one id; a new session reusing the name
    (tmux numbers them 0, 1, ... again after a restart) or another repo has another."""
    before = datetime.now(UTC).replace(microsecond=0)
    run_script(server, "age", repo)
    first = TmuxSource("age", repo=repo, socket_name=server.socket_name).load()
    again = TmuxSource("age", repo=repo, socket_name=server.socket_name).load()
    assert first.session_id == again.session_id
    assert (
        first.session_id.startswith("tmux:age:") and len(first.session_id) == len("tmux:age:") + 10
    )
    assert before <= first.started_at <= first.ended_at  # the session's own start
    other_repo = tmp_path / "other"
    other_repo.mkdir()
    elsewhere = TmuxSource("age", repo=other_repo, socket_name=server.socket_name).load()
    assert elsewhere.session_id != first.session_id
    server.sessions.get(session_name="age").kill()
    time.sleep(1.1)  # tmux keeps whole seconds
    run_script(server, "age", repo)
    reborn = TmuxSource("age", repo=repo, socket_name=server.socket_name).load()
    assert reborn.session_id != first.session_id
    assert reborn.started_at > first.started_at


def test_source_without_git_tells_judge_to_use_terminal_only(server, tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    run_script(server, "nogit", plain)
    for repo in (None, plain):
        session = TmuxSource("nogit", repo=repo, socket_name=server.socket_name).load()
        first = session.events[0]
        assert first.kind == EventKind.SYSTEM and first.text.startswith(NO_GIT_NOTE)
        assert session.extra["terminal_only"] and not session.extra["git_available"]


def test_source_missing_session_raises(server):
    with pytest.raises(SourceError, match="not found"):
        TmuxSource("nobody", repo=None, socket_name=server.socket_name).load()


def test_split_blocks_at_prompts_and_markers():
    text = "\n".join(
        ["root@box:/app# ls", "a.py", "$ pytest", "== 1 passed in 0.1s ==", "⏺ Bash(ls)", "  ⎿  a.py",
         "❯ fix it", "> also this", "plain"]
    )  # fmt: skip
    assert [b.splitlines()[0] for b in split_blocks(text)] == [
        "root@box:/app# ls", "$ pytest", "⏺ Bash(ls)", "❯ fix it", "> also this"
    ]  # fmt: skip
    events = terminal_events(text, pane="0:bash.0")
    assert events[1].meta["tests"]["passed"] == 1 and not events[1].is_error
    assert all(e.meta["pane"] == "0:bash.0" for e in events)


def test_long_output_is_cut_into_manageable_blocks():
    text = "$ make\n" + "\n".join(f"compiling file {i}" for i in range(400))
    blocks = split_blocks(text)
    assert len(blocks) == 3
    assert all(len(b.splitlines()) <= MAX_BLOCK_LINES for b in blocks)
    assert sum(len(b.splitlines()) for b in blocks) == 401
