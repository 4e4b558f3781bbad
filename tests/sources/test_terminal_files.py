"""Saved pane captures and asciinema casts as sources: sniffing, parsing, scoring."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.errors import EmptySessionError, SourceError
from scorer.models import EventKind, SourceKind
from scorer.sources import resolve, sniff_format
from scorer.sources.terminal import CastSource, TerminalFileSource
from tests.conftest import FIXTURES, SHARED_DATA, TERMINAL_BENCH, require

LIVE = FIXTURES / "live"
CAST = LIVE / "fail_then_pass.cast"
PANES = SHARED_DATA / "tmux-panes"
CASTS = SHARED_DATA / "terminal-bench" / "casts"
runner = CliRunner()


def test_sniffing_picks_terminal_and_asciinema(tmp_path: Path) -> None:
    assert sniff_format(CAST) == "asciinema"
    renamed = tmp_path / "recording.json.log"  # a cast under another name: the header decides
    renamed.write_bytes(CAST.read_bytes())
    assert sniff_format(renamed) == "asciinema"
    capture = tmp_path / "pane"
    capture.write_text("\x1b[1m$ make\x1b[0m\r\nok 50%\rok 100%\n")
    assert sniff_format(capture) == "terminal"
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(EmptySessionError):  # the native source reports an empty file
        resolve(str(empty)).load()
    broken = tmp_path / "broken.jsonl"  # claims to be JSON lines: not terminal text
    broken.write_text("not json\n")
    assert sniff_format(broken) == "claude-code"


def test_cast_fixture_becomes_a_terminal_session() -> None:
    source = resolve(str(CAST), task="make add() correct")
    assert isinstance(source, CastSource) and source.kind == SourceKind.TERMINAL
    session = source.load()
    assert session.session_id == "terminal:live/fail_then_pass.cast"
    assert session.source == SourceKind.TERMINAL and session.title == "fix add()"
    assert session.task == "make add() correct"
    assert session.started_at == datetime(2025, 11, 23, 12, 13, 20, tzinfo=UTC)
    assert session.duration_seconds == pytest.approx(3.7)
    note, *terminal = session.events
    assert note.kind == EventKind.SYSTEM and "asciinema recording" in note.text
    assert "No git repository" in note.text
    text = "\n".join(e.text for e in terminal)
    assert "\x1b" not in text and "\r" not in text
    assert "collecting 100%" in text and "collecting 50%" not in text  # redraws replayed
    assert "test_calc.py F               [100%]" in text  # cursor column moves applied
    signals = session.extra["terminal_signals"]
    assert signals["tests"]["ok"] and signals["superseded_errors"] == 1
    assert signals["error_lines"] == [] and session.extra["terminal_only"] is True


def test_forced_terminal_source_still_replays_a_cast() -> None:
    session = resolve(str(CAST), source="terminal").load()
    assert any("FAILED test_calc.py::test_add" in e.text for e in session.events)
    assert session.extra["format"] == "asciinema recording"


def test_bad_files_are_one_line_source_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.cast"
    bad.write_text('{"version": 2, "width": 80, "height": 24}\n[0.1, "o"\n')
    with pytest.raises(SourceError, match="cannot read asciinema cast"):
        resolve(str(bad)).load()
    binary = tmp_path / "pane.txt"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(SourceError, match="binary"):
        TerminalFileSource(binary).load()
    blank = tmp_path / "blank.txt"
    blank.write_text("\x1b[2J\x1b[H   \n\n")
    with pytest.raises(EmptySessionError, match="no terminal text"):
        TerminalFileSource(blank).load()


def test_score_session_on_a_cast_end_to_end(clean_env) -> None:
    result = runner.invoke(app, ["session", str(CAST), "--judge", "heuristic", "--json"])
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    assert (
        card["source"] == "terminal" and card["scores"]["goal_achievement"]["label"] == "complete"
    )
    forced = runner.invoke(
        app, ["session", str(CAST), "--source", "asciinema", "--judge", "heuristic", "--json"]
    )
    assert forced.exit_code == 0, forced.stderr


# --- real data (skipped when ../shared/data is absent) ----------------------------------


def test_real_pane_capture() -> None:
    path = require(PANES / "spotter-short.terminal.txt")
    session = resolve(str(path)).load()
    assert session.session_id == "terminal:tmux-panes/spotter-short.terminal.txt"
    texts = [e.text for e in session.events if e.kind == EventKind.TERMINAL]
    assert any("❯ mix phx.server doesnt seem to start" in t for t in texts)
    assert any(t.startswith("● Let me check the project structure") for t in texts)
    assert len(texts) >= 5  # split at ❯ / ● boundaries like a live pane


@pytest.mark.parametrize("name", ["spotter-subagent", "spotter-tool_heavy"])
def test_other_real_pane_captures_load(name: str) -> None:
    path = require(PANES / f"{name}.terminal.txt")
    session = resolve(str(path)).load()
    assert session.source == SourceKind.TERMINAL and session.n_events > 3


def test_real_terminal_bench_pane() -> None:
    task = require(TERMINAL_BENCH / "chess-best-move")
    session = resolve(str(task / "pane-post-agent.txt")).load()
    assert session.session_id == "terminal:chess-best-move/pane-post-agent.txt"
    assert session.extra["format"] == "pane capture"


@pytest.mark.slow  # pyte replays ~0.5 MB of terminal output
def test_real_cast_becomes_a_session() -> None:
    path = require(CASTS / "chess-best-move.agent.cast")
    header = json.loads(path.open().readline())
    session = resolve(str(path)).load()
    assert isinstance(resolve(str(path)), CastSource)
    assert session.started_at == datetime.fromtimestamp(header["timestamp"], UTC)
    assert 60 < (session.duration_seconds or 0) < 3600
    text = "\n".join(e.text for e in session.events)
    assert "Initial working directory: /app" in text and "\x1b" not in text
    assert "The file chess_bard.png has an image of a chess board." in text
