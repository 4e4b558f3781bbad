"""goal_probability: features, the fitted file, the goal rule and second opinions."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.config import JudgeConfig
from scorer.judge.heuristic import HeuristicJudge
from scorer.judge.probability import (
    MODEL_FILE,
    GoalModels,
    GoalRule,
    JudgeModel,
    Logistic,
    checklist_features,
    goal_label,
    load_models,
)
from scorer.models import RequirementCheck
from scorer.prepare import prepare
from scorer.resources import data_dir
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import (
    FakeAnthropic,
    error_response,
    message_response,
    valid_scoring_payload,
)

SPLIT = REPO / "benchmarks" / "validity_split.json"
DEMO = REPO / "examples" / "demo-session.jsonl"


def one_feature(name: str, band: tuple[float, float] | None = (0.3, 0.8)) -> JudgeModel:
    """P = σ(feature): the core confidence's logit is the probability's own logit."""
    model = Logistic(features=[name], mean=[0.0], scale=[1.0], coef=[1.0], intercept=0.0)
    return JudgeModel(model=model, rule=GoalRule(complete=0.6, failed=0.2), band=band,
                      in_band_share=0.25)  # fmt: skip


MODELS = GoalModels(
    version="test-1", fitted_on=["claude_code_coder/csv-to-parquet"], llm=one_feature("core_conf_mean"),
    heuristic=one_feature("h_signed_conf", band=None),
)  # fmt: skip


def check(status: str, confidence: float | None, core: bool = True) -> RequirementCheck:
    return RequirementCheck(requirement=status, status=status, core=core, confidence=confidence)


# --- the shipped file --------------------------------------------------------------------


def split_tasks() -> dict[str, set[str]]:
    split = json.loads(SPLIT.read_text())
    return {"dev": set(split["dev"]), "test": set(split["test"])}


def test_the_shipped_model_was_fitted_on_dev_runs_only():
    models = load_models(data_dir("score_configs") / MODEL_FILE)
    sides = split_tasks()
    tasks = {run.split("/", 1)[1] for run in models.fitted_on}  # "<backend>/<task id>"
    assert tasks, "the model names the runs it was fitted on"
    assert not tasks & sides["test"], f"fitted on test-side runs: {sorted(tasks & sides['test'])}"
    assert tasks <= sides["dev"]
    assert models.llm.band is not None and 0 < models.llm.in_band_share < 0.5


# --- features and the rule ---------------------------------------------------------------


def test_checklist_features_read_confidence_status_and_core():
    x = checklist_features(
        [check("met", 0.9), check("likely_met", 0.6), check("unmet", 0.1, False)]
    )
    assert x["core_conf_min"] == pytest.approx(math.log(0.6 / 0.4))
    assert x["share_met"] == pytest.approx(1 / 3) and x["share_done"] == pytest.approx(2 / 3)
    assert x["core_open"] == 0.0  # the unmet one is a detail, not core
    legacy = checklist_features([check("likely_met", None)])  # cards from before confidences
    assert legacy["core_conf_min"] == pytest.approx(math.log(0.6 / 0.4))
    assert checklist_features([])["core_open"] == 1.0


@pytest.mark.parametrize(
    ("p", "checks", "judged", "label"),
    [
        (0.7, [check("met", 0.9)], "complete", "complete"),
        (0.7, [check("met", 0.9)], "exceeded", "exceeded"),
        (0.5, [check("met", 0.9), check("unmet", 0.1)], "complete", "partial"),
        (0.1, [check("likely_met", 0.2)], "partial", "failed"),
        (0.5, [check("unmet", 0.1), check("met", 0.9, core=False)], "partial", "failed"),
    ],
)
def test_the_goal_follows_from_the_probability_and_the_checklist(p, checks, judged, label):
    assert goal_label(p, GoalRule(complete=0.6, failed=0.2), checks, judged) == label


# --- the judges ---------------------------------------------------------------------------


def judge_with(fake: FakeAnthropic, **options) -> AnthropicJudge:
    config = replace(JudgeConfig(), goal_models=MODELS, **options)
    return AnthropicJudge(fake.client(), config)


def reply(status: str, **kwargs):
    return message_response(valid_scoring_payload(requirements=[("fix it", status)], **kwargs))


def test_a_sure_verdict_gets_its_probability_without_more_calls():
    fake = FakeAnthropic([reply("met")])  # confidence 90: p = 0.9, outside the band
    card = judge_with(fake).judge(prepare(resolve(str(DEMO)).load()))
    assert len(fake.message_bodies) == 1
    assert card.goal_probability == pytest.approx(0.9)
    assert card.scores["goal_achievement"].label == "complete"
    assert card.meta["goal_probability_model"] == "test-1" and "second_opinions" not in card.meta


def test_an_unsure_verdict_is_asked_twice_more_over_one_cached_prefix():
    fake = FakeAnthropic(
        [
            reply("likely_met"),
            reply(
                "met",
            ),
            reply("unmet", labels={"goal_achievement": "failed"}),
        ]
    )
    card = judge_with(fake).judge(prepare(resolve(str(DEMO)).load()))
    first, sample, adversarial = fake.message_bodies
    assert isinstance(first["messages"][0]["content"], str)
    for body in (sample, adversarial):
        blocks = body["messages"][0]["content"]
        assert blocks[0]["cache_control"] == {"type": "ephemeral"}
        assert blocks[0]["text"] == first["messages"][0]["content"][: len(blocks[0]["text"])]
        assert blocks[0]["text"].rstrip().endswith(">")  # the material's closing tag
    assert (
        "strongest honest case that the task\nis *not* done"
        in adversarial["messages"][0]["content"][-1]["text"]
    )
    assert "not* done" not in json.dumps(sample["messages"])
    expected = (0.65 + 0.9 + 0.1) / 3
    assert card.goal_probability == pytest.approx(expected, abs=1e-3)
    assert card.meta["first_goal_probability"] == pytest.approx(0.65, abs=1e-3)
    assert [o["kind"] for o in card.meta["second_opinions"]] == ["sample", "adversarial"]
    assert card.usage.requests == 3
    assert card.scores["goal_achievement"].label == "partial"  # 0.55 < 0.6: not complete
    assert card.meta["judge_goal"] == "complete"


def test_second_opinions_can_be_switched_off():
    fake = FakeAnthropic([reply("likely_met")])
    card = judge_with(fake, second_opinions=False).judge(prepare(resolve(str(DEMO)).load()))
    assert len(fake.message_bodies) == 1 and card.goal_probability == pytest.approx(0.65)


def test_a_failed_second_opinion_leaves_the_first_verdict_standing():
    fake = FakeAnthropic([reply("likely_met"), *[error_response(500)] * 6, reply("met")])
    card = judge_with(fake).judge(prepare(resolve(str(DEMO)).load()))
    sample, adversarial = card.meta["second_opinions"]
    assert "error" in sample and adversarial["p"] == pytest.approx(0.9)
    assert card.status == "scored"
    assert card.goal_probability == pytest.approx((0.65 + 0.9) / 2, abs=1e-3)


def test_the_heuristic_judge_gets_a_probability_too():
    card = HeuristicJudge(goal_models=MODELS).judge(prepare(resolve(str(DEMO)).load()))
    assert card.goal_probability is not None and 0 < card.goal_probability < 1
    assert card.meta["goal_probability_model"] == "test-1"
