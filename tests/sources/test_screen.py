"""What a terminal shows about its agent: model, folder and first prompt (real captures,
real recordings, and self-written screens for the older banner and shell quoting)."""

from __future__ import annotations

import pytest

from scorer.models import SessionInfo
from scorer.prepare import prepare
from scorer.sources import resolve
from scorer.sources._screen import screen_identity
from tests.conftest import SHARED_DATA, require

PANES = SHARED_DATA / "tmux-panes"
CASTS = SHARED_DATA / "terminal-bench" / "casts"


@pytest.mark.parametrize(
    ("name", "prompt"),
    [
        ("spotter-short.terminal.txt", "mix phx.server doesnt seem to start"),
        ("spotter-tool_heavy.terminal.txt", "start phoenix in background"),
        ("spotter-subagent.terminal.txt", "/handgemacht:create-beads websearch to learn"),
    ],
)
def test_real_pane_captures_name_model_folder_and_first_prompt(name, prompt):
    session = resolve(str(require(PANES / name))).load()
    screen = session.extra["screen"]
    assert screen["model"] == "claude-opus-4-6" and screen["cwd"] == "~/projects/spotter"
    assert screen["prompt"].startswith(prompt)
    info = SessionInfo.of(prepare(session).session)
    assert info.title_from == "screen" and info.title is not None
    assert info.title.startswith(prompt[:30]) and info.agent_model == "claude-opus-4-6"
    assert info.project == "spotter" and info.times_from == "file" and info.ended_at


def test_real_recordings_name_the_headless_task_and_model():
    session = resolve(str(require(CASTS / "blind-maze-explorer-5x5.agent.cast"))).load()
    screen = session.extra["screen"]
    assert screen["model"] == "openai/app-dsw4xd-1757654301803448727"
    assert screen["cwd"] == "/app"
    # the shell's `> ` continuation prompts and its '"'"' quote escapes are undone
    assert screen["prompt"].startswith("You are placed in a blind maze exploration challenge.")
    assert "position 'S' in the maze" in screen["prompt"]
    assert "\n> " not in screen["prompt"]
    assert screen["prompt"].rstrip().endswith("must exactly match the ground-truth maze layout.")
    info = SessionInfo.of(prepare(session).session)
    assert info.times_from == "recording" and info.started_at and info.ended_at
    assert info.title is not None and info.title.startswith("You are placed in a blind maze")


def test_the_older_welcome_box_and_wrapped_prompt():
    text = "\n".join(
        [
            "╭───────────────────────────────────────╮",
            "│ ✻ Welcome to Claude Code!             │",
            "│                                       │",
            "│   /help for help, /status for setup   │",
            "│                                       │",
            "│   cwd: /home/dev/tinycalc             │",
            "╰───────────────────────────────────────╯",
            "",
            '> Try "write a test for <filepath>"',
            "> /model",
            "> fix median() for even lists",
            "  and run the tests",
            "",
            "● I'll read stats.py first.",
        ]
    )
    assert screen_identity(text) == {
        "cwd": "/home/dev/tinycalc",
        "prompt": "fix median() for even lists\nand run the tests",
    }


def test_a_headless_command_with_double_quotes_and_a_wrapped_line():
    width = 40
    first = 'root@box:/app# claude --print "Fix the'
    line = first + " " * (width - len(first))
    text = (
        line
        + '\nbuild; say \\"done\\"" --verbose\n{"type":"system","subtype":"init","model":"m-1"}'
    )
    got = screen_identity(text, width=width)
    assert got["model"] == "m-1"
    assert got["prompt"].startswith("Fix the") and got["prompt"].endswith('say "done"')


def test_plain_shell_output_shows_nothing():
    assert screen_identity("$ make\ncc -o x x.c\n> not a prompt without a banner") == {}
