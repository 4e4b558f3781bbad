"""A local backfill over a fresh copy of the shared Terminal-Bench folder, with default
options: every run scored under its real id, a results table at the end, and exit codes
that tell cron the truth (issue 26, done-when 3 and 4)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.jobs.run_state import BackfillSummary, SessionResult
from tests.conftest import TERMINAL_BENCH, require

runner = CliRunner()


@pytest.fixture(scope="module")
def bench_copy(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("copy") / "claude_code_coder"
    # copied like `cp -r`: every file modified just now
    shutil.copytree(require(TERMINAL_BENCH), root, copy_function=shutil.copy)
    return root


def _real_ids(root: Path) -> set[str]:
    ids = set()
    for stream in root.glob("*/session.jsonl"):
        first = json.loads(stream.read_text().splitlines()[0])
        ids.add(first["session_id"])
    return ids


def test_a_fresh_copy_is_scored_under_real_ids_and_ends_with_a_table(bench_copy, tmp_path):
    env = {"SCORER_HOME": str(tmp_path / "home"), "COLUMNS": "100"}
    args = ["backfill", "--projects-root", str(bench_copy)]
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    want = _real_ids(bench_copy)
    assert len(want) == 79  # one task has no stream
    assert "79 scored" in result.stderr and "0 active" in result.stderr
    assert "session id clash" not in result.stderr
    table = result.stderr.split("results")[1].split("\nbackfill ")[0]
    assert "outcome" in table and "overall" in table and "goal" in table
    rows = [line.split() for line in table.splitlines() if line.strip().startswith("scored")]
    assert len(rows) == 30  # the lowest overall first, the rest counted
    folders = {p.name for p in bench_copy.iterdir()}
    assert all(row[4] in folders and row[5].startswith("[") for row in rows), rows  # titled
    overalls = [float(row[1]) for row in rows]
    assert overalls == sorted(overalls)
    assert "… and 49 more (scorer scores list)" in table
    assert all(len(line) <= 100 for line in table.splitlines())

    listed = runner.invoke(app, ["scores", "list", "--json", "--limit", "200"], env=env)
    runs = json.loads(listed.stdout)
    assert {r["session_id"] for r in runs} == want
    assert {r["session"]["title_from"] for r in runs} == {"folder"}

    again = runner.invoke(app, [*args, "--json"], env=env)  # nothing left to do: exit 0
    assert again.exit_code == 0, again.output
    summary = BackfillSummary.model_validate_json(again.stdout)
    assert summary.skipped == 79 and summary.scored == 0
    assert all(s.title and s.overall is not None for s in summary.sessions)

    dry = runner.invoke(app, [*args, "--dry-run", "--judge", "heuristic"], env=env)
    assert dry.exit_code == 0, dry.output
    assert "dry run 0 sessions to judge" in dry.stderr and "79 already done" in dry.stderr
    assert "~$0.0000" in dry.stderr


def test_a_failed_session_exits_6_and_says_how_to_finish(bench_copy, tmp_path):
    root = tmp_path / "runs"
    for task in ("hello-world", "fix-git"):
        shutil.copytree(bench_copy / task, root / task)
    broken = root / "broken-run"
    broken.mkdir()
    # a stream that names itself but holds nothing to judge: this session fails
    (broken / "session.jsonl").write_text(
        '{"type": "system", "subtype": "init", "session_id": "broken-1"}\n'
    )
    env = {"SCORER_HOME": str(tmp_path / "home")}
    result = runner.invoke(app, ["backfill", "--projects-root", str(root)], env=env)
    assert result.exit_code == 6, result.output
    assert "2 scored" in result.stderr and "1 failed" in result.stderr
    assert "run the same command again to retry" in result.stderr
    table = [line.split() for line in result.stderr.split("results")[1].splitlines()[4:]]
    outcomes = [row for row in table if row[:1] in (["failed"], ["scored"])]
    rows = [row for row in outcomes if row[1] == "-" or row[1][0].isdigit()]  # not a reason
    assert [row[0] for row in rows] == ["failed", "scored", "scored"]  # failures lead
    assert "broken-1" in rows[0]

    summary = BackfillSummary(run_key="k", scored=1, failed=1)
    from scorer.cli.backfill import exit_status

    assert exit_status(summary, dry_run=False, max_cost=None) == 6
    assert exit_status(BackfillSummary(run_key="k", failed=2), dry_run=False, max_cost=None) == 1
    assert exit_status(BackfillSummary(run_key="k", incomplete=1, scored=1), dry_run=False,
                       max_cost=None) == 6  # fmt: skip
    assert exit_status(BackfillSummary(run_key="k", not_started=3, scored=1), dry_run=False,
                       max_cost=5.0) == 5  # fmt: skip
    assert SessionResult(session_id="x", outcome="failed").title is None
