"""One scorecard JSON shape: the committed JSON Schema is the generated one, and every
command's scorecard JSON validates against it."""

from __future__ import annotations

import json

import jsonschema
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.models import SCORECARD_SCHEMA_VERSION, Scorecard
from scorer.results.schema import scorecard_json_schema, scorecard_json_schema_text
from tests.conftest import REPO
from tests.results.helpers import fill_store

DOC = REPO / "docs" / "scorecard.schema.json"
DEMO = REPO / "examples" / "demo-session.jsonl"


def test_committed_schema_is_the_generated_one() -> None:
    assert DOC.read_text(encoding="utf-8") == scorecard_json_schema_text(), (
        "docs/scorecard.schema.json is stale: run `scorer schema > docs/scorecard.schema.json`"
    )


def test_scorer_schema_prints_it() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert schema == scorecard_json_schema()
    assert schema["x-schema-version"] == SCORECARD_SCHEMA_VERSION
    jsonschema.Draft202012Validator.check_schema(schema)
    assert {"schema_version", "scores", "session", "judge"} <= set(schema["properties"])


def _validate(doc: dict) -> None:
    jsonschema.validate(doc, json.loads(DOC.read_text()))
    assert doc["schema_version"] == SCORECARD_SCHEMA_VERSION
    Scorecard.model_validate(doc)  # and it reads back


def test_score_session_show_and_export_print_the_same_shape(clean_env) -> None:
    runner = CliRunner()
    scored = runner.invoke(app, ["session", str(DEMO), "--json"])
    assert scored.exit_code == 0, scored.stderr
    card = json.loads(scored.stdout)
    _validate(card)
    assert card["scores"]["goal_achievement"]["label"] == "complete"
    shown = json.loads(runner.invoke(app, ["scores", "show", card["session_id"], "--json"]).stdout)
    _validate(shown)
    exported = runner.invoke(app, ["scores", "export", "--format", "jsonl"]).stdout.splitlines()
    assert len(exported) == 1
    _validate(json.loads(exported[0]))
    shown.pop("meta"), card.pop("meta")  # the store adds first_scored_at
    assert shown == card


def test_demo_scores_are_unchanged(clean_env) -> None:
    result = CliRunner().invoke(app, ["session", str(DEMO), "--json", "--no-store"])
    scores = {k: v["label"] or v["value"] for k, v in json.loads(result.stdout)["scores"].items()}
    assert scores == {  # the values before the JSON shape changed
        "goal_achievement": "complete",
        "tool_efficiency": 4.0,
        "process_adherence": 5.0,
        "context_efficiency": 5.0,
        "error_handling": "recovered",
        "output_quality": 4.0,
        "overall_quality": 0.8042,
    }


def test_stored_cards_validate(clean_env) -> None:
    fill_store()
    result = CliRunner().invoke(app, ["scores", "export", "-f", "jsonl", "--all-runs"])
    docs = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(docs) == 7
    for doc in docs:
        _validate(doc)
