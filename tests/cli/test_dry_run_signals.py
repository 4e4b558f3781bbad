"""`score-session --dry-run` shows the final-verification and requirement signals."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from scorer.cli.main import app
from tests.conftest import REPO

DEMO = REPO / "examples" / "demo-session.jsonl"
TASK = "Fix it:\n1. Correct median() in `tinycalc/stats.py`\n2. Document it in `CHANGES.rst`"
runner = CliRunner()


def dry_run(*args: str):
    result = runner.invoke(app, ["session", str(DEMO), "--dry-run", "--prompt", TASK, *args])
    assert result.exit_code == 0, result.stderr
    return result


def test_dry_run_json_carries_the_new_signals():
    signals = json.loads(dry_run("--json").stdout)["signals"]
    assert signals["final_verification"] == {
        "status": "passed",
        "kind": "test",
        "command": "Bash: python -m pytest -q",
        "call_event": 23,
        "result_event": 24,
        "last_edit_event": 21,
        "checks_after_edit": 1,
    }
    reqs = signals["requirements"]
    assert [(r["status"], r["matched"]) for r in reqs] == [
        ("covered", ["tinycalc/stats.py", "stats.py"]),
        ("uncovered", []),
    ]
    assert signals["final_caveats"] == []


def test_dry_run_table_summarises_requirements():
    out = dry_run().stdout
    assert "final_verification" in out and "status=passed, kind=test" in out
    assert "1/2 covered, 0 unchecked; untouched:" in out and "CHANGES.rst" in out
