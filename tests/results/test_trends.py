"""`scorer trends`: periods, means, t intervals and lowest sessions on a known store."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.results.trends import mean_ci, period_of
from tests.results.helpers import fill_store

runner = CliRunner()


def test_period_labels() -> None:
    sunday = datetime(2026, 11, 8, 23, 59, tzinfo=UTC)
    assert period_of(sunday, "week") == (datetime(2026, 11, 2).date(), "2026-W45")
    assert period_of(sunday, "day")[1] == "2026-11-08"


def test_mean_ci_is_the_t_interval() -> None:
    stat = mean_ci([1.0, 2.0, 3.0])
    assert stat.n == 3 and stat.mean == 2.0
    assert stat.high - stat.mean == pytest.approx(4.302653 / 3**0.5, rel=1e-6)
    single = mean_ci([0.5])
    assert single.low is None and single.high is None
    assert mean_ci([0.7, 0.7]).low == pytest.approx(0.7)


def test_weekly_json(clean_env) -> None:
    fill_store()
    result = runner.invoke(app, ["trends", "--json", "--scale", "raw", "--lowest", "2"])
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert [p["label"] for p in data["periods"]] == ["2026-W45", "2026-W46", "2026-W47"]
    assert [p["n_sessions"] for p in data["periods"]] == [3, 2, 1]  # the unscored run is left out
    w45 = data["periods"][0]
    tools = w45["stats"]["tool_efficiency"]
    assert tools["n"] == 3 and tools["mean"] == pytest.approx(2.0)
    assert tools["high"] == pytest.approx(2.0 + 4.302653 / 3**0.5, rel=1e-6)
    assert tools["low"] == 1.0  # 2.0 - 2.48 is clipped to the 1-5 scale
    lowest = w45["lowest"]
    assert len(lowest) == 2 and lowest[0]["overall"] <= lowest[1]["overall"]
    assert lowest[0]["session_id"] == "sess-02" and lowest[0]["goal"] == "failed"


def test_daily_and_project_filter(clean_env) -> None:
    fill_store()
    result = runner.invoke(app, ["trends", "--by", "day", "--project", "alpha", "--json"])
    data = json.loads(result.stdout)
    assert [p["label"] for p in data["periods"]] == ["2026-11-02", "2026-11-08", "2026-11-14"]
    assert all(p["stats"]["overall_quality"]["mean"] <= 1 for p in data["periods"])


def test_table_output_and_since(clean_env) -> None:
    fill_store()
    result = runner.invoke(app, ["trends", "--since", "2026-11-09"], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.stderr
    assert "2026-W46" in result.stdout and "2026-W45" not in result.stdout
    assert "lowest overall per week" in result.stdout and "sess-05" in result.stdout


def test_empty_store_says_so(clean_env) -> None:
    result = runner.invoke(app, ["trends"])
    assert result.exit_code == 0
    assert "no scored sessions match" in result.stderr
