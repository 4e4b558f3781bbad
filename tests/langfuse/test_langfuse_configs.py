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
    # The rubric's seven and the derived goal_probability: eight configs.
    assert len(first.created) == 8 and len(fake.configs) == 8
    assert second.created == [] and sorted(second.unchanged) == sorted(first.created)
    assert second.ids == first.ids and not second.changed
    by_name = {c["name"]: c for c in fake.configs.values()}
    assert (
        by_name["overall_quality"]["minValue"] == 0 and by_name["overall_quality"]["maxValue"] == 1
    )
    prob = by_name["goal_probability"]
    assert (prob["dataType"], prob["minValue"], prob["maxValue"]) == ("NUMERIC", 0, 1)
    assert "acceptance checks pass" in prob["description"]
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
    assert archived.archived == ["human_vibe"] and len(fake.configs) == 9  # nothing deleted


def test_data_type_conflict_and_paging():
    with FakeLangfuse() as fake:
        for i in range(120):
            fake.add_config(name=f"other_{i}", dataType="NUMERIC")
        fake.add_config(name="goal_achievement", dataType="NUMERIC")
        report = sync_configs(fake.client())
        gets = fake.calls["configs"] - 7  # 7 creates; the rest were list pages
    assert gets == 2  # 121 configs at limit 100
    assert "goal_achievement" in report.conflicts and len(report.created) == 7
    assert len(report.extra) == 120


def test_dry_run_changes_nothing():
    with FakeLangfuse() as fake:
        report = sync_configs(fake.client(), dry_run=True)
    assert len(report.created) == 8 and fake.configs == {}


def test_cli_sync(monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    runner = CliRunner()
    with FakeLangfuse() as fake:
        first = runner.invoke(root, ["configs", "sync"])
        second = runner.invoke(root, ["configs", "sync", "--json"])
    assert first.exit_code == 0, first.output
    assert first.output.count("create") == 8 and "goal_probability" in first.output
    assert json.loads(second.output)["created"] == []
    assert len(fake.configs) == 8


def test_cli_sync_bad_key_is_one_line(monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "wrong")
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    with FakeLangfuse():
        result = CliRunner().invoke(root, ["configs", "sync"])
    assert result.exit_code == 1
    assert "LANGFUSE_SECRET_KEY" in result.output and "Traceback" not in result.output


def test_a_cache_of_seven_configs_gets_the_eighth_before_a_push(clean_env):
    """A project synced before goal_probability existed: its cached ids lack it, so the
    first push of a card with a probability syncs again and sends it with its config."""
    from scorer.sinks.langfuse import config_ids, push_scorecard
    from tests.langfuse.conftest import make_scorecard

    rubric = default_rubric()
    seven = rubric.model_copy(update={"derived": []})
    with FakeLangfuse() as fake:
        old = sync_configs(fake.client(), seven)
        assert sorted(old.ids) == sorted(s.name for s in rubric.scores)
        ids = config_ids(fake.client(), rubric)
        result = push_scorecard(make_scorecard(goal_probability=0.42), client=fake.client())
    assert "goal_probability" in ids and len(fake.configs) == 8
    assert result.ok and result.accepted[-1] == "goal_probability"
    (batch,) = fake.score_batches
    assert {i["name"]: i["configId"] for i in batch}["goal_probability"] == ids["goal_probability"]


def test_an_archived_probability_config_is_repaired_once_per_run(clean_env):
    """Langfuse drops scores of an archived config after its 202: the run's config check
    covers the eighth config like the seven."""
    from scorer.sinks.langfuse.configs import config_health, config_ids, forget_checks

    rubric = default_rubric()
    with FakeLangfuse() as fake:
        ids = sync_configs(fake.client()).ids
        fake.configs[ids["goal_probability"]]["isArchived"] = True
        assert config_health(fake.client(), rubric, ids) == {
            "goal_probability": "its score config is archived in Langfuse"
        }
        forget_checks()
        config_ids(fake.client(), rubric)
        assert fake.configs[ids["goal_probability"]]["isArchived"] is False
