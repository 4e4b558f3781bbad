"""Both judges list the dimensions in one order (the rubric's), in tables and in JSON."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.judge.rubric import default_rubric, load_rubric
from scorer.settings import get_settings
from tests.conftest import REPO
from tests.fakes.anthropic import FakeAnthropic, message_response, serve, valid_scoring_payload

DEMO = REPO / "examples" / "demo-session.jsonl"
ORDER = [
    "goal_achievement",
    "process_adherence",
    "tool_efficiency",
    "context_efficiency",
    "error_handling",
    "output_quality",
    "overall_quality",
]
runner = CliRunner()


def _score(*args: str):
    result = runner.invoke(app, ["session", str(DEMO), "--no-store", *args])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _table_order(text: str) -> list[str]:
    rows = [line for line in text.splitlines() if line.startswith("│ ")]
    names = [row.split("│")[1].strip() for row in rows]
    return [n for n in names if n in ORDER]


def _llm(monkeypatch, *args: str) -> str:
    reply = valid_scoring_payload(events=(3,))
    # the model may answer in any order: put the dimensions backwards
    backwards = dict(reversed(list(reply.items())))
    fake = FakeAnthropic([message_response(backwards)])
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        get_settings.cache_clear()
        return _score("--judge", "llm", *args)


def test_rubric_order_is_weight_then_file_order_overall_last():
    rubric = load_rubric()
    assert [s.name for s in rubric.scores] == ORDER
    assert rubric.hash == default_rubric().hash  # ordering does not change the hash
    shuffled = {name: i for i, name in enumerate(reversed([*ORDER, "unknown"]))}
    assert list(rubric.ordered(shuffled)) == [*ORDER, "unknown"]


def test_json_order_is_the_same_for_both_judges(clean_env, monkeypatch):
    heuristic = json.loads(_score("--judge", "heuristic", "--json"))
    llm = json.loads(_llm(monkeypatch, "--json"))
    assert (heuristic["judge"], llm["judge"]) == ("heuristic", "llm")
    for card in (heuristic, llm):
        assert list(card["scores"]) == ORDER


def test_table_order_is_the_same_for_both_judges(clean_env, monkeypatch):
    assert _table_order(_score("--judge", "heuristic")) == ORDER
    assert _table_order(_llm(monkeypatch)) == ORDER
