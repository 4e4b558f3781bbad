"""The final state of a live tmux session: a real pane, a real repository given with
`--repo`, the session's start from `--since` or `--base`."""

from __future__ import annotations

import shutil
from datetime import timedelta

import pytest

from scorer.live.final_state import FinalStateOptions, add_final_state
from scorer.sources.tmux import TmuxSource
from tests.live.test_tmux_source import run_script
from tests.live.workspace_helpers import NOW, START, commit, git, make_repo

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

PROMPT = "Make `app.py` print a greeting and add tests in tests/test_app.py."


def _final(session) -> list[str]:
    return [e.text for e in session.events if e.meta.get("observed_by") == "session-scorer"]


def test_a_tmux_session_with_its_repository_gets_the_final_state(server, tmp_path):
    repo = make_repo(tmp_path / "work")
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "print('hi')\n"}, "add app", START + timedelta(minutes=5))
    (repo / "tests").mkdir()
    (repo / "tests" / "test_app.py").write_text("def test_app():\n    assert True\n")
    run_script(server, "dev", repo)
    source = TmuxSource(
        "dev", repo=repo, since=START, prompt=PROMPT, socket_name=server.socket_name
    )
    session = source.load()
    out = add_final_state(session, FinalStateOptions())
    head, changes, app, tests = _final(out)
    assert out.events[-4].index == session.n_events + 1
    assert "s after the session ended; HEAD has not moved since" in head
    assert "?? tests/ (untracked)" in head
    assert f"{first[:8]} (HEAD at the session's start, from the reflog)" in changes
    assert "1 commit in the session; 1 file changed, +1 -0" in changes
    assert "deliverable app.py (named by the task): exists, 12 bytes" in app
    assert "deliverable tests/test_app.py (named by the task): exists" in tests
    based = TmuxSource("dev", repo=repo, base=first, prompt=PROMPT, socket_name=server.socket_name)
    changes = _final(add_final_state(based.load(), FinalStateOptions()))[1]
    assert f"{first[:8]} (--base {first})" in changes


def test_a_tmux_session_without_a_repository_gets_none(server, tmp_path):
    repo = make_repo(tmp_path / "work")
    run_script(server, "dev", repo)
    session = TmuxSource("dev", repo=None, socket_name=server.socket_name).load()
    assert add_final_state(session, FinalStateOptions(), now=NOW) is session
