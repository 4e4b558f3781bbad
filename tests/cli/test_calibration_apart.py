"""`score-calibrate` keeps its runs apart: production lists, trends, exports and the viewer
do not change; `--collection calibration|all` shows them (issue 26, done-when 2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import SPOTTER, TERMINAL_BENCH, require

runner = CliRunner()
TASKS = ("chess-best-move", "fix-git", "hello-world", "play-zork")


def _json(*args: str) -> object:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _production() -> dict[str, object]:
    """Everything production views show, as comparable data."""
    trends = _json("trends", "--json", "--by", "day")
    listed = _json("scores", "list", "--json")
    export = runner.invoke(app, ["scores", "export", "--format", "csv"])
    view = runner.invoke(app, ["view", "-o", str(Path(os.environ["SCORER_HOME"]) / "v.html")])
    assert export.exit_code == 0 and view.exit_code == 0
    return {
        "trends": trends,
        "list": sorted(r["session_id"] for r in listed),  # type: ignore[union-attr]
        "export": sorted(export.stdout.splitlines()[1:]),
        "view": view.stderr.split(" run")[0].rsplit("(", 1)[1],
    }


def test_calibration_leaves_production_trends_unchanged(tmp_path):
    for name in ("short.jsonl", "tool_heavy.jsonl", "subagent.jsonl"):
        path = require(SPOTTER / name)
        result = runner.invoke(app, ["session", str(path), "--judge", "heuristic", "-q"])
        assert result.exit_code == 0, result.output
    before = _production()
    assert before["list"] and before["view"] == "3"

    bench = tmp_path / "bench"
    for task in TASKS:
        shutil.copytree(require(TERMINAL_BENCH / task), bench / task)
    args = ["calibrate", "--ground-truth", f"terminal-bench:{bench}", "--judge", "heuristic"]
    result = runner.invoke(app, [*args, "--n-boot", "0", "--out", str(tmp_path / "r"), "--json"])
    assert result.exit_code == 0, result.stderr
    assert "scored 4 sessions with the heuristic judge" in result.stderr
    goal = next(a for a in json.loads(result.stdout)["agreements"] if a["n"])
    assert goal["n"] == 4  # calibration still reads its own runs

    assert _production() == before
    calib = _json("scores", "list", "--json", "--collection", "calibration")
    assert len(calib) == 4  # type: ignore[arg-type]
    assert {r["collection"] for r in calib} == {"calibration"}  # type: ignore[union-attr]
    # titled by the task calibration hands the judge (label.json's instruction)
    assert {r["session"]["title_from"] for r in calib} == {"task"}  # type: ignore[union-attr]
    assert any("chess_bard.png" in r["title"] for r in calib)  # type: ignore[union-attr]
    both = _json("trends", "--json", "--by", "day", "--collection", "all")
    n_all = sum(p["n_sessions"] for p in both["periods"])  # type: ignore[index]
    n_prod = sum(p["n_sessions"] for p in before["trends"]["periods"])  # type: ignore[index]
    assert n_all == n_prod + 4
    empty = runner.invoke(app, ["scores", "list", "--search", "chess"])
    assert "no runs match these filters" in empty.stderr and "--collection all" in empty.stderr
