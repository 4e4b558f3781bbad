"""The option ranges docs/security.md states are the ones the CLI enforces (issue 33 item
10: it said `--budget` outside 1,000–2,000,000 while the CLI accepts 500)."""

from __future__ import annotations

import re

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.settings import MAX_BUDGET, MAX_OVERLAP, MIN_BUDGET
from tests.conftest import REPO

DEMO = str(REPO / "examples" / "demo-session.jsonl")


def documented(flag: str) -> tuple[int, int]:
    text = " ".join((REPO / "docs" / "security.md").read_text(encoding="utf-8").split())
    match = re.search(rf"`{flag}` outside ([\d,]+)–([\d,]+)", text)
    assert match, f"docs/security.md no longer states the {flag} range"
    low, high = (int(n.replace(",", "")) for n in match.groups())
    return low, high


@pytest.mark.parametrize(
    ("flag", "enforced"), [("--budget", (MIN_BUDGET, MAX_BUDGET)), ("--overlap", (0, MAX_OVERLAP))]
)
def test_the_documented_range_is_the_enforced_one(flag: str, enforced: tuple[int, int]) -> None:
    low, high = documented(flag)
    assert (low, high) == enforced
    runner = CliRunner()

    def run(value: int) -> tuple[int, str]:
        args = ["session", DEMO, "--judge", "heuristic", "--dry-run", flag, str(value)]
        result = runner.invoke(app, args)
        return result.exit_code, result.stderr

    for inside in (low, high):  # accepted (500 is then too small for the demo's header: exit 1)
        code, err = run(inside)
        assert code != 2 and "must be between" not in err, (inside, err)
    for outside in (low - 1, high + 1):
        code, err = run(outside)
        assert code == 2 and f"{flag} must be between {low:,} and {high:,}" in err, (outside, err)
