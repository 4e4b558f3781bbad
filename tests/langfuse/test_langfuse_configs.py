"""Score configs as code: sync is idempotent, reports drift, never deletes; the CLI."""

from __future__ import annotations

import json

import typer
from typer.testing import CliRunner

from scorer.cli.configs import app
from scorer.judge.rubric import default_rubric
from scorer.sinks.langfuse import sync_configs
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse

# Mounted the way the integrator registers it: `scorer configs sync`.
root = typer.Typer()
root.add_typer(app, name="configs")


def test_sync_twice_creates_nothing_the_second_time(clean_env):
    with FakeLangfuse() as fake:
        first = sync_configs(fake.client())
        second = sync_configs(fake.client())
    assert len(first.created) == 7 and len(fake.configs) == 7
    assert second.created == [] and sorted(second.unchanged) == sorted(first.created)
    assert second.ids == first.ids and not second.changed
    by_name = {c["name"]: c for c in fake.configs.values()}
    assert (
        by_name["overall_quality"]["minValue"] == 0 and by_name["overall_quality"]["maxValue"] == 1
    )
    assert (
        by_name["tool_efficiency"]["minValue"] == 1 and by_name["tool_efficiency"]["maxValue"] == 5
    )
    labels = [c["label"] for c in by_name["goal_achievement"]["categories"]]
    assert labels == ["failed", "partial", "complete", "exceeded"]
    cache = json.loads((clean_env / "langfuse-configs.json").read_text())
    assert cache[f"{HOST}|{PUBLIC_KEY}"]["configs"] == first.ids


def test_drift_archived_and_extra_configs_are_reported():
    rubric = default_rubric()
    with FakeLangfuse() as fake:
        sync_configs(fake.client())
        by_name = {c["name"]: c for c in fake.configs.values()}
        by_name["tool_efficiency"].update(description="old words", maxValue=10)
        by_name["error_handling"]["isArchived"] = True
        fake.add_config(name="human_vibe", dataType="NUMERIC")
        report = sync_configs(fake.client(), rubric)
        assert report.updated == {"tool_efficiency": ["description", "max_value"]}
        assert report.unarchived == ["error_handling"]
        assert report.extra == ["human_vibe"] and report.archived == []
        assert by_name["tool_efficiency"]["maxValue"] == 5
        assert by_name["error_handling"]["isArchived"] is False
        archived = sync_configs(fake.client(), archive_extra=True)
    assert archived.archived == ["human_vibe"] and len(fake.configs) == 8  # nothing deleted


def test_data_type_conflict_and_paging():
    with FakeLangfuse() as fake:
        for i in range(120):
            fake.add_config(name=f"other_{i}", dataType="NUMERIC")
        fake.add_config(name="goal_achievement", dataType="NUMERIC")
        report = sync_configs(fake.client())
        gets = fake.calls["configs"] - 6  # 6 creates; the rest were list pages
    assert gets == 2  # 121 configs at limit 100
    assert "goal_achievement" in report.conflicts and len(report.created) == 6
    assert len(report.extra) == 120


def test_dry_run_changes_nothing():
    with FakeLangfuse() as fake:
        report = sync_configs(fake.client(), dry_run=True)
    assert len(report.created) == 7 and fake.configs == {}


def test_cli_sync(monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    runner = CliRunner()
    with FakeLangfuse() as fake:
        first = runner.invoke(root, ["configs", "sync"])
        second = runner.invoke(root, ["configs", "sync", "--json"])
    assert first.exit_code == 0, first.output
    assert first.output.count("create") == 7
    assert json.loads(second.output)["created"] == []
    assert len(fake.configs) == 7


def test_cli_sync_bad_key_is_one_line(monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "wrong")
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    with FakeLangfuse():
        result = CliRunner().invoke(root, ["configs", "sync"])
    assert result.exit_code == 1
    assert "LANGFUSE_SECRET_KEY" in result.output and "Traceback" not in result.output
