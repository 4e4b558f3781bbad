"""Saved pane captures and asciinema casts as sources: sniffing, parsing, scoring."""

from __future__ import annotations

import hashlib
import json
import shutil
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
    digest = hashlib.sha256(CAST.read_bytes()).hexdigest()[:10]
    assert session.session_id == f"terminal:fail_then_pass.cast:{digest}"
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
    assert session.session_id == "terminal:spotter-short.terminal.txt:1b130a4a4f"
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
    assert session.session_id == "terminal:pane-post-agent.txt:6a2fcc8f08"
    assert session.extra["format"] == "pane capture"
    # the pane has no clock: the run's label.json gives the agent's real times
    label = json.loads((task / "label.json").read_text())
    assert session.started_at == datetime.fromisoformat(label["agent_started_at"])
    assert session.ended_at == datetime.fromisoformat(label["agent_ended_at"])
    assert session.extra["times_from"] == "label"


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


# --- ids: unique per capture, stable across re-runs (issue 33 item 6) -------------------


def test_every_real_pane_has_its_own_id(terminal_bench: Path) -> None:
    """Both agents' `pane-post-agent.txt` of one task were one id, the second run
    replacing the first in the store; every real capture now has its own."""
    panes = sorted(terminal_bench.parent.glob("*/*/pane-post-agent.txt"))
    panes += sorted(PANES.glob("*.txt"))
    assert len(panes) >= 150
    ids = [resolve(str(p)).load().session_id for p in panes]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("terminal:") and len(i.rsplit(":", 1)[1]) == 10 for i in ids)


def test_the_same_capture_keeps_its_id_moved_or_copied(tmp_path: Path) -> None:
    path = require(PANES / "spotter-short.terminal.txt")
    first = resolve(str(path)).load().session_id
    assert resolve(str(path)).load().session_id == first  # re-scoring hits the same id
    moved = tmp_path / "archive" / path.name
    moved.parent.mkdir()
    shutil.copy(path, moved)
    assert resolve(str(moved)).load().session_id == first
    grown = tmp_path / path.name  # a later capture of the same pane: another snapshot
    grown.write_bytes(path.read_bytes() + b"\n$ mix test\n")
    assert resolve(str(grown)).load().session_id != first


def test_a_cast_keeps_its_id_under_any_name(tmp_path: Path) -> None:
    renamed = tmp_path / "fail_then_pass.cast.txt"
    renamed.write_bytes(CAST.read_bytes())
    digest = resolve(str(CAST)).load().session_id.rsplit(":", 1)[1]
    assert resolve(str(renamed)).load().session_id == f"terminal:{renamed.name}:{digest}"


def test_two_panes_of_one_task_are_two_sessions_in_the_store(
    terminal_bench: Path, clean_env: Path
) -> None:
    """What `scorer scores list` shows after scoring both agents' panes of one task."""
    panes = [
        terminal_bench.parent / agent / "chess-best-move" / "pane-post-agent.txt"
        for agent in ("claude_code_coder", "claude_code_gpt5")
    ]
    for pane in panes:
        result = runner.invoke(app, ["session", str(require(pane)), "--judge", "heuristic", "-q"])
        assert result.exit_code == 0, result.output
    listed = runner.invoke(app, ["scores", "list", "--json"])
    ids = [r["session_id"] for r in json.loads(listed.stdout)]
    assert len(ids) == len(set(ids)) == 2
    for sid in ids:
        shown = runner.invoke(
            app, ["scores", "show", sid[: len("terminal:pane-post-agent.txt:") + 4]]
        )
        assert shown.exit_code == 0, shown.output
        assert sid in shown.stdout
