"""Terminal polish (issue 26, item 6): an empty store says what to do first, counts are
honest and in plural, heuristic cards show no made-up cost or model fields."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import REPO

runner = CliRunner()
DEMO = REPO / "examples" / "demo-session.jsonl"


def test_an_empty_store_gives_the_first_steps(clean_env) -> None:
    result = runner.invoke(app, ["scores", "list"], env={"COLUMNS": "80"})
    assert result.exit_code == 0
    text = result.stdout + result.stderr
    assert "no scored sessions yet" in text
    assert "score-session PATH" in text and "score-backfill" in text
    assert "┏" not in text and "│" not in text  # no empty table frame


def test_heuristic_cards_show_no_cost_or_model_and_counts_are_plural(clean_env, tmp_path) -> None:
    scored = runner.invoke(app, ["session", str(DEMO), "--judge", "heuristic"])
    assert scored.exit_code == 0, scored.output
    shown = runner.invoke(app, ["scores", "show", "0d3e5f1a"], env={"COLUMNS": "100"})
    for text in (scored.stdout, shown.stdout):
        assert "judge: heuristic (offline rules, no model called)" in text
        assert "$0.0000" not in text and "model=-" not in text and "0/0/0/0" not in text
        assert "(s)" not in text and "1 requests" not in text and "1 chunks" not in text
    listed = runner.invoke(app, ["scores", "list"], env={"COLUMNS": "80"})
    assert listed.stdout.startswith("1 run\n")  # all shown: no "of", and singular
    view = runner.invoke(app, ["view", "-o", str(Path(tmp_path) / "v.html")])
    assert "(1 run," in view.stderr
    export = runner.invoke(
        app, ["scores", "export", "--format", "csv", "-o", str(tmp_path / "x.csv")]
    )
    assert "wrote 1 run to" in export.stderr
