"""Agreement statistics, checked against hand computation and the libraries themselves."""

from __future__ import annotations

import json
import math
from datetime import timedelta

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn import metrics as skm

from scorer.calibrate.stats import (
    agreement,
    calibrate,
    inter_annotator_agreement,
    largest_disagreements,
    pair,
)
from tests.calibrate.helpers import T0, card, label, paired_data

GOAL = "goal_achievement"
NUM = "output_quality"  # NUMERIC on 1..5


def _agree(dimension, judge, human, **kw):
    cards, labels = paired_data(dimension, judge, human)
    return agreement(pair(cards, labels, dimension), **kw)


def test_two_by_two_kappa_by_hand():
    # human/judge on failed(0)/partial(1): 4 agree on 0, 4 agree on 1, one each way off.
    # p_o = 8/10 = 0.8; marginals 0.5/0.5 on both sides, so p_e = 0.5;
    # kappa = (0.8 - 0.5) / (1 - 0.5) = 0.6. Only off-by-one errors, so the quadratic
    # weighting changes nothing: weighted kappa = 1 - 0.2/0.5 = 0.6 as well.
    human = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    judge = [0, 0, 0, 0, 1, 1, 1, 1, 1, 0]
    a = _agree(GOAL, judge, human, n_boot=0)
    assert a.n == 10
    assert a.exact_agreement == pytest.approx(0.8)
    assert a.within_one == 1.0
    assert a.cohen_kappa == pytest.approx(0.6)
    assert a.weighted_kappa == pytest.approx(0.6)
    assert a.cohen_kappa == pytest.approx(skm.cohen_kappa_score(human, judge))
    assert a.labels == [0.0, 1.0, 2.0, 3.0]
    assert a.label_names == ["failed", "partial", "complete", "exceeded"]
    # rows human, columns judge, full label set even though 2 and 3 never occur
    assert a.confusion == [[4, 1, 0, 0], [1, 4, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]]
    assert a.balanced_accuracy == pytest.approx(0.8)
    assert a.mae == pytest.approx(0.2) and a.bias == pytest.approx(0.0)
    assert a.ci == {}


def test_mae_bias_and_correlations_by_hand():
    # diffs judge - human: 1, 0, -1, +2 -> MAE = 4/4 = 1.0, bias = 2/4 = 0.5
    judge, human = [2, 3, 4, 5], [1, 3, 5, 3]
    a = _agree(NUM, judge, human, n_boot=0)
    assert a.mae == pytest.approx(1.0)
    assert a.bias == pytest.approx(0.5)
    assert a.exact_agreement == pytest.approx(0.25)
    assert a.within_one == pytest.approx(0.75)
    assert a.spearman == pytest.approx(sps.spearmanr(judge, human).statistic)
    assert a.pearson == pytest.approx(sps.pearsonr(judge, human).statistic)
    assert a.weighted_kappa == pytest.approx(
        skm.cohen_kappa_score(human, judge, labels=[1, 2, 3, 4, 5], weights="quadratic")
    )
    assert a.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(
            reliability_data=[judge, human],
            level_of_measurement="ordinal",
            value_domain=[1, 2, 3, 4, 5],
        )
    )
    assert a.labels == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_krippendorff_reference_example_via_inter_annotator():
    # Krippendorff (2011) "Computing Krippendorff's alpha-reliability", 4 coders x 12 units
    # with missing values; published values: nominal 0.743, ordinal 0.815, interval 0.849.
    nan = math.nan
    data = [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
    ]
    labels = [
        label(f"u{u:02d}", NUM, v, annotator=f"coder{c}")
        for c, row in enumerate(data)
        for u, v in enumerate(row)
        if not math.isnan(v)
    ]
    ia = inter_annotator_agreement(labels, NUM)
    assert ia.raters == ["coder0", "coder1", "coder2", "coder3"]
    assert ia.n_units == 11  # the last unit has one rating only
    assert ia.alpha == pytest.approx(0.815, abs=5e-4)


def test_inter_annotator_needs_two_raters_and_shared_sessions():
    assert inter_annotator_agreement([label("s1", GOAL, 1)], GOAL) is None
    ia = inter_annotator_agreement([label("s1", GOAL, 1, "a"), label("s2", GOAL, 2, "b")], GOAL)
    assert ia.alpha is None and ia.n_units == 0
    assert "no session was labelled by two annotators" in ia.notes


def test_constant_judge_gives_null_correlation_not_crash():
    a = _agree(NUM, [3, 3, 3, 3], [1, 2, 4, 5], n_boot=50)
    assert a.spearman is None and a.pearson is None
    assert any("constant judge values" in note for note in a.notes)
    assert a.mae == pytest.approx(1.5) and a.bias == pytest.approx(0.0)
    assert a.cohen_kappa == pytest.approx(0.0)


def test_everything_identical_and_constant():
    a = _agree(GOAL, [2, 2, 2], [2, 2, 2], n_boot=20)
    assert a.exact_agreement == 1.0 and a.mae == 0.0
    assert a.cohen_kappa is None and a.krippendorff_alpha is None
    assert any("constant judge and human" in note for note in a.notes)
    assert any("cohen_kappa, krippendorff_alpha undefined" in note for note in a.notes)
    # NaN never reaches JSON: undefined statistics are null
    data = json.loads(a.model_dump_json())
    assert data["spearman"] is None and data["cohen_kappa"] is None
    assert data["ci"]["cohen_kappa"] == {"low": None, "high": None}


def test_single_pair():
    a = _agree(GOAL, [1], [2], n_boot=100)
    assert a.n == 1 and a.mae == 1.0 and a.bias == -1.0
    assert a.ci == {}
    assert any("only 1 pair" in note for note in a.notes)


def test_fractional_human_values_are_snapped_for_kappa():
    a = _agree(NUM, [3, 4, 2], [3.4, 3.6, 2.0], n_boot=0)
    assert a.exact_agreement == 1.0  # 3.4 -> 3, 3.6 -> 4
    assert a.mae == pytest.approx((0.4 + 0.4 + 0.0) / 3)  # raw values
    assert any("snapped" in note for note in a.notes)


def test_bootstrap_is_seeded_and_deterministic():
    rng = np.random.default_rng(7)
    human = rng.integers(1, 6, 40).tolist()
    judge = np.clip(np.array(human) + rng.integers(-1, 2, 40), 1, 5).tolist()
    one = _agree(NUM, judge, human, n_boot=60, seed=3)
    two = _agree(NUM, judge, human, n_boot=60, seed=3)
    other = _agree(NUM, judge, human, n_boot=60, seed=4)
    assert one.ci == two.ci
    assert one.ci != other.ci
    assert set(one.ci) == {
        "exact_agreement", "within_one", "cohen_kappa", "weighted_kappa",
        "krippendorff_alpha", "spearman", "mae", "bias", "balanced_accuracy",
    }  # fmt: skip
    for name, ci in one.ci.items():
        point = getattr(one, name)
        assert ci.low <= point + 1e-9 and point - 1e-9 <= ci.high, name
        assert ci.low < ci.high or name == "within_one"


# --- pairing ---------------------------------------------------------------------------


def test_pair_uses_latest_scored_card_and_joins_on_trace_id():
    cards = [
        card("s1", {GOAL: 0}, created_at=T0),
        card("s1", {GOAL: 2}, created_at=T0 + timedelta(hours=1)),  # newer wins
        card("s1", {GOAL: 3}, created_at=T0 + timedelta(hours=2), status="unscored"),
        card("lf-sess", {GOAL: 1}, meta={"trace_id": "tr-1", "langfuse_url": "https://lf/t/tr-1"}),
        card("s9", {NUM: 4}),  # no goal score: not paired
    ]
    labels = [
        label("s1", GOAL, 2),
        label("tr-1", GOAL, 0),
        label("s9", GOAL, 1),
        label("zz", GOAL, 1),
    ]
    pairs = pair(cards, labels, GOAL)
    assert [(p.session_id, p.judge_value, p.human_value) for p in pairs] == [
        ("lf-sess", 1.0, 0.0),
        ("s1", 2.0, 2.0),
    ]
    assert pairs[0].langfuse_url == "https://lf/t/tr-1"


def test_pair_consensus_is_low_median_one_vote_per_annotator():
    labels = [
        label("s1", GOAL, 1, "a"),
        label("s1", GOAL, 3, "b"),
        label("s1", GOAL, 2, "c"),
        label("s1", GOAL, 0, "d"),
        label("s1", GOAL, 3, "d"),  # d's later label replaces their 0
    ]
    (p,) = pair([card("s1", {GOAL: 2})], labels, GOAL)
    assert sorted(p.human_values) == [1, 2, 3, 3]
    assert p.human_value == 2.0  # low median of 1, 2, 3, 3
    assert sorted(p.annotators) == ["a", "b", "c", "d"]


def test_disagreements_ordering():
    cards, labels = paired_data(GOAL, [0, 3, 1, 2, 3, 0], [2, 0, 1, 3, 2, 3], evidence=[4, 9])
    top = largest_disagreements(pair(cards, labels, GOAL), top=4)
    # |diff|: s00 2, s01 3, s02 0, s03 1, s04 1, s05 3 -> 3s (by id), then 2, then first 1
    assert [(p.session_id, p.diff) for p in top] == [
        ("s01", 3),
        ("s05", -3),
        ("s00", -2),
        ("s03", -1),
    ]
    assert [e.event for e in top[0].evidence] == [4, 9]


def test_calibrate_side_by_side_judges_and_versions():
    human = [0, 1, 2, 2, 1, 0, 2, 1]
    labels = [label(f"s{i}", GOAL, h) for i, h in enumerate(human)]
    labels += [label("s0", GOAL, 0, "bob"), label("s1", GOAL, 2, "bob"), label("orphan", GOAL, 1)]
    cards = []
    for i, h in enumerate(human):
        cards.append(card(f"s{i}", {GOAL: h}, prompt_version="v2"))  # perfect
        cards.append(card(f"s{i}", {GOAL: min(h + 1, 3)}, prompt_version="v1"))  # generous
        cards.append(card(f"s{i}", {GOAL: 1}, judge="heuristic", model=None))  # constant
    result = calibrate(cards, labels, n_boot=30, seed=1)
    keys = [(a.judge, a.model, a.prompt_version, a.n) for a in result.agreements]
    assert keys == [
        ("heuristic", None, "v1", 8),
        ("llm", "claude-sonnet", "v1", 8),
        ("llm", "claude-sonnet", "v2", 8),
    ]
    heuristic, generous, perfect = result.agreements
    assert perfect.exact_agreement == 1.0 and perfect.weighted_kappa == pytest.approx(1.0)
    assert generous.bias == pytest.approx(1.0) and generous.exact_agreement == 0.0
    assert heuristic.spearman is None
    assert result.unmatched_labels == 1 and result.n_labels == 11
    (ia,) = result.inter_annotator
    assert ia.raters == ["alice", "bob"] and ia.n_units == 2
    # the whole result round-trips through JSON
    assert json.loads(result.model_dump_json())["agreements"][0]["spearman"] is None
