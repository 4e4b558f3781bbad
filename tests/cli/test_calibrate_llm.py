"""`score-calibrate --judge llm`: concurrency, cost cap, resume and a quiet pipe, against a
loopback Messages API, on a few real Terminal-Bench runs."""

from __future__ import annotations

import shutil

import pytest
from typer.testing import CliRunner

from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.conftest import TERMINAL_BENCH, require
from tests.fakes.anthropic import FakeJudgeServer

runner = CliRunner()
N = 4


@pytest.fixture
def bench(tmp_path):
    root = require(TERMINAL_BENCH)
    small = tmp_path / "bench"
    for task in sorted(p for p in root.iterdir() if (p / "session.jsonl").is_file())[:N]:
        (small / task.name).mkdir(parents=True)
        for name in ("label.json", "session.jsonl"):
            shutil.copy(task / name, small / task.name / name)
    return small


def calibrate(bench, *extra: str):
    from scorer.cli.main import app

    args = ["calibrate", "--ground-truth", f"terminal-bench:{bench}", "--judge", "llm"]
    return runner.invoke(app, [*args, "--n-boot", "0", "--out", str(bench.parent / "r"), *extra])


def llm_cards() -> list:
    return [c for c in ScoreStore().scorecards(judge="llm") if c.status == "scored"]


def test_llm_calibration_runs_concurrently_and_resumes_from_the_store(bench, monkeypatch):
    with FakeJudgeServer(latency=0.05) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        first = calibrate(bench, "--concurrency", "3", "--effort", "low")
        assert first.exit_code == 0, first.stderr
        assert f"scored {N} sessions with the llm judge ($" in first.stderr
        assert "━" not in first.stderr  # no progress bar on a pipe
        calls = server.calls
        assert len(llm_cards()) == N and {c.effort for c in llm_cards()} == {"low"}

        again = calibrate(bench, "--effort", "low")
        assert again.exit_code == 0, again.stderr
        assert f"reused {N} llm scorecards" in again.stderr and "scored" not in again.stderr
        assert server.calls == calls  # nothing paid twice


def test_max_cost_stops_starting_sessions_and_a_rerun_continues(bench, monkeypatch):
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        capped = calibrate(bench, "--max-cost", "0.0001", "--concurrency", "1")
        assert capped.exit_code == 5, capped.stderr  # not finished: no report replaced
        assert f"{N} sessions not started" in capped.stderr and server.calls == 0
        assert "the report in" in capped.stderr and not (bench.parent / "r").exists()
        rest = calibrate(bench)
        assert f"scored {N} sessions" in rest.stderr and len(llm_cards()) == N


def test_cost_bar_draws_on_a_terminal_and_stays_silent_otherwise(capsys):
    from scorer.cli.progress import CostBar

    with CostBar(2, "llm judge", enabled=True) as bar:
        bar.advance(0.0123)
    drawn = capsys.readouterr().err
    assert "llm judge" in drawn and "$0.0123" in drawn and "1/2" in drawn
    with CostBar(2, "llm judge", enabled=False) as bar:
        bar.advance(0.5)
    assert capsys.readouterr().err == ""


def test_sessions_that_fail_after_their_notes_calls_still_count_their_cost(bench, monkeypatch):
    from tests.jobs.test_backfill_inflight import FinalCallsFail

    with FinalCallsFail() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("SCORER_CHUNK_BUDGET", "9000")  # chunked: notes calls, then a final
        get_settings.cache_clear()
        result = calibrate(bench, "--concurrency", "2")
    assert result.exit_code == 6, result.stderr  # sessions failed: run it again
    assert server.input_tokens > 0 and "scored 4" not in result.stderr
    assert result.stderr.count("failed ") >= N
    spent = result.stderr.split(f"judge calls made before {N} sessions failed cost $")[1]
    assert float(spent.split()[0]) > 0
