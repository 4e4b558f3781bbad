"""`scorer scores export` (csv/jsonl/parquet), `to_dataframe(store)` and
`scores list --json` with all dimensions."""

from __future__ import annotations

import csv
import io
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.results.rows import COLUMNS, DIMENSIONS, to_dataframe
from scorer.sinks.store import RunFilter, ScoreStore
from tests.results.helpers import fill_store

runner = CliRunner()


def test_csv_has_every_column_and_one_row_per_session(clean_env) -> None:
    fill_store()
    result = runner.invoke(app, ["scores", "export", "--format", "csv"])
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert list(rows[0]) == list(COLUMNS)
    assert len(rows) == 7
    first = rows[0]
    assert first["session_id"] == "sess-unscored" or first["project"] in ("alpha", "beta")
    by_id = {r["session_id"]: r for r in rows}
    s0 = by_id["sess-00"]
    assert s0["goal_achievement_label"] == "complete" and float(s0["goal_achievement"]) == 2.0
    assert s0["tool_efficiency"] == "1.0" and s0["project"] == "alpha" and s0["branch"] == "main"
    assert s0["agent_model"] == "claude-opus-4-5" and s0["started_at"].startswith("2026-11-02")
    assert s0["judge"] == "llm" and s0["rubric_version"] and s0["prompt_hash"] == "abc123"
    assert float(s0["cost_usd"]) == pytest.approx(0.0123)
    assert (
        by_id["sess-unscored"]["status"] == "unscored"
        and not by_id["sess-unscored"]["overall_quality"]
    )


def test_filters_apply(clean_env) -> None:
    fill_store()
    result = runner.invoke(
        app, ["scores", "export", "-f", "csv", "--project", "beta", "--since", "2026-11-09"]
    )
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert {r["project"] for r in rows} == {"beta"}
    assert all(r["started_at"] >= "2026-11-09" for r in rows) and len(rows) == 2


def test_parquet_round_trips_with_types(clean_env, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    fill_store()
    out = tmp_path / "out" / "scores.parquet"
    result = runner.invoke(app, ["scores", "export", "-f", "parquet", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert "wrote 7 runs" in result.stderr
    table = pq.read_table(out)
    assert table.column_names == list(COLUMNS)
    assert str(table.schema.field("started_at").type) == "timestamp[us, tz=UTC]"
    assert table.num_rows == 7
    assert table.column("project").to_pylist().count("alpha") == 3


def test_parquet_needs_output_and_pyarrow(clean_env, tmp_path: Path, monkeypatch) -> None:
    fill_store()
    result = runner.invoke(app, ["scores", "export", "-f", "parquet"])
    assert result.exit_code == 2 and "give --output FILE" in result.stderr
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import fails as if not installed
    out = tmp_path / "x.parquet"
    result = runner.invoke(app, ["scores", "export", "-f", "parquet", "-o", str(out)])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'session-scorer[export]'" in lines[0]
    assert not out.exists()


def test_csv_to_a_file_is_written_whole(clean_env, tmp_path: Path) -> None:
    fill_store()
    out = tmp_path / "s.csv"
    result = runner.invoke(app, ["scores", "export", "-f", "csv", "-o", str(out)])
    assert result.exit_code == 0
    assert out.read_text().splitlines()[0].split(",") == list(COLUMNS)


def test_to_dataframe(clean_env) -> None:
    pytest.importorskip("pandas")
    fill_store()
    with ScoreStore() as store:
        frame = to_dataframe(store, RunFilter(status="scored"))
    assert list(frame.columns) == list(COLUMNS) and len(frame) == 6
    assert str(frame["started_at"].dtype).startswith("datetime64") and "UTC" in str(
        frame["started_at"].dtype
    )
    assert frame.groupby("project")["overall_quality"].count().to_dict() == {"alpha": 3, "beta": 3}


def test_to_dataframe_without_pandas_is_a_config_error(clean_env, monkeypatch) -> None:
    from scorer.errors import ConfigError

    monkeypatch.setitem(sys.modules, "pandas", None)
    with ScoreStore() as store, pytest.raises(ConfigError, match=r"session-scorer\[export\]"):
        to_dataframe(store)


def test_list_json_carries_all_dimensions_and_session(clean_env) -> None:
    fill_store()
    result = runner.invoke(app, ["scores", "list", "--json", "--session", "sess-03"])
    (row,) = json.loads(result.stdout)
    assert set(row["scores"]) == {*DIMENSIONS, "overall_quality"}
    assert row["scores"]["goal_achievement"]["label"] == "exceeded"
    assert row["scores"]["tool_efficiency"]["value"] == 4.0
    assert row["session"]["project"] == "beta" and row["goal"] == "exceeded"
