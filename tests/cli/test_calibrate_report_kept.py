"""A calibration report is replaced only by a successful run, and then as a whole
(issue 33 item 2).

Before: `score-calibrate --judge llm` without ANTHROPIC_API_KEY exited 0 and overwrote
the report with an empty one ("0 scorecards"), leaving the old plots beside it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.calibrate import write_report
from scorer.errors import ConfigError
from scorer.settings import get_settings
from tests.conftest import REPO, TERMINAL_BENCH, require
from tests.fakes.anthropic import FakeJudgeServer

runner = CliRunner()
TASKS = ("chess-best-move", "fix-git", "hello-world", "play-zork")


def tree(folder: Path) -> dict[str, str]:
    """Every file under `folder` (hidden ones too) → its sha256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def bench(tmp_path) -> Path:
    folder = tmp_path / "bench"
    for task in TASKS:
        shutil.copytree(require(TERMINAL_BENCH / task), folder / task)
    return folder


def calibrate(bench: Path, out: Path, *extra: str):
    from scorer.cli.main import app

    args = ["calibrate", "--ground-truth", f"terminal-bench:{bench}", "--n-boot", "0"]
    return runner.invoke(app, [*args, "--out", str(out), *extra])


@pytest.fixture
def old_report(bench, tmp_path) -> tuple[Path, dict[str, str]]:
    """A heuristic report with its plots in `tmp_path/r`, and its files' hashes."""
    out = tmp_path / "r"
    first = calibrate(bench, out, "--judge", "heuristic")
    assert first.exit_code == 0, first.stderr
    before = tree(out)
    assert "calibration.md" in before and any(k.startswith("plots/") for k in before)
    return out, before


def test_a_keyless_llm_calibration_exits_1_and_keeps_the_report(bench, old_report):
    out, before = old_report
    result = calibrate(bench, out, "--judge", "llm")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: ANTHROPIC_API_KEY is not set: --judge llm scores the labelled sessions with "
        "the LLM judge; set it, use --judge heuristic, or add --no-score-missing to compare "
        "the LLM scores already stored"
    ]
    assert tree(out) == before
    stored_only = calibrate(bench, out, "--judge", "llm", "--no-score-missing")
    assert stored_only.exit_code == 1 and tree(out) == before
    assert "error: no llm judge scorecard matches the 4 labels: nothing to compare" in (
        stored_only.stderr
    )


def test_a_failed_llm_calibration_exits_6_and_keeps_the_report(bench, old_report, monkeypatch):
    from scorer.judge import retry

    out, before = old_report
    with FakeJudgeServer(faults=[529] * (retry.MAX_ATTEMPTS * len(TASKS))) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        result = calibrate(bench, out, "--judge", "llm", "--concurrency", "1")
        assert result.exit_code == 6, result.stderr
        assert "4 labelled sessions not scored yet (4 failed" in result.stderr
        assert tree(out) == before
        healthy = calibrate(bench, out, "--judge", "llm")  # the outage is over
    assert healthy.exit_code == 0, healthy.stderr
    after = tree(out)
    assert after != before and set(after) == {k for k in after if not k.startswith(".")}


def test_a_new_report_replaces_the_old_set_as_a_whole(bench, old_report):
    out, _ = old_report
    html = calibrate(bench, out, "--judge", "heuristic", "--format", "html")
    assert html.exit_code == 0, html.stderr
    assert set(tree(out)) == {"calibration.html", "calibration.json"}  # no stale plots
    assert not list(out.parent.glob(f".{out.name}.*"))  # nothing left beside it


def test_a_folder_with_other_files_is_refused_before_any_work(bench, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("mine")
    result = calibrate(bench, shared, "--judge", "heuristic")
    assert result.exit_code == 1
    assert "holds other files (notes.txt): give a folder of its own" in result.stderr
    assert "scored" not in result.stderr  # refused before judging anything
    assert tree(shared) == {"notes.txt": hashlib.sha256(b"mine").hexdigest()}
    here = calibrate(bench, Path("."), "--judge", "heuristic")
    assert here.exit_code == 1 and "give a folder of its own" in here.stderr


_KILL_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from scorer.calibrate import report_files
from scorer.calibrate.stats import CalibrationResult
from scorer.calibrate.report import write_report

result = CalibrationResult.model_validate_json(Path(sys.argv[2]).read_text())
result = result.model_copy(update={"rubric_version": "a newer one"})  # other bytes
calls = {"n": 0}
real = os.fsync

def fsync_then_die(fd):
    calls["n"] += 1
    if calls["n"] == int(sys.argv[3]):
        os.kill(os.getpid(), signal.SIGKILL)
    real(fd)

os.fsync = fsync_then_die
write_report(result, Path(sys.argv[1]))
"""


@pytest.mark.parametrize("at", [1, 3, 6])
def test_a_kill_mid_write_leaves_the_old_report_whole(old_report, at):
    """`kill -9` while a new report is written (at the 1st, 3rd or 6th fsync): the folder
    still holds the old report, byte for byte."""
    out, before = old_report
    result = out / "calibration.json"
    saved = out.parent / "result.json"
    shutil.copy(result, saved)
    proc = subprocess.run(
        [sys.executable, "-c", _KILL_MID_WRITE, str(out), str(saved), str(at)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert tree(out) == before


def test_a_failure_mid_write_leaves_nothing_behind(old_report, monkeypatch):
    from scorer.calibrate import report_files
    from scorer.calibrate.stats import CalibrationResult

    out, before = old_report
    result = CalibrationResult.model_validate_json((out / "calibration.json").read_text())
    result = result.model_copy(update={"rubric_version": "a newer one"})  # other bytes
    calls = {"n": 0}

    def full_disk(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(28, "No space left on device")

    monkeypatch.setattr(report_files.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space left"):
        write_report(result, out)
    assert tree(out) == before
    assert not list(out.parent.glob(f".{out.name}.*"))


def test_write_report_refuses_a_file(tmp_path):
    from scorer.calibrate.stats import CalibrationResult

    target = tmp_path / "r"
    target.write_text("x")
    empty = CalibrationResult(
        rubric_version="1", n_labels=0, n_scorecards=0, unmatched_labels=0, n_boot=0, seed=0
    )
    with pytest.raises(ConfigError, match="not a folder"):
        write_report(empty, target)
