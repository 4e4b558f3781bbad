"""`scorer scores list/show` end to end through typer's CliRunner, store under a tmp SCORER_HOME."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.scores import app
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card, unscored_card


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def stored(clean_env: Path) -> list:
    cards = [
        make_card("ae4a77f8-aedd-4bc1", created_at=datetime(2026, 11, 20, 9, 0, tzinfo=UTC)),
        make_card(
            "ae4a77f8-aedd-4bc1",
            judge="heuristic",
            model=None,
            values={"goal_achievement": "partial"},
            created_at=datetime(2026, 11, 21, 9, 0, tzinfo=UTC),
        ),
        make_card("bbbb-2222", values={"goal_achievement": "failed"}, recommendation="retry"),
        unscored_card("cccc-3333"),
    ]
    with ScoreStore() as store:
        for card in cards:
            store.save(card)
    assert (clean_env / "scores.sqlite3").exists()
    return cards


def test_list_table(runner: CliRunner, stored: list) -> None:
    result = runner.invoke(app, ["list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "4 runs" in result.output
    lines = [line for line in result.output.splitlines() if "ae4a77f8" in line]
    assert len(lines) == 2
    assert "heuristic" in lines[0] and "partial" in lines[0]  # newest first
    assert "claude-sonnet-5-5" in lines[1] and "complete" in lines[1] and "$0.0123" in lines[1]
    assert "unscored" in result.output
    assert "retry" in result.output


def test_list_json_and_filters(runner: CliRunner, stored: list) -> None:
    result = runner.invoke(app, ["list", "--json", "--judge", "llm", "--limit", "2"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert len(rows) == 2
    assert {r["judge"] for r in rows} == {"llm"}
    result = runner.invoke(app, ["list", "--json", "--session", "bbbb-2222"])
    (row,) = json.loads(result.output)
    assert row["goal"] == "failed" and row["recommendation"] == "retry"
    assert row["overall"] == pytest.approx(stored[2].overall)


def test_list_empty_store(runner: CliRunner) -> None:
    result = runner.invoke(app, ["list", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.output) == []


def test_show_latest_run_with_prefix(runner: CliRunner, stored: list) -> None:
    result = runner.invoke(app, ["show", "ae4a"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "judge=heuristic" in result.output  # the newest run
    assert "partial" in result.output
    assert "goal_achievement: Ran the tests at #12" in result.output
    assert "second line" not in result.output  # one-line rationale
    assert "#12 “3 passed”" in result.output  # evidence refs with the judge's quote
    assert "#99?" in result.output  # the invalid one marked


def test_show_json_filtered_by_judge(runner: CliRunner, stored: list) -> None:
    result = runner.invoke(app, ["show", "ae4a77f8-aedd-4bc1", "--judge", "llm", "--json"])
    assert result.exit_code == 0, result.output
    card = json.loads(result.output)
    assert card["judge"] == "llm"
    assert card["scores"]["goal_achievement"]["label"] == "complete"
    assert len(card["scores"]) == 7


def test_show_unscored(runner: CliRunner, stored: list) -> None:
    result = runner.invoke(app, ["show", "cccc-3333"])
    assert result.exit_code == 0
    assert "UNSCORED" in result.output and "judge reply was not JSON" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["show", "nope"], "no stored scores for session 'nope'"),
        (["show", "ae4a77f8-aedd-4bc1", "--model", "gpt-x"], "no stored run of ae4a77f8-aedd-4bc1"),
    ],
)
def test_show_unknown_is_one_line_exit_1(runner: CliRunner, stored: list, args, message) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.output


def test_show_ambiguous_prefix(runner: CliRunner, clean_env: Path) -> None:
    with ScoreStore() as store:
        store.save(make_card("abc-1"))
        store.save(make_card("abc-2"))
    result = runner.invoke(app, ["show", "abc"])
    assert result.exit_code == 1
    assert "ambiguous: abc-1, abc-2" in result.stderr
