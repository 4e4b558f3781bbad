"""The goal probability's figures: AUROC (with its bootstrap interval), Brier score, ECE,
the reliability bins, and how `score-calibrate` reports them (n/a without probabilities)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss, roc_auc_score

from scorer.calibrate.probability import (
    _auroc_draws,
    auroc_interval,
    ece,
    probability_figures,
    reliability,
)
from scorer.calibrate.stats import calibrate
from tests.calibrate.helpers import card, label

GOAL = "goal_achievement"
# eight runs: resolved (complete = 2) or not, the judge's class and its probability
TRUTH = [2, 2, 2, 1, 1, 0, 0, 2]
CLASS = [2, 2, 1, 2, 1, 0, 1, 3]
PROB = [0.95, 0.85, 0.55, 0.65, 0.35, 0.05, 0.15, 0.9]


def test_figures_match_scikit_learn_and_the_textbook_ece():
    y = np.array(TRUTH) >= 2
    fig = probability_figures(y, CLASS, PROB, n_boot=0)
    assert (fig.n, fig.n_probability, fig.n_resolved) == (8, 8, 4)
    assert fig.auroc == pytest.approx(roc_auc_score(y, PROB)) == pytest.approx(15 / 16)
    assert fig.auroc_class == pytest.approx(roc_auc_score(y, CLASS))
    assert fig.brier == pytest.approx(brier_score_loss(y, PROB))
    # 10 equal-width bins, each |mean p - share resolved| weighted by its runs
    true, pred = calibration_curve(y, PROB, n_bins=10, strategy="uniform")
    assert [b.resolved_share for b in fig.bins] == pytest.approx(list(true))
    assert [b.mean_probability for b in fig.bins] == pytest.approx(list(pred))
    # bins hold 0.05 | 0.15 | 0.35 | 0.55 | 0.65 | 0.85 and 0.9 | 0.95 (a bin is (low, high])
    by_hand = (0.05 + 0.15 + 0.35 + 0.45 + 0.65 + 2 * 0.125 + 0.05) / 8
    assert len(fig.bins) == 7 and fig.ece == pytest.approx(by_hand)
    assert [(b.low, b.n) for b in fig.bins][:2] == [(0.0, 1), (pytest.approx(0.1), 1)]
    assert sum(b.n for b in fig.bins) == 8


def test_auroc_interval_is_a_seeded_percentile_bootstrap_of_sklearns_auroc():
    rng = np.random.default_rng(7)
    y = rng.random(50) < 0.4
    score = np.round(rng.random(50) + y * 0.3, 1)  # ties on purpose
    idx = rng.integers(0, 50, (200, 50))
    by_sklearn = [roc_auc_score(y[i], score[i]) if 0 < y[i].sum() < 50 else np.nan for i in idx]
    assert np.allclose(_auroc_draws(y, score, idx), by_sklearn, equal_nan=True)
    low, high = auroc_interval(y, score)  # 2,000 resamples, seed 0
    assert low < roc_auc_score(y, score) < high
    assert auroc_interval(y, score) == (low, high)  # reproducible
    assert auroc_interval(y, score, seed=1) != (low, high)
    assert auroc_interval(y, score, n_boot=0) is None
    assert auroc_interval(np.zeros(5, bool), score[:5]) is None  # one class: undefined


def test_no_probability_is_not_applicable_never_zero():
    y = np.array(TRUTH) >= 2
    fig = probability_figures(y, CLASS, [None] * 8)
    assert fig.n_probability == 0 and fig.bins == []
    assert fig.auroc is None and fig.brier is None and fig.ece is None
    assert fig.auroc_class is not None and fig.auroc_class_ci is not None  # the baseline stays
    some = probability_figures(y, CLASS, [*PROB[:4], None, None, None, None], n_boot=0)
    assert some.n_probability == 4 and some.auroc == pytest.approx(roc_auc_score(y[:4], PROB[:4]))
    assert ece([]) is None and reliability(np.array([True]), np.array([1.0]))[0].high == 1.0


def _goal_cards(probabilities):
    cards = [
        card(f"s{i}", {GOAL: c}, goal_probability=p)
        for i, (c, p) in enumerate(zip(CLASS, probabilities, strict=True))
    ]
    return cards, [label(f"s{i}", GOAL, t) for i, t in enumerate(TRUTH)]


def test_calibrate_reports_the_goal_probability_beside_the_class():
    cards, labels = _goal_cards(PROB)
    (goal,) = calibrate(cards, labels, n_boot=50).agreements
    fig = goal.probability
    assert fig is not None and fig.n_probability == 8
    assert fig.auroc == pytest.approx(15 / 16) and fig.auroc_ci is not None
    assert fig.auroc_class == pytest.approx(roc_auc_score(np.array(TRUTH) >= 2, CLASS))
    assert fig.ece is not None and len(fig.bins) == 7
    assert not any("goal_probability" in note for note in goal.notes)
    # the AUROC interval takes 2,000 resamples whatever --n-boot says (it is cheap) ...
    assert fig.auroc_ci == auroc_interval(np.array(TRUTH) >= 2, np.array(PROB))
    # ... and none when intervals are off
    (off,) = calibrate(cards, labels, n_boot=0).agreements
    assert off.probability.auroc_ci is None and off.probability.auroc == fig.auroc


def test_calibrate_says_n_a_for_cards_without_a_probability():
    cards, labels = _goal_cards([None] * 8)
    (goal,) = calibrate(cards, labels, n_boot=0).agreements
    assert goal.probability.n_probability == 0 and goal.probability.auroc is None
    assert "no card has a goal_probability" in " ".join(goal.notes)
    cards, labels = _goal_cards([*PROB[:6], None, None])
    (goal,) = calibrate(cards, labels, n_boot=0).agreements
    assert "goal_probability on 6 of 8 cards" in " ".join(goal.notes)
    other = calibrate(*_other_dimension(), n_boot=0).agreements[0]
    assert other.probability is None  # only the goal has a resolved reading


def _other_dimension():
    return [card("s0", {"output_quality": 3})], [label("s0", "output_quality", 4)]
