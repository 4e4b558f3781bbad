"""The requirement checklist: in the reply, on the card, in the store, view, JSON and Langfuse."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from scorer.cli.views import scorecard_view
from scorer.judge.checklist import (
    allowed_labels,
    conflict_with_checklist,
    goal_from_reply,
    goal_from_statuses,
)
from scorer.judge.rubric import default_rubric
from scorer.sinks.langfuse.push import build_score_requests
from scorer.sinks.store import ScoreStore
from tests.fakes.anthropic import FakeAnthropic, message_response, valid_scoring_payload
from tests.judge.test_anthropic import chunk, make_judge, run

CHECKS = [
    ("parse ISO dates with a Z suffix", "met"),
    ("keep the old format working", "likely_met"),
    ("add a regression test", "not_attempted"),
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
    assert "checklist_conflict" not in card.meta  # partial follows: one done, one missing
    assert card.meta["checklist_goal"] == "partial"


def test_goal_that_does_not_follow_the_checklist_is_flagged():
    card = judged({"goal_achievement": "complete"})
    assert card.meta["checklist_conflict"] == (
        "goal_achievement is complete but its checklist of 3 requirements implies partial"
    )
    text = _render(card)
    assert "⚠ contradicts its own checklist: goal_achievement is complete" in text


def test_a_likely_met_requirement_is_no_reason_for_partial():
    checks = [("parse ISO dates", "met"), ("keep the old format", "likely_met")]
    card = judged({"goal_achievement": "complete"}, checks=checks)
    assert "checklist_conflict" not in card.meta and card.meta["checklist_goal"] == "complete"
    card = judged({"goal_achievement": "partial"}, checks=checks)
    assert "implies complete" in card.meta["checklist_conflict"]


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
        "status": "not_attempted",
        "core": True,
        "evidence": [],
        "confidence": 0.03,
    }


def test_terminal_scorecard_shows_the_checklist():
    text = _render(judged({"goal_achievement": "partial"}))
    assert "requirements: 2/3 done (1 shown working)" in text
    assert "parse ISO dates with a Z suffix" in text and "likely met" in text and "#2" in text
    assert "not attempted" in text
    assert "answered by claude-sonnet-5-5" in text


def test_langfuse_goal_comment_leads_with_the_short_checklist():
    card = judged({"goal_achievement": "partial"})
    requests = build_score_requests(card, default_rubric(), {})
    goal = next(r for r in requests if r.name == "goal_achievement")
    first = goal.comment.splitlines()[0]
    assert first == (
        "requirements 2/3 done: ✓ parse ISO dates with a Z suffix; "
        "≈ keep the old format working; ∅ add a regression test"
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


# --- the rule (pure) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("items", "goal"),
    [
        ([("met", True), ("likely_met", True), ("likely_met", False)], "complete"),
        ([("met", True), ("unmet", False)], "partial"),
        ([("likely_met", True), ("not_attempted", True)], "partial"),
        ([("unmet", True), ("met", False)], "failed"),  # only a detail done: core not achieved
        ([("not_attempted", True), ("unmet", True)], "failed"),
        ([("unmet", False), ("met", False)], "partial"),  # nothing marked core: all are
        ([], None),
        # cards judged before likely_met existed keep their own rule
        ([("met", True), ("unverified", True)], "partial"),
        ([("unverified", True)], "failed"),
        ([("met", True)], "complete"),
    ],
)
def test_goal_follows_from_the_checklist(items, goal):
    assert goal_from_statuses(items) == goal


def test_conflicts_allow_exceeded_for_a_complete_checklist():
    reply = {
        "requirements": [{"status": "met", "core": True}],
        "goal_achievement": {"value": "exceeded"},
    }
    assert conflict_with_checklist(reply) is None
    assert goal_from_reply(reply) == "complete"
    reply["goal_achievement"]["value"] = "partial"
    assert conflict_with_checklist(reply) == (
        "goal_achievement is partial but its checklist of 1 requirement implies complete"
    )
    assert allowed_labels("failed") == ("failed",)
