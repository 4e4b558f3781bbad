"""Agreement of one judge's goal labels with execution outcomes, with 95% intervals.

Outcome classes: failed < partial < complete. A judge's `exceeded` counts as `complete`
(Terminal-Bench cannot tell the two apart).

- resolved vs not: balanced accuracy of "complete" against "partial or failed" (the mean
  of both recalls; chance is 0.50). Interval: percentile bootstrap over runs
  (`N_BOOT` resamples, seed 0); a resample missing one class is skipped.
- 3-class exact agreement: the share of runs whose class the judge named. Interval:
  Wilson score interval (a proportion of independent runs).
- the goal probability against resolved-vs-not: AUROC (and the goal class's AUROC, the
  baseline), Brier score, ECE over 10 bins and the reliability bins
  (`scorer.calibrate.probability`; AUROC intervals: the same percentile bootstrap).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from sklearn import metrics as skm

from scorer.calibrate.probability import ProbabilityFigures, probability_figures
from scorer.calibrate.validity.runs import OUTCOMES

N_BOOT = 2_000
Z95 = 1.959963984540054
CLASS_ORDER = {"failed": 0, "partial": 1, "complete": 2, "exceeded": 3}
"""The goal classes on their ordered scale (the class AUROC ranks runs by it)."""


def three_class(label: str) -> str:
    """A goal label on the outcome classes (`exceeded` → `complete`)."""
    return "complete" if label == "exceeded" else label


@dataclass(frozen=True)
class Estimate:
    """A statistic with its 95% interval (None where undefined)."""

    value: float | None
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 2) -> str:
        if self.value is None:
            return "n/a"
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def wilson(hits: int, n: int) -> Estimate:
    """A proportion with its Wilson score 95% interval."""
    if n == 0:
        return Estimate(None)
    p = hits / n
    centre = (p + Z95**2 / (2 * n)) / (1 + Z95**2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + Z95**2 / (4 * n * n)) / (1 + Z95**2 / n)
    return Estimate(p, max(0.0, centre - half), min(1.0, centre + half))


def _resolved_bal_acc(truth: np.ndarray, pred: np.ndarray) -> float | None:
    t, p = truth == "complete", pred == "complete"
    if t.all() or not t.any():
        return None
    return float(skm.balanced_accuracy_score(t, p))


def _bal_acc_draws(t: np.ndarray, p: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """`_resolved_bal_acc` of every resample (rows of `idx`) at once, NaN where a
    resample has one class: the same numbers as calling it per resample, in
    milliseconds instead of seconds."""
    truth, pred = t[idx], p[idx]
    pos = truth.sum(axis=1)
    neg = truth.shape[1] - pos
    hit_pos = (truth & pred).sum(axis=1)
    hit_neg = (~truth & ~pred).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((pos > 0) & (neg > 0), (hit_pos / pos + hit_neg / neg) / 2, np.nan)


def resolved_balanced_accuracy(
    truth: Sequence[str], pred: Sequence[str], *, n_boot: int = N_BOOT, seed: int = 0
) -> Estimate:
    """Balanced accuracy of resolved vs not, with a percentile-bootstrap 95% interval."""
    t, p = np.asarray(truth), np.asarray(pred)
    value = _resolved_bal_acc(t, p)
    if value is None or n_boot <= 0:
        return Estimate(value)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(t), (n_boot, len(t)))  # the draws of n_boot calls of size len(t)
    draws = _bal_acc_draws(t == "complete", p == "complete", idx)
    draws = draws[np.isfinite(draws)]
    if not draws.size:
        return Estimate(value)
    low, high = np.percentile(draws, [2.5, 97.5])
    return Estimate(value, float(low), float(high))


@dataclass
class Agreement:
    """One judge on one set of runs."""

    n: int
    resolved: Estimate
    exact: Estimate
    confusion: list[list[int]]
    """Rows: the outcome (failed, partial, complete); columns: the judge's class."""
    recall: dict[str, Estimate] = field(default_factory=dict)
    """Per outcome class: the share of its runs the judge put there (Wilson)."""
    probability: ProbabilityFigures | None = None
    """The goal probability's and the class's AUROC, Brier score, ECE, reliability bins."""


def agreement(
    truth: Sequence[str],
    labels: Sequence[str],
    probabilities: Sequence[float | None] | None = None,
    *,
    n_boot: int = N_BOOT,
) -> Agreement:
    """Resolved-vs-not balanced accuracy, 3-class exact agreement, confusion, recalls,
    and the probability figures (`probabilities` per run, None where a run has none)."""
    pred = [three_class(label) for label in labels]
    hits = sum(t == p for t, p in zip(truth, pred, strict=True))
    confusion = skm.confusion_matrix(truth, pred, labels=list(OUTCOMES)).tolist()
    recall = {}
    for i, name in enumerate(OUTCOMES):
        row = confusion[i]
        recall[name] = wilson(row[i], sum(row))
    return Agreement(
        n=len(truth),
        resolved=resolved_balanced_accuracy(truth, pred, n_boot=n_boot),
        exact=wilson(hits, len(truth)),
        confusion=[list(map(int, row)) for row in confusion],
        recall=recall,
        probability=probability_figures(
            [t == "complete" for t in truth],
            [CLASS_ORDER[label] for label in labels],
            list(probabilities) if probabilities is not None else [None] * len(truth),
            n_boot=n_boot,
        ),
    )
