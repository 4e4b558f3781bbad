"""Opt-in: one real Sonnet call (SCORER_LIVE_TESTS=1 and ANTHROPIC_API_KEY)."""

from __future__ import annotations

import os

import pytest

from scorer.judge.anthropic import AnthropicJudge
from scorer.models import Chunk

pytestmark = pytest.mark.live


@pytest.fixture
def live_key(monkeypatch):
    # clean_env removed the key; read it from the real environment captured at import time.
    if os.environ.get("SCORER_LIVE_TESTS") != "1" or not _KEY:
        pytest.skip("live test: set SCORER_LIVE_TESTS=1 and ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", _KEY)


_KEY = os.environ.get("ANTHROPIC_API_KEY")


def test_live_single_chunk(live_key):
    header = "# Task\nAdd a --verbose flag to cli.py"
    text = "\n".join(
        [
            "#1 prompt Add a --verbose flag to cli.py",
            "#2 tool_call Read cli.py",
            "#3 tool_result def main(): ...",
            "#4 tool_call Edit cli.py: add parser.add_argument('--verbose')",
            "#5 tool_call Bash: pytest -q  → 12 passed",
            "#6 assistant Added --verbose; all 12 tests pass.",
        ]
    )
    card = AnthropicJudge().judge_chunks(
        header,
        [Chunk(index=0, text=text, event_indices=list(range(1, 7)), tokens=100)],
        session_id="live",
        source="test",
    )
    assert card.status == "scored", card.unscored_reason
    assert 0 <= card.overall <= 1 and card.usage.requests >= 1 and card.cost_usd > 0
    # The real service: effort sent, answering model recorded, the checklist filled in.
    assert card.effort == "medium" and card.answered_by and card.requirements
