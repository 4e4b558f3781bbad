"""Odd input through the real entry points: one line and a non-zero exit, or the bad part
skipped and reported; never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.settings import get_settings
from tests.conftest import REPO

DEMO = REPO / "examples" / "demo-session.jsonl"
BIN = Path(sys.executable).parent
runner = CliRunner()


def one_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert "Traceback" not in output
    return lines[0]


def _run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A console script in a child process, so a hang fails the test instead of CI."""
    return subprocess.run(
        [str(BIN / args[0]), *args[1:]],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def test_fifo_transcript_is_refused_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    result = _run("score-session", str(fifo), "--judge", "heuristic")
    assert result.returncode == 1
    assert "not a regular file" in one_error_line(result.stderr)


def test_backfill_skips_symlinks_fifos_and_id_clashes(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    old = (datetime.now(UTC) - timedelta(days=2)).timestamp()
    for project in ("-a", "-b"):  # the same session id in two project folders
        (root / project).mkdir(parents=True)
        copy = shutil.copy(DEMO, root / project / "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00.jsonl")
        os.utime(copy, (old, old))
    (root / "-a" / "dangling.jsonl").symlink_to(root / "-a" / "gone.jsonl")
    (root / "-a" / "loop.jsonl").symlink_to(root / "-a" / "loop.jsonl")
    os.mkfifo(root / "-b" / "fifo.jsonl")
    args = ["score-backfill", "--judge", "heuristic", "--projects-root", str(root), "--json"]
    args += ["--no-progress"]
    first = _run(*args)
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["discovered"], summary["scored"], summary["failed"]) == (1, 1, 0)
    notes = " ".join(summary["notes"])
    for name in ("dangling.jsonl", "loop.jsonl", "fifo.jsonl", "id clash"):
        assert name in notes
    again = json.loads(_run(*args).stdout)  # the ledger is not stuck: nothing left to do
    assert (again["scored"], again["skipped"], again["failed"]) == (0, 1, 0)


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("SCORER_CHUNK_BUDGET", "lots"),
        ("SCORER_CHUNK_BUDGET", "0"),
        ("LANGFUSE_BASE_URL", "http://[::1"),
        ("ANTHROPIC_BASE_URL", "not a url"),
    ],
)
def test_bad_env_values_are_one_line(var: str, value: str, monkeypatch) -> None:
    monkeypatch.setenv(var, value)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-x")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-x")
    for args in (["session", str(DEMO), "--judge", "heuristic"], ["scores", "list"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output  # a usage error, like a bad option
        line = one_error_line(result.stderr)
        assert var in line and "bad environment variable" in line


def test_deep_json_line_in_transcript_is_skipped_and_reported(tmp_path: Path) -> None:
    lines = DEMO.read_bytes().splitlines()
    deep = b"[" * 10_000 + b"]" * 10_000
    path = tmp_path / "deep.jsonl"
    path.write_bytes(b"\n".join([lines[0], deep, *lines[1:], lines[5][:30]]) + b"\n")
    dry = runner.invoke(app, ["session", str(path), "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    assert json.loads(dry.stdout)["warnings"] == [
        "2 of 35 lines skipped (not valid JSON objects: truncated or corrupt, 1 nested too deeply)"
    ]
    assert "warning: 2 of 35 lines skipped" in dry.stderr
    scored = runner.invoke(app, ["session", str(path), "--judge", "heuristic", "--json"])
    assert scored.exit_code == 0, scored.output
    card = json.loads(scored.stdout)
    assert card["meta"]["input_warnings"][0].startswith("2 of 35 lines skipped")
    human = runner.invoke(app, ["session", str(path), "--judge", "heuristic"])
    assert "input: 2 of 35 lines skipped" in human.stdout


def test_latin1_transcript_is_scored_with_a_warning(tmp_path: Path) -> None:
    text = DEMO.read_text().replace("median()", "m\u00e9dian()")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(text.encode("latin-1", errors="replace"))
    result = runner.invoke(app, ["session", str(path), "--judge", "heuristic", "--json"])
    assert result.exit_code == 0, result.output
    assert "were not UTF-8" in result.stderr
    assert json.loads(result.stdout)["status"] == "scored"


def test_deep_row_in_label_file_is_one_line(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    good = {"session_id": "s1", "dimension": "tool_efficiency", "value": 4}
    labels.write_text(json.dumps(good) + "\n" + "[" * 10_000 + "]" * 10_000 + "\n")
    result = runner.invoke(app, ["calibrate", "--ground-truth", str(labels), "--n-boot", "0"])
    assert result.exit_code == 1
    assert f"{labels}:2: JSON nested too deeply" in one_error_line(result.stderr)


def test_error_lines_are_redacted(monkeypatch) -> None:
    result = runner.invoke(app, ["session", "https://bob:Hunter2" + "pass@git.example.com/x"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    line = one_error_line(result.stderr)
    assert "Hunter2pass" not in line and "[REDACTED:url_password]" in line
    monkeypatch.setenv("LANGFUSE_BASE_URL", "http://u:Secr3t" + "pw@[::1")
    get_settings.cache_clear()
    result = runner.invoke(app, ["scores", "list"])
    assert result.exit_code == 2 and "Secr3tpw" not in result.stderr  # a bad env value


def test_backfill_scorecard_carries_input_warnings(tmp_path: Path) -> None:
    root = tmp_path / "projects" / "-p"
    root.mkdir(parents=True)
    lines = DEMO.read_bytes().splitlines()
    path = root / "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00.jsonl"
    path.write_bytes(b"\n".join([*lines, lines[4][:50]]) + b"\n")
    old = (datetime.now(UTC) - timedelta(days=2)).timestamp()
    os.utime(path, (old, old))
    args = ["backfill", "--judge", "heuristic", "--projects-root", str(root.parent), "--json"]
    result = runner.invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scored"] == 1
    show = runner.invoke(app, ["scores", "show", path.stem, "--json"])
    assert "1 of 34 lines skipped" in show.stdout, show.output
