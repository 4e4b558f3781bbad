"""The requirement checklist: in the reply, on the card, in the store, view, JSON and Langfuse."""

from __future__ import annotations

import json

from rich.console import Console

from scorer.cli.views import scorecard_view
from scorer.judge.rubric import default_rubric
from scorer.sinks.langfuse.push import build_score_requests
from scorer.sinks.store import ScoreStore
from tests.fakes.anthropic import FakeAnthropic, message_response, valid_scoring_payload
from tests.judge.test_anthropic import chunk, make_judge, run

CHECKS = [
    ("parse ISO dates with a Z suffix", "met"),
    ("keep the old format working", "unverified"),
    ("add a regression test", "unmet"),
]


def judged(labels: dict[str, str] | None = None, checks=CHECKS):
    payload = valid_scoring_payload(events=(2,), labels=labels, requirements=checks)
    fake = FakeAnthropic([message_response(payload)])
    return run(make_judge(fake), [chunk(0, range(1, 4))])


def test_checklist_is_on_the_card_with_validated_evidence():
    card = judged({"goal_achievement": "partial"})
    assert [(c.requirement, c.status) for c in card.requirements] == CHECKS
    assert [(e.event, e.valid) for e in card.requirements[0].evidence] == [(2, True)]
    assert card.requirements[1].evidence == []
    assert "checklist_conflict" not in card.meta  # partial follows from unmet/unverified


def test_goal_that_does_not_follow_the_checklist_is_flagged():
    card = judged({"goal_achievement": "complete"})
    assert card.meta["checklist_conflict"] == (
        "goal_achievement is complete but 2 of 3 requirements are not met with evidence"
    )
    text = _render(card)
    assert "checklist: goal_achievement is complete" in text


def test_checklist_survives_the_store_and_reaches_json(clean_env):
    card = judged({"goal_achievement": "partial"})
    with ScoreStore() as store:
        store.save(card)
        back = store.latest(card.session_id)
    assert back.requirements == card.requirements and back.effort == "medium"
    assert back.answered_by == "claude-sonnet-5-5" and "_card" not in back.meta
    data = json.loads(back.model_dump_json())
    assert data["requirements"][2] == {
        "requirement": "add a regression test",
        "status": "unmet",
        "core": True,
        "evidence": [],
    }


def test_terminal_scorecard_shows_the_checklist():
    text = _render(judged({"goal_achievement": "partial"}))
    assert "requirements: 1/3 met" in text
    assert "parse ISO dates with a Z suffix" in text and "unverified" in text and "#2" in text
    assert "answered by claude-sonnet-5-5" in text


def test_langfuse_goal_comment_leads_with_the_short_checklist():
    card = judged({"goal_achievement": "partial"})
    requests = build_score_requests(card, default_rubric(), {})
    goal = next(r for r in requests if r.name == "goal_achievement")
    first = goal.comment.splitlines()[0]
    assert first == (
        "requirements 1/3 met: ✓ parse ISO dates with a Z suffix; "
        "? keep the old format working; ✗ add a regression test"
    )
    assert goal.comment.endswith("goal_achievement rationale")
    tool = next(r for r in requests if r.name == "tool_efficiency")
    assert tool.comment == "tool_efficiency rationale"
    assert goal.metadata["answered_by"] == "claude-sonnet-5-5"
    assert goal.metadata["effort"] == "medium"


def _render(card) -> str:
    console = Console(width=200, record=True)
    console.print(scorecard_view(card))
    return console.export_text()
