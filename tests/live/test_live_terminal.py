"""Terminal cleaning (pure) and asciinema rendering, on fixtures and the real captures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scorer.errors import SourceError
from scorer.live.terminal import clean_terminal, render_cast
from tests.conftest import FIXTURES, SHARED_DATA, TERMINAL_BENCH, require

LIVE = FIXTURES / "live"
CASTS = SHARED_DATA / "terminal-bench" / "casts"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("50%\r100%", "100%"),
        ("abc\b\bX", "aXc"),
        ("100%\r\x1b[K50%", "50%"),
        ("\x1b[31mred\x1b[0m plain", "red plain"),
        ("a\x1b]0;title\x07b\x1b]8;;http://x\x1b\\c", "abc"),
        ("x\x1bP1$r\x1b\\y\x1b_apc\x1b\\z", "xyz"),
        ("\x1b(B\x1b)0\x1b=\x1b>text\x1bM", "text"),
        ("bell\x07 nul\x00 del\x7f", "bell nul del"),
        ("tab\tstays   \n\n\n\n\nend\n\n", "tab\tstays\n\n\nend"),
        ("line\r\nnext\r\n", "line\nnext"),
        ("\x1b[10Gcol", "         col"),
        (
            "Downloading a 10%\nDownloading a 60%\nDownloading a 100%\ndone",
            "Downloading a 100%\ndone",
        ),
    ],
)
def test_clean_terminal_cases(raw, clean):
    assert clean_terminal(raw) == clean


def test_pytest_progress_lines_of_different_files_are_kept():
    text = "tests/test_1.py ..  [ 50%]\ntests/test_2.py ..  [100%]"
    assert clean_terminal(text) == text


def test_separator_lines_are_not_collapsed():
    text = "===== FAILURES =====\n===== short test summary info ====="
    assert clean_terminal(text) == text


def test_raw_fixture_is_fully_cleaned():
    raw = (LIVE / "raw_terminal.txt").read_text(encoding="utf-8")
    clean = clean_terminal(raw)
    assert clean.splitlines() == [
        "$ pytest -q",
        "....F  [100%]",
        "Collecting 100%",
        "fixed",
        "spinner done",
        "pip ━━━━━━━━━━━━━━━━ 9.0/9.0 MB",
        "kept",
        "link text",
        "=== 1 failed, 4 passed in 0.05s ===",
        "",
        "",
        "$",
    ]
    assert clean_terminal(clean) == clean


def _real_panes() -> list[Path]:
    panes = sorted((SHARED_DATA / "tmux-panes").glob("*.txt"))
    return panes + sorted(TERMINAL_BENCH.glob("*/pane-post-agent.txt"))


def test_real_pane_captures_clean_and_idempotent():
    require(TERMINAL_BENCH)
    paths = _real_panes()
    assert len(paths) == 83  # 3 spotter panes + 80 terminal-bench panes
    for path in paths:
        clean = clean_terminal(path.read_text(encoding="utf-8"))
        assert "\x1b" not in clean and "\r" not in clean, path
        assert all(line == line.rstrip() for line in clean.splitlines()), path
        assert clean_terminal(clean) == clean, path


def test_real_pane_keeps_content():
    path = require(SHARED_DATA / "tmux-panes" / "spotter-short.terminal.txt")
    clean = clean_terminal(path.read_text(encoding="utf-8"))
    assert "❯ mix phx.server doesnt seem to start" in clean
    assert "Claude Code v2.1.39" in clean


def test_render_tiny_cast_keeps_scrolled_history():
    text = render_cast(LIVE / "tiny.cast")
    lines = text.splitlines()
    # 5-row screen: lines 00..08 scrolled into history before `ESC[2J` cleared the rest.
    assert lines[:3] == ["$ echo hi", "hi", "line 00 bold"]
    assert "line 08 bold" in lines
    assert "line 11 bold" not in lines  # still on screen when it was cleared
    assert lines[-2:] == ["after clear", "$"]


def test_full_screen_program_does_not_overwrite_the_shell():
    # vim on the alternate screen (ESC[?1049h ... ESC[?1049l), 6-row terminal
    lines = render_cast(LIVE / "editor.cast").splitlines()
    assert lines == [
        "$ pytest -q",
        "FAILED test_calc.py::test_add - assert -1 == 5",
        "1 failed in 0.05s",
        "$ vim calc.py",
        "$ pytest -q",
        "1 passed in 0.04s",
        "$",
    ]


def test_render_cast_bad_file(tmp_path):
    bad = tmp_path / "bad.cast"
    bad.write_text('{"version": 1}\n')
    with pytest.raises(SourceError, match="not an asciinema v2 cast"):
        render_cast(bad)
    with pytest.raises(SourceError, match="cannot read"):
        render_cast(tmp_path / "missing.cast")


@pytest.mark.slow  # pyte replays ~0.5 MB of output per cast (a few seconds each)
@pytest.mark.parametrize(
    ("name", "known"),
    [
        ("chess-best-move", "The file chess_bard.png has an image of a chess board."),
        ("blind-maze-explorer-5x5", "You are placed in a blind maze exploration challenge."),
        ("conda-env-conflict-resolution", "You need to debug and fix a conda environment"),
    ],
)
def test_render_real_casts(name, known):
    cast = require(CASTS / f"{name}.agent.cast")
    header = json.loads(cast.open().readline())
    text = render_cast(cast)
    assert "\x1b" not in text and "\r" not in text
    assert all(len(line) <= header["width"] for line in text.splitlines())
    assert "root@rack-ge107-ya-20250517193277:/app# source /installed-agent/setup-env.sh" in text
    assert "Initial working directory: /app" in text
    assert known in text  # the task instruction, typed on the `claude -p` command line
    assert text.splitlines()[-1] == "exit"
    assert text.count("\n") > 3000  # history far beyond one 40-row screen
