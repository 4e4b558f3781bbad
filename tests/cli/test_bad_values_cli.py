"""Bad option values are usage errors: one line naming the flag, exit 2, nothing done."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import REPO

DEMO = str(REPO / "examples" / "demo-session.jsonl")
runner = CliRunner()

CASES = [
    (["session", DEMO, "--budget", "0"], "--budget must be between 500 and 2,000,000, got 0"),
    (["session", DEMO, "--budget", "-100"], "--budget must be between 500 and 2,000,000"),
    (["session", DEMO, "--escalate-below", "5"], "--escalate-below must be between 0 and 1"),
    (["session", DEMO, "--escalate-below", "-0.1"], "--escalate-below must be between 0 and 1"),
    (["session", DEMO, "--overlap", "-1"], "--overlap must be between 0 and 1,000, got -1"),
    (["backfill", "--limit", "-1"], "--limit must not be negative, got -1"),
    (["backfill", "--sample", "-3"], "--sample must not be negative"),
    (["backfill", "--max-cost", "-0.5"], "--max-cost must not be negative, got -0.5"),
    (["backfill", "--idle-minutes", "-10"], "--idle-minutes must not be negative"),
    (["backfill", "--calibration-sample", "-1"], "--calibration-sample must not be negative"),
    (["backfill", "--escalate-below", "2"], "--escalate-below must be between 0 and 1"),
    (
        ["backfill", "--from", "2026-02-01", "--to", "2026-01-01"],
        "--to 2026-01-01T00:00:00+00:00 is not after --from 2026-02-01T00:00:00+00:00",
    ),
    (["backfill", "--from", "2026-02-01", "--to", "2026-02-01"], "the window is empty"),
    (
        ["backfill", "--source", "langfuse", "--from", "2026-02-01", "--to", "2026-01-01"],
        "is not after --from",
    ),
    (["calibrate", "--n-boot", "-1"], "--n-boot must not be negative, got -1"),
]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a[:3]) for a, _ in CASES])
def test_bad_value_is_a_one_line_usage_error(args: list[str], message: str, clean_env) -> None:
    result = runner.invoke(app, [*args, "--dry-run"] if args[0] == "backfill" else args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.output and result.stdout == ""
    assert not (clean_env / "scores.sqlite3").exists()  # nothing was scored or stored


def test_edge_values_are_accepted(clean_env) -> None:
    result = runner.invoke(
        app, ["session", DEMO, "--judge", "heuristic", "--escalate-below", "0", "--overlap", "0"]
    )
    assert result.exit_code == 0, result.output
