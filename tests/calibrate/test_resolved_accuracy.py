"""Resolved-vs-not balanced accuracy for goal_achievement, by hand, with its interval."""

from __future__ import annotations

import pytest

from scorer.calibrate import render_table
from scorer.calibrate.report import write_report
from scorer.calibrate.stats import agreement, calibrate, pair
from tests.calibrate.helpers import paired_data

GOAL = "goal_achievement"  # failed 0, partial 1, complete 2, exceeded 3


def test_resolved_balanced_accuracy_by_hand():
    # resolved (complete or exceeded) humans: 2, 2, 2, 3 -> judge 2, 3, 1, 2: 3 of 4 found.
    # not resolved humans: 0, 0, 1, 1 -> judge 0, 2, 1, 0: 3 of 4 kept below complete.
    # resolved-vs-not = (3/4 + 3/4) / 2 = 0.75; "exceeded" for "complete" is no miss here.
    human = [2, 2, 2, 3, 0, 0, 1, 1]
    judge = [2, 3, 1, 2, 0, 2, 1, 0]
    cards, labels = paired_data(GOAL, judge, human)
    a = agreement(pair(cards, labels, GOAL), n_boot=200, seed=1)
    assert a.resolved_balanced_accuracy == pytest.approx(0.75)
    # 4-class recall: failed 1/2, partial 1/2, complete 1/3, exceeded 0/1 -> mean 1.333/4
    assert a.balanced_accuracy == pytest.approx((0.5 + 0.5 + 1 / 3 + 0) / 4)
    for name in ("balanced_accuracy", "resolved_balanced_accuracy"):
        ci = a.ci[name]
        assert ci.low is not None and ci.high is not None
        assert 0.0 <= ci.low <= ci.high <= 1.0


def test_only_goal_achievement_has_a_resolved_reading():
    cards, labels = paired_data("output_quality", [3, 4, 5], [3, 5, 5])
    a = agreement(pair(cards, labels, "output_quality"), n_boot=50)
    assert a.resolved_balanced_accuracy is None
    assert "resolved_balanced_accuracy" not in a.ci


def test_reports_show_the_resolved_metric(tmp_path):
    cards, labels = paired_data(GOAL, [2, 0, 1, 2], [2, 0, 2, 1])
    result = calibrate(cards, labels, n_boot=20)
    goal = result.agreements[0]
    assert goal.resolved_balanced_accuracy == pytest.approx(0.5)
    headers = [c.header for c in render_table(result).columns]
    assert "bal.acc res." in headers
    text = (write_report(result, tmp_path / "r", fmt="md")).read_text()
    assert "bal.acc res." in text and "0.50 [" in text
