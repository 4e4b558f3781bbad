"""Every run scored from the shared real data has a human title and the agent's model in
`scorer scores list`, and a word of its first prompt finds it (issue 26, done-when 1)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import SHARED_DATA

runner = CliRunner()


def shared_files() -> list[str]:
    if not SHARED_DATA.exists():
        pytest.skip(f"real data not available: {SHARED_DATA}")
    files = sorted((SHARED_DATA / "claude-code-projects").glob("*/*.jsonl"))
    bench = SHARED_DATA / "terminal-bench" / "claude_code_coder"
    files += [
        bench / "blind-maze-explorer-5x5" / "session.jsonl",
        bench / "fix-git" / "session.jsonl",
    ]
    files += sorted((SHARED_DATA / "tmux-panes").glob("*.txt"))
    files += sorted((SHARED_DATA / "terminal-bench" / "casts").glob("*.cast"))
    return [str(f) for f in files]


@pytest.fixture(scope="module")
def listed(tmp_path_factory) -> list[dict]:
    home = tmp_path_factory.mktemp("home")
    env = {"SCORER_HOME": str(home), "ANTHROPIC_API_KEY": ""}
    for path in shared_files():
        result = runner.invoke(app, ["session", path, "--judge", "heuristic", "-q"], env=env)
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["scores", "list", "--json", "--limit", "100"], env=env)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_run_has_a_title_and_the_agent_model(listed):
    assert len(listed) >= 13  # 14 files; two fasthooks files are one session id
    for run in listed:
        assert run["title"] and run["title"] == run["session"]["title"], run["session_id"]
        assert run["session"]["title_from"] != "id", run["session_id"]
        assert run["session"]["agent_model"], run["session_id"]
        assert not run["title"].startswith("terminal"), run["session_id"]
    by_id = {r["session_id"]: r for r in listed}
    spotter = by_id["55604662-cf2a-4331-851a-ec234028f8ca"]
    assert spotter["title"] == "mix phx.server doesnt seem to start"
    assert spotter["session"]["task"].startswith("mix phx.server doesnt seem to start")
    bench = next(r for r in listed if r["session"]["title"] == "blind-maze-explorer-5x5")
    assert bench["session"]["title_from"] == "folder"
    assert bench["session"]["times_from"] == "label"  # the run's label.json, not the copy time
    assert bench["session"]["started_at"].startswith("2025-11-09T06:")


def test_scores_list_search_and_filters(tmp_path):
    env = {"SCORER_HOME": str(tmp_path), "ANTHROPIC_API_KEY": ""}
    for path in shared_files():
        runner.invoke(app, ["session", path, "--judge", "heuristic", "-q"], env=env)

    def ids(*args: str) -> set[str]:
        result = runner.invoke(app, ["scores", "list", "--json", *args], env=env)
        assert result.exit_code == 0, result.output
        return {r["session_id"] for r in json.loads(result.stdout)}

    found = ids("--search", "PHX.server")  # a word of the first prompt, any case
    assert "55604662-cf2a-4331-851a-ec234028f8ca" in found
    assert any(sid.startswith("terminal:spotter-short.terminal.txt:") for sid in found)
    assert ids("--search", "maze") >= {"e2b8481a-d160-489d-b171-ee1d5e37ecda"}
    assert ids("--search", "maze explorer")  # every word must match, in any field
    assert ids("--search", "maze zebra") == set()
    assert ids("--project", "spotter-4te") == {"ae4a77f8-aedd-4bc1-888f-c94edc91af04"}
    assert all(s.startswith("terminal:") for s in ids("--source", "terminal"))
    assert ids("--since", "2026-02-11", "--until", "2026-02-13") == {
        "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
    }
    table = runner.invoke(app, ["scores", "list", "--limit", "3"], env={**env, "COLUMNS": "80"})
    assert table.exit_code == 0
    total = len(ids("--limit", "100"))
    assert f"3 of {total} runs (newest first; --limit N for more)" in table.stdout
    assert all(len(line) <= 80 for line in table.stdout.splitlines())


def test_trends_put_terminal_bench_runs_on_the_day_they_ran(clean_env) -> None:
    """Terminal-Bench runs used to be dated by their files' copy time (all on one dot);
    their `label.json` dates them (issue 33 item 6)."""
    if not SHARED_DATA.exists():
        pytest.skip(f"real data not available: {SHARED_DATA}")
    bench = SHARED_DATA / "terminal-bench"
    runs = ("claude_code_coder/chess-best-move", "claude_code_gpt5/qemu-startup")
    for run in runs:
        path = bench / run / "session.jsonl"
        result = runner.invoke(app, ["session", str(path), "--judge", "heuristic", "-q"])
        assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["trends", "--by", "day", "--json"])
    assert result.exit_code == 0, result.output
    periods = {p["label"]: p["n_sessions"] for p in json.loads(result.stdout)["periods"]}
    assert periods == {"2025-11-09": 1, "2025-11-10": 1}
