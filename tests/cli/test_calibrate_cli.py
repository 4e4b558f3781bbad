"""`score-calibrate` end to end, offline, on the terminal-bench ground truth."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import FIXTURES, TERMINAL_BENCH, require

runner = CliRunner()


def test_terminal_bench_calibration_scores_missing_and_reports(tmp_path):
    root = require(TERMINAL_BENCH)
    out = tmp_path / "report"
    args = ["calibrate", "--ground-truth", f"terminal-bench:{root}", "--judge", "heuristic"]
    result = runner.invoke(app, [*args, "--n-boot", "50", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "scored 79 sessions with the heuristic judge" in result.stderr
    data = json.loads(result.stdout)
    goal = next(a for a in data["agreements"] if a["dimension"] == "goal_achievement")
    assert goal["n"] == 79 and goal["judge"] == "heuristic"
    assert goal["balanced_accuracy"] >= 0.42
    assert goal["ci"]["weighted_kappa"]["low"] <= goal["weighted_kappa"]
    assert (out / "calibration.md").exists() and (out / "calibration.json").exists()

    again = runner.invoke(app, [*args, "--n-boot", "0", "--out", str(out)])
    assert again.exit_code == 0 and "scored 79" not in again.stderr  # already stored


def test_bad_ground_truth_is_one_line():
    result = runner.invoke(app, ["calibrate", "--ground-truth", "nope.csv"])
    assert result.exit_code == 1
    assert "ground truth 'nope.csv'" in result.stderr and "Traceback" not in result.stderr


def test_file_ground_truth_without_scores_is_nothing_to_report(tmp_path):
    """Zero pairs is not a report: one line, exit 1, no report written (issue 33 item 2)."""
    labels = FIXTURES / "calibrate" / "labels.csv"
    result = runner.invoke(app, ["calibrate", "--ground-truth", str(labels), "--n-boot", "0",
                                 "--out", str(tmp_path / "r"), "--json"])  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert result.stdout == "" and not (tmp_path / "r").exists()
    assert "error: no heuristic judge scorecard matches the 5 labels: nothing to compare" in (
        result.stderr
    )


def test_terminal_bench_ground_truth_is_both_backends_by_default(terminal_bench_all):
    args = ["calibrate", "--ground-truth", "terminal-bench", "--no-score-missing", "--json"]
    result = runner.invoke(app, [*args, "--n-boot", "0", "--out", "report"])
    assert (
        "160 ground-truth labels from terminal-bench (claude_code_coder 80, claude_code_gpt5 80)"
        in result.stderr
    )
    assert result.exit_code == 1  # nothing stored to compare with: the labels were all read
