"""`score-session` end to end through its entry point (typer CliRunner, clean env)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.judge.rubric import default_rubric
from scorer.sinks.store import ScoreStore
from tests.conftest import CC_PROJECTS, REPO, TERMINAL_BENCH, require
from tests.fakes.anthropic import FakeAnthropic, message_response, serve, valid_scoring_payload

DEMO = REPO / "examples" / "demo-session.jsonl"
SEVEN = {s.name for s in default_rubric().scores}
runner = CliRunner()


def run(*args: str):
    return runner.invoke(app, ["session", *args], catch_exceptions=False)


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output + result.stderr
    return lines[0]


def test_demo_without_key_uses_heuristic_and_stores(clean_env):
    result = run(str(DEMO), "--json")
    assert result.exit_code == 0, result.stderr
    assert "ANTHROPIC_API_KEY is not set" in result.stderr
    data = json.loads(result.stdout)
    assert data["judge"] == "heuristic"
    assert set(data["scores"]) == SEVEN
    assert data["scores"]["goal_achievement"]["label"] == "complete"
    assert data["schema_version"] == 1 and data["session"]["n_events"] > 0
    rows = sqlite3.connect(clean_env / "scores.sqlite3").execute("select judge from runs")
    assert [r[0] for r in rows] == ["heuristic"]


def test_demo_scores_are_unchanged_by_refactors():
    """The demo's heuristic card, field by field, as recorded before the seams refactor.

    Left out: `prompt_hash` (a hash of the heuristic's own source), `created_at` and
    `meta.origin` (the path as given).
    """
    golden = json.loads((REPO / "tests" / "fixtures" / "demo-heuristic-scores.json").read_text())
    result = run(str(DEMO), "--json", "--no-store")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    data["meta"].pop("origin")
    assert {k: data[k] for k in golden} == golden


def test_dry_run_json_has_the_plan():
    result = run(str(DEMO), "--dry-run", "--json", "--budget", "900")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["source"] == "claude-code"
    assert data["n_events"] == 25
    assert data["signals"]["tool_calls"] == 8
    assert len(data["chunks"]) >= 2 and all(t <= 900 for t in data["chunks"])


def test_dry_run_rich_and_render():
    rich = run(str(DEMO), "--dry-run")
    assert rich.exit_code == 0 and "chunk plan" in rich.stdout and "tool_calls" in rich.stdout
    rendered = run(str(DEMO), "--render")
    assert rendered.exit_code == 0 and "#1 " in rendered.stdout and "#25" in rendered.stdout


@pytest.mark.parametrize(
    ("arg", "needle"),
    [
        ("missing.jsonl", "no such file"),
        ("0d3e5f1a-0000-4000-8000-000000000000", "no-projects"),
        (str(REPO / "tests/fixtures/sources/array.json"), "transcript"),
        (str(REPO / "tests/fixtures/sources/empty.jsonl"), "empty"),
        (str(REPO / "tests/fixtures/sources/binary.jsonl"), "binary"),
    ],
)
def test_bad_input_is_one_line_and_exit_1(arg, needle):
    result = run(arg)
    assert result.exit_code == 1
    assert needle in one_error_line(result).lower()


def test_session_id_is_found_under_projects_root(tmp_path, monkeypatch):
    project = tmp_path / "projects" / "-home-me-demo"
    project.mkdir(parents=True)
    (project / "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00.jsonl").write_bytes(DEMO.read_bytes())
    monkeypatch.setenv("SCORER_CLAUDE_PROJECTS", str(tmp_path / "projects"))
    result = run("0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00", "--dry-run", "--json")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["session_id"] == "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00"


def test_escalate_below_exits_4():
    result = run(str(DEMO), "--judge", "heuristic", "--escalate-below", "0.99")
    assert result.exit_code == 4
    assert "ESCALATE" in result.stderr


def _real_transcripts() -> list[Path]:
    if not CC_PROJECTS.exists():
        return []
    return sorted(CC_PROJECTS.rglob("*.jsonl")) + sorted(TERMINAL_BENCH.glob("*/session.jsonl"))


@pytest.mark.parametrize("path", _real_transcripts(), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_heuristic_json_gives_seven_scores_for_every_real_transcript(path):
    result = run(str(path), "--judge", "heuristic", "--json", "--no-store")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["judge"] == "heuristic" and set(data["scores"]) == SEVEN


def test_real_data_present_or_skipped():
    require(CC_PROJECTS)
    assert len(_real_transcripts()) == 8 + 79


# --- LLM path, through ANTHROPIC_BASE_URL to a loopback fake ---------------------------------

PLANTED = {
    "anthropic": "sk-ant-api03-" + "Q" * 40 + "AA",
    "github": "ghp_" + "a1B2c3D4e5" * 4,
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
}


def _planted_transcript(tmp_path: Path) -> Path:
    """The demo session with secrets planted in the prompt and a tool output."""
    lines = DEMO.read_text().splitlines()
    out = []
    for line in lines:
        row = json.loads(line)
        msg = row.get("message") or {}
        if row.get("type") == "user" and isinstance(msg.get("content"), str):
            msg["content"] += f"\nuse ANTHROPIC_API_KEY={PLANTED['anthropic']}"
        elif row.get("type") == "user" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if block.get("type") == "tool_result" and isinstance(block.get("content"), str):
                    block["content"] += f"\ntoken {PLANTED['github']} key {PLANTED['aws']}"
        out.append(json.dumps(row))
    path = tmp_path / "planted.jsonl"
    path.write_text("\n".join(out) + "\n")
    return path


def test_llm_path_via_base_url_scores_redacts_and_stores(tmp_path, monkeypatch, clean_env):
    fake = FakeAnthropic([message_response(valid_scoring_payload(events=(3, 12)))])
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        result = run(str(_planted_transcript(tmp_path)), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["judge"] == "llm" and data["model"] == "claude-sonnet-5-5"
    assert set(data["scores"]) == SEVEN
    rubric = default_rubric()
    normalized = {d["name"]: d["normalized"] for d in data["scores"].values()}
    expected = sum(d.weight * normalized[d.name] for d in rubric.dimensions)
    assert data["scores"]["overall_quality"]["value"] == pytest.approx(expected, abs=1e-4)
    assert data["usage"]["input_tokens"] == 100 and data["cost_usd"] > 0
    body = json.dumps(fake.message_bodies)
    assert "temperature" not in fake.message_bodies[0]
    stored = (clean_env / "scores.sqlite3").read_bytes()
    with ScoreStore(clean_env / "scores.sqlite3") as db:
        timeline = json.dumps(db.timeline(data["session_id"]))
    assert "[REDACTED:" in timeline
    for secret in PLANTED.values():
        assert secret not in body
        assert secret.encode() not in stored
        assert secret not in timeline
    assert "[REDACTED:" in body


def test_llm_invalid_twice_is_unscored_exit_3(monkeypatch):
    fake = FakeAnthropic([message_response("not json"), message_response("{still not json")])
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        result = run(str(DEMO), "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["status"] == "unscored" and data["raw_reply"]
    assert data["scores"] == {}


def test_llm_api_down_after_retries_is_exit_1_not_unscored(monkeypatch, fast_retry_waits):
    """An unreachable judge API is an error (exit 1), not an unscored session (exit 3)."""
    from scorer.judge import retry
    from tests.fakes.anthropic import error_response

    fake = FakeAnthropic([error_response(529, message="Overloaded")] * retry.MAX_ATTEMPTS)
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        result = run(str(DEMO), "--json", "--no-store")
    assert result.exit_code == 1, result.stderr
    assert "529" in one_error_line(result) and result.stdout == ""
