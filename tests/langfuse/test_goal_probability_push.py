"""goal_probability as an eighth Langfuse score: NUMERIC 0-1 with its own config, a
deterministic id, a comment saying how it was made, on every write path; read back by
`verify_cards`. Cards without a probability push the seven, as before."""

from __future__ import annotations

from scorer import langfuse_caps
from scorer.judge.rubric import default_rubric
from scorer.models import Scorecard
from scorer.sinks.langfuse import configs, push_scorecard, score_id
from scorer.sinks.langfuse.derived import probability_comment, pushed_names
from scorer.sinks.langfuse.verify import expected_ids, verify_cards
from tests.langfuse.conftest import make_scorecard
from tests.langfuse.fake_server import FakeLangfuse
from tests.langfuse.fake_v3 import FakeLangfuseV3

SEVEN = [s.name for s in default_rubric().scores]


def settled_card(session_id: str = "sess-p") -> Scorecard:
    """A card whose probability came after two second opinions and relabelled the goal."""
    card = make_scorecard(session_id, goal_probability=0.7312)
    card.meta.update(
        goal_probability_model="2026-11-28.2",
        first_goal_probability=0.61,
        judge_goal="partial",
        second_opinions=[
            {"kind": "sample", "p": 0.8, "judge_goal": "complete", "requirements": [{"x": 1}]},
            {"kind": "adversarial", "p": 0.7836, "judge_goal": "partial", "cost_usd": 0.01},
        ],
    )
    return card


def test_the_list_post_carries_the_probability_as_an_eighth_numeric_score():
    card = settled_card()
    with FakeLangfuse() as fake:
        result = push_scorecard(card, client=fake.client())
        again = push_scorecard(card, client=fake.client())
    assert result.ok and result.accepted == [*SEVEN, "goal_probability"]
    (batch, _) = fake.score_batches
    item = {i["name"]: i for i in batch}["goal_probability"]
    config = {c["name"]: c for c in fake.configs.values()}["goal_probability"]
    assert (item["value"], item["dataType"], item["configId"]) == (0.7312, "NUMERIC", config["id"])
    assert item["id"] == score_id(card, "goal_probability") == result.score_ids["goal_probability"]
    assert item["sessionId"] == "sess-p" and item["timestamp"] == "2026-11-22T09:30:00Z"
    meta = item["metadata"]
    assert meta["goal_probability_model"] == "2026-11-28.2" and meta["normalized"] == 0.7312
    assert meta["first_goal_probability"] == 0.61 and meta["judge_goal"] == "partial"
    assert meta["second_opinions"] == [
        {"kind": "sample", "p": 0.8, "judge_goal": "complete"},
        {"kind": "adversarial", "p": 0.7836, "judge_goal": "partial"},
    ]
    assert meta["rubric_version"] == card.rubric_version and meta["judge"] == "llm"
    # Re-running updates the same eight scores in place.
    assert again.score_ids == result.score_ids and len(fake.scores) == 8


def test_the_comment_says_how_the_probability_was_made():
    text = probability_comment(settled_card())
    assert text.splitlines() == [
        "P(the task's own acceptance checks pass) = 0.73, from the judge's requirement "
        "checklist and the session's outcome signals by the fitted model 2026-11-28.2",
        "after second opinions: sample 0.80 (complete), adversarial 0.78 (partial); "
        "the mean with the first verdict's 0.61",
        "goal_achievement follows from it: complete (the judge said partial)",
    ]
    plain = make_scorecard(goal_probability=0.2, meta={"goal_probability_model": "v9"})
    assert "second opinions" not in probability_comment(plain)
    assert "the judge said" not in probability_comment(plain)
    rules = make_scorecard(judge="heuristic", model=None, goal_probability=0.4)
    assert "heuristic judge's rules" in probability_comment(rules)
    assert "(unversioned)" in probability_comment(rules)
    failed = settled_card()
    failed.meta["second_opinions"] = [{"kind": "sample", "error": "overloaded"}]
    assert "sample: none (overloaded)" in probability_comment(failed)


def test_a_card_without_a_probability_pushes_seven_as_before():
    card = make_scorecard("sess-old")
    assert card.goal_probability is None
    assert pushed_names(card, default_rubric()) == SEVEN
    with FakeLangfuse() as fake:
        result = push_scorecard(card, client=fake.client())
    assert result.ok and [i["name"] for i in fake.score_batches[0]] == SEVEN
    assert "goal_probability" not in result.score_ids
    assert len(fake.configs) == 8  # the config exists all the same


def test_self_hosted_ingestion_sends_eight_events_with_the_same_ids():
    card = settled_card("sess-v3p")
    with FakeLangfuse() as v4:
        on_v4 = push_scorecard(card, client=v4.client())
    langfuse_caps.reset()
    configs.forget_checks()
    with FakeLangfuseV3() as v3:
        result = push_scorecard(card, client=v3.client())
        stored = v3.scores[result.score_ids["goal_probability"]]
    assert result.ok and result.path == "ingestion" and len(result.accepted) == 8
    assert result.score_ids == on_v4.score_ids and v3.calls["ingestion"] == 1
    assert stored["value"] == 0.7312 and stored["dataType"] == "NUMERIC"


def test_a_server_refusing_lists_gets_eight_single_posts():
    card = settled_card("sess-odd")
    with FakeLangfuseV3(version="4.30.1") as odd:
        result = push_scorecard(card, client=odd.client())
    assert result.ok and result.path == "single" and len(result.accepted) == 8
    assert odd.calls["scores"] == 1 + 8  # one refused list, then eight objects


def test_an_out_of_range_probability_is_rejected_per_item_like_any_score():
    """The config's 0-1 range is checked by Langfuse; the other seven still land."""
    card = settled_card()
    with FakeLangfuseV3() as v3:
        v3.reject = lambda item: "out of range" if item["name"] == "goal_probability" else None
        result = push_scorecard(card, client=v3.client())
    assert not result.ok and set(result.rejected) == {"goal_probability"}
    assert len(v3.scores) == 7


def test_verify_reads_the_probability_back_and_names_it_when_missing():
    with_p, without = settled_card("sess-a"), make_scorecard("sess-b")
    rubric = default_rubric()
    assert list(expected_ids(with_p, rubric)) == [*SEVEN, "goal_probability"]
    assert list(expected_ids(without, rubric)) == SEVEN
    with FakeLangfuse() as fake:
        for card in (with_p, without):
            push_scorecard(card, client=fake.client())
        assert verify_cards([with_p, without], client=fake.client(), waits=()).ok
        del fake.scores[score_id(with_p, "goal_probability")]
        report = verify_cards([with_p, without], client=fake.client(), waits=())
    assert report.missing == {"sess-a": ["goal_probability"]}
    assert "goal_probability" in report.reasons["sess-a"]
