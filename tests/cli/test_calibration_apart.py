"""`score-calibrate` keeps its runs apart: production lists, trends, exports and the viewer
do not change; `--collection calibration|all` shows them (issue 26, done-when 2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from typer.testing import CliRunner

from scorer.cli.backfill import backfill_command
from scorer.cli.main import app
from tests.conftest import SPOTTER, TERMINAL_BENCH, require
from tests.jobs.test_backfill import typer_app

runner = CliRunner()
backfill_app = typer_app(backfill_command)
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


# --- whichever ran first (issue 33 item 3) ----------------------------------------------


def _bench(tmp_path: Path) -> Path:
    bench = tmp_path / "bench"
    for task in TASKS:
        shutil.copytree(require(TERMINAL_BENCH / task), bench / task)
    return bench


def _calibrate(bench: Path, out: Path) -> str:
    args = ["calibrate", "--ground-truth", f"terminal-bench:{bench}", "--judge", "heuristic"]
    result = runner.invoke(app, [*args, "--n-boot", "0", "--out", str(out), "--json"])
    assert result.exit_code == 0, result.stderr
    goal = next(a for a in json.loads(result.stdout)["agreements"] if a["n"])
    assert goal["n"] == len(TASKS)
    return result.stderr


def _backfill(bench: Path) -> dict:
    args = ["--projects-root", str(bench), "--judge", "heuristic", "--idle-minutes", "0"]
    result = runner.invoke(backfill_app, [*args, "--json", "--no-progress"])
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def _listed(collection: str) -> list[str]:
    rows = _json("scores", "list", "--json", "--collection", collection)
    assert {r["collection"] for r in rows} <= {collection}  # type: ignore[union-attr]
    return sorted(r["session_id"] for r in rows)  # type: ignore[union-attr]


def _everywhere_in_production(n: int) -> None:
    """`scores list`, trends and the viewer show the n production runs by default."""
    assert len(_listed("production")) == n
    trends = _json("trends", "--json", "--by", "day")
    assert sum(p["n_sessions"] for p in trends["periods"]) == n  # type: ignore[index]
    view = runner.invoke(app, ["view", "-o", str(Path(os.environ["SCORER_HOME"]) / "v.html")])
    assert view.exit_code == 0 and f"({n} run" in view.stderr, view.stderr


def test_calibrating_first_never_makes_a_backfill_skip(tmp_path):
    bench = _bench(tmp_path)
    _calibrate(bench, tmp_path / "r")
    assert len(_listed("calibration")) == len(TASKS) and _listed("production") == []

    first = _backfill(bench)
    assert (first["scored"], first["skipped"]) == (len(TASKS), 0)  # was 0 scored, 4 skipped
    _everywhere_in_production(len(TASKS))
    assert _listed("calibration") == _listed("production")  # both kept, side by side
    again = _backfill(bench)
    assert (again["scored"], again["skipped"]) == (0, len(TASKS))


def test_backfilling_first_still_gives_calibration_its_runs(tmp_path):
    bench = _bench(tmp_path)
    assert _backfill(bench)["scored"] == len(TASKS)
    stderr = _calibrate(bench, tmp_path / "r")
    assert f"copied {len(TASKS)} heuristic scorecards" in stderr and "scored" not in stderr
    assert _listed("calibration") == _listed("production")
    _everywhere_in_production(len(TASKS))
    assert _backfill(bench)["skipped"] == len(TASKS)
    shown = _json("scores", "show", _listed("production")[0], "--json")
    assert shown["collection"] == "production"  # type: ignore[index]


def test_a_skip_recorded_before_the_fix_is_judged_once_the_card_is_missing(tmp_path):
    """Stores where calibration made a backfill skip (ledger `skipped`, only a calibration
    card) get their production runs from the next backfill, without --rescore."""
    import sqlite3

    bench = _bench(tmp_path)
    _backfill(bench)
    store = Path(os.environ["SCORER_HOME"]) / "scores.sqlite3"
    with sqlite3.connect(store) as db:  # what the old store key left: calibration cards only
        db.execute("UPDATE runs SET collection = 'calibration'")
        db.execute("UPDATE backfill_sessions SET state = 'skipped', reason = 'already scored'")
    healed = _backfill(bench)
    assert (healed["scored"], healed["skipped"]) == (len(TASKS), 0)
    assert len(_listed("production")) == len(TASKS)
