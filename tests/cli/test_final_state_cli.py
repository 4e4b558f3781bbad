"""`score-session` and `score-backfill` with the workspace's final state: shown by
`--render`, kept on the card, turned off by `--no-final-state` or `SCORER_FINAL_STATE=0`."""

from __future__ import annotations

import json
from datetime import timedelta

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.settings import get_settings
from tests.live.workspace_helpers import START, commit, make_repo, transcript

runner = CliRunner()
TASK = "Write the notes to docs/notes.md."


def run(*args: str):
    return runner.invoke(app, ["session", *args], catch_exceptions=False)


def _transcript(tmp_path):
    repo = make_repo(tmp_path / "app")
    commit(repo, {"docs/notes.md": "# Notes\n"}, "notes", START + timedelta(minutes=10))
    return transcript(tmp_path / "projects" / "-app" / "s.jsonl", cwd=repo, task=TASK)


def test_render_shows_the_final_state_and_the_option_turns_it_off(tmp_path, monkeypatch):
    path = str(_transcript(tmp_path))
    shown = run(path, "--render")
    assert shown.exit_code == 0, shown.stderr
    assert "#9 SYSTEM:\nFINAL STATE (observed by session-scorer" in shown.stdout
    assert "deliverable docs/notes.md (named by the task): exists, 8 bytes, 1 line" in shown.stdout
    _off(run(path, "--render", "--no-final-state"))
    monkeypatch.setenv("SCORER_FINAL_STATE", "0")
    get_settings.cache_clear()
    _off(run(path, "--render"))
    assert "FINAL STATE" in run(path, "--render", "--final-state").stdout  # the flag wins


def _off(result) -> None:
    assert result.exit_code == 0 and "FINAL STATE" not in result.stdout
    assert "#8 ASSISTANT: Done" in result.stdout


def test_the_card_says_where_its_final_state_is(tmp_path):
    result = run(str(_transcript(tmp_path)), "--json", "--judge", "heuristic")
    assert result.exit_code == 0, result.stderr
    final = json.loads(result.stdout)["meta"]["final_state"]
    assert final["read"] is True and final["events"] == [9, 11]
    assert final["start"] == "HEAD at the session's start, from the reflog"


def test_a_bad_setting_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SCORER_FINAL_STATE_MAX_AGE", "0")
    get_settings.cache_clear()
    result = run(str(_transcript(tmp_path)), "--render")
    assert result.exit_code != 0 and "Traceback" not in result.output + result.stderr
    assert "SCORER_FINAL_STATE_MAX_AGE" in result.stderr


def test_backfill_takes_the_option():
    result = runner.invoke(app, ["backfill", "--help"], env={"COLUMNS": "200"})
    assert "--no-final-state" in result.stdout
