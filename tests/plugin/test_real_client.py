"""The plugin in the real Claude Code CLI (`.ci/run` installs the pinned version into
`.ci/claude-code`), against a loopback streaming Messages API (`tests/fakes/claude_code.py`).

The user here has no API key: their Claude Code login is an `apiKeyHelper` in
`~/.claude/settings.json`, so the hook judges through `claude -p` (judge `claude-code`),
and every request, the agent's and the judge's, reaches the fake, which counts them.
Permissions are Claude Code's defaults (nothing skipped). Each wait polls for its result
(the stored card, a log line) with a generous timeout: a loaded 2-core machine takes
5–30 s per `claude -p`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from scorer.models import Scorecard
from scorer.sinks.store import ScoreStore
from tests.conftest import REPO
from tests.fakes.claude_code import ClaudeCodeAPI
from tests.jobs.hook.helpers import SCORER, ledger, log_text, stored_runs, wait_for
from tests.plugin.helpers import BASE_PATH, PLUGIN_DIR

WAIT = 240.0
"""Seconds to wait for a hook's result (its worker runs `claude -p` for the judge)."""


class User:
    """A subscriber's machine: a HOME logged in to Claude Code by `apiKeyHelper`, no
    API key anywhere, the scorer on PATH, a project folder, and the fake API."""

    def __init__(
        self, tmp_path: Path, claude: str, api: ClaudeCodeAPI, home: Path | None = None
    ) -> None:
        self.claude, self.api = claude, api
        self.home = home or tmp_path / "home"
        if home is None:  # else a HOME set up already (a marketplace install's)
            (self.home / ".claude").mkdir(parents=True)
            settings = {"apiKeyHelper": "echo sk-ant-helper"}
            (self.home / ".claude" / "settings.json").write_text(json.dumps(settings))
        self.data = tmp_path / "scorer-home"
        self.project = tmp_path / "project"
        self.project.mkdir(parents=True)
        self.browser_log = tmp_path / "opened.txt"
        browser = tmp_path / "browser"
        browser.write_text(f'#!/bin/sh\necho "$1" >> "{self.browser_log}"\n')
        browser.chmod(0o755)
        self.env = api.env(
            self.home, ANTHROPIC_API_KEY="", IS_SANDBOX="", PATH=f"{SCORER.parent}:{BASE_PATH}",
            SCORER_HOME=str(self.data), SCORER_CLAUDE_BIN=claude, BROWSER=str(browser),
        )  # fmt: skip
        self.env.update({k: v for k, v in os.environ.items() if k in ("LANG", "TMPDIR")})

    def run(self, prompt: str, *args: str) -> subprocess.CompletedProcess[str]:
        """`claude -p PROMPT` with the plugin, default permissions, as this user."""
        done = subprocess.run(
            [self.claude, "-p", prompt, "--plugin-dir", str(PLUGIN_DIR), *args],
            env=self.env, cwd=self.project, capture_output=True, text=True, timeout=WAIT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr or done.stdout
        return done

    def card(self, session_id: str) -> Scorecard | None:
        if not stored_runs(self.data).get(session_id):
            return None
        with ScoreStore(self.data / "scores.sqlite3") as store:
            return store.latest(session_id)

    def wait_card(self, session_id: str) -> Scorecard:
        wait_for(lambda: self.card(session_id), WAIT, f"the stored card of {session_id}")
        card = self.card(session_id)
        assert card is not None
        return card

    def cards_stored(self) -> int:
        return sum(stored_runs(self.data).values())

    def hook_sessions(self) -> set[str]:
        """Every session id the hook log mentions."""
        ids = re.findall(r"(?:INFO|WARNING|ERROR) ([0-9a-f-]{36}):", log_text(self.data))
        return set(ids)


@pytest.fixture
def user(tmp_path, claude):
    with ClaudeCodeAPI(agent_steps=3) as api:
        yield User(tmp_path, claude, api)


def test_a_subscriber_gets_an_llm_card_when_the_session_ends(user):
    session_id = str(uuid.uuid4())
    user.run("Run the three steps.", "--session-id", session_id)
    card = user.wait_card(session_id)
    assert card.judge == "llm" and card.backend == "claude-code"
    assert card.status == "scored" and card.meta["trigger"] == "SessionEnd"
    assert len(user.api.judge_calls) == 1
    # The judge's own `claude -p` fired no hook: only the user's session is in the log,
    # and no session of the judge's was written anywhere under the user's HOME.
    wait_for(lambda: ledger(user.data).get(session_id, ("running",))[0] != "running", WAIT)
    assert user.hook_sessions() == {session_id}
    transcripts = list((user.home / ".claude" / "projects").glob("*/*.jsonl"))
    assert [t.stem for t in transcripts] == [session_id]
    assert "Traceback" not in log_text(user.data)


def test_a_session_then_score_then_exit_costs_one_judge_call(user):
    session_id = str(uuid.uuid4())
    user.run("Run the three steps.", "--session-id", session_id)
    user.wait_card(session_id)
    shown = user.run("/session-scorer:score", "--resume", session_id)
    # The scorecard reached the model (the command's text), and was not judged again.
    agent = user.api.of_kind("agent")[-1]
    assert "| goal_achievement |" in json.dumps(agent["messages"]), shown.stdout
    # The SessionEnd after /score finds no new work: the same one judge call.
    wait_for(lambda: "unchanged" in log_text(user.data).splitlines()[-1], WAIT, "the last hook")
    assert len(user.api.judge_calls) == 1
    assert stored_runs(user.data) == {session_id: 1}
    assert ledger(user.data)[session_id] == ("scored", 1)


def test_score_session_judge_claude_code_scores_what_claude_code_wrote(user):
    """`--judge claude-code` on a transcript the real CLI wrote, as the subscriber."""
    session_id = str(uuid.uuid4())
    user.run("Run the three steps.", "--session-id", session_id, "--settings",
             json.dumps({"disableAllHooks": True}))  # fmt: skip
    (transcript,) = (user.home / ".claude" / "projects").glob(f"*/{session_id}.jsonl")
    done = subprocess.run(
        [str(SCORER.parent / "score-session"), str(transcript), "--judge", "claude-code",
         "--json", "--no-store"],
        env=user.env, capture_output=True, text=True, timeout=WAIT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    card = json.loads(done.stdout)
    assert card["session_id"] == session_id and card["status"] == "scored"
    assert card["judge"] == "llm" and card["backend"] == "claude-code"
    assert len(user.api.judge_calls) == 1 and not user.cards_stored()


def test_score_as_the_first_prompt_says_there_is_nothing_yet(user):
    user.run("/session-scorer:score")
    agent = user.api.of_kind("agent")[0]  # the command's text went to the model
    text = json.dumps(agent["messages"])
    assert "Nothing to score yet: this session has no transcript so far" in text
    assert "Shell command failed" not in text and not user.api.judge_calls


def test_view_scores_writes_its_page_under_default_permissions(user):
    user.run("/session-scorer:view-scores")
    page = user.home / ".cache" / "session-scorer" / "view.html"
    assert page.is_file() and "<html" in page.read_text()[:500].lower()
    assert user.browser_log.read_text().strip() == page.resolve().as_uri()
    agent = user.api.of_kind("agent")[0]
    assert str(page) in json.dumps(agent["messages"])
    assert not list(user.project.iterdir())  # nothing written into the project


# --- a marketplace install from a checkout ---------------------------------------------

CACHE_LIMIT = 20_000_000
"""Bytes a marketplace install of the plugin may add to Claude Code's plugin cache."""


def checkout_with_a_venv(where: Path) -> Path:
    """The repository's files as a checkout has them, plus a 40 MB git-ignored `.venv`."""
    files = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, files):
        source, target = REPO / name.decode(), where / name.decode()
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    (where / ".venv" / "lib").mkdir(parents=True)
    (where / ".venv" / "lib" / "big.so").write_bytes(os.urandom(40_000_000))
    return where


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def test_a_marketplace_install_from_a_checkout_copies_only_the_plugin(claude, tmp_path):
    checkout = checkout_with_a_venv(tmp_path / "session-scorer")
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", BASE_PATH),
           "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip

    def cli(*args: str) -> str:
        done = subprocess.run([claude, "plugin", *args], env=env, capture_output=True,
                              text=True, timeout=WAIT)  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    assert "Validation passed" in cli("validate", str(checkout))
    cli("marketplace", "add", str(checkout))
    cli("install", "session-scorer@session-scorer")
    plugins = home / ".claude" / "plugins"
    assert size(plugins) < CACHE_LIMIT, f"{size(plugins):,} bytes in {plugins}"
    (copy,) = (plugins / "cache" / "session-scorer" / "session-scorer").iterdir()
    names = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file())
    assert names == sorted(
        str(p.relative_to(PLUGIN_DIR)) for p in PLUGIN_DIR.rglob("*") if p.is_file()
    )
    # The copy knows where to install the scorer from: the checkout it was added from.
    found = subprocess.run(
        ["python3", str(copy / "hooks" / "bootstrap.py"), "--source"], env=env,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert found.stdout.startswith(f"{checkout}  (the marketplace"), found.stdout
    # And the installed copy scores a session (no --plugin-dir: the install is all).
    settings = home / ".claude" / "settings.json"
    login = {**json.loads(settings.read_text()), "apiKeyHelper": "echo sk-ant-helper"}
    settings.write_text(json.dumps(login))
    with ClaudeCodeAPI() as api:
        user = User(tmp_path / "session", claude, api, home=home)
        session_id = str(uuid.uuid4())
        done = subprocess.run(
            [claude, "-p", "Run the three steps.", "--session-id", session_id],
            env=user.env, cwd=user.project, capture_output=True, text=True, timeout=WAIT,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        card = user.wait_card(session_id)
    assert card.backend == "claude-code" and len(api.judge_calls) == 1
