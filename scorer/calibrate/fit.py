"""Fitting the goal-probability models on dev runs (scikit-learn; pure: rows in, models out).

    rows (features, resolved, outcome class, group)
      → choose a feature set by grouped cross-validated log loss (groups: task families,
        so two agents' runs of one task never sit on both sides of a fold)
      → a logistic regression (L2, C chosen the same way) on all dev rows
      → out-of-fold probabilities → the goal rule's thresholds (3-class agreement) and the
        uncertain band (where out-of-fold verdicts are most often wrong, within a share)

Only `benchmarks/validity.py fit` calls this, with dev rows only; the result is written to
`score_configs/goal_probability.json` (`judge.probability.GoalModels`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scorer.judge.probability import GoalRule, Logistic

C_GRID = (0.03, 0.1, 0.3, 1.0, 3.0)
"""Inverse regularisation strengths tried (small data: strong shrinkage is welcome)."""
FOLDS = 5


@dataclass(frozen=True)
class Row:
    """One dev run: its features, outcome and group (task family)."""

    run: str
    """`<backend>/<task id>`."""
    x: dict[str, float]
    resolved: int
    outcome: str
    """failed, partial or complete."""
    group: str


@dataclass(frozen=True)
class Fitted:
    """A fitted model with its out-of-fold probabilities and how it was chosen."""

    model: Logistic
    oof: list[float]
    """Out-of-fold P(resolved) per row, in row order."""
    log_loss: float
    c: float


def _matrix(rows: Sequence[Row], features: Sequence[str]) -> np.ndarray:
    return np.array([[r.x[f] for f in features] for r in rows], dtype=float)


def _folds(rows: Sequence[Row]) -> list[np.ndarray]:
    """Grouped folds: each family's runs in one fold, families dealt round-robin by size."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.group, []).append(i)
    order = sorted(groups.values(), key=lambda g: (-len(g), rows[g[0]].group))
    folds: list[list[int]] = [[] for _ in range(FOLDS)]
    for members in order:
        min(folds, key=len).extend(members)
    return [np.array(sorted(f)) for f in folds if f]


def _fit_once(x: np.ndarray, y: np.ndarray, c: float) -> Any:
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=2000).fit(x, y)


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    return (x - mean) / scale, mean, scale


def out_of_fold(rows: Sequence[Row], features: Sequence[str], c: float) -> list[float]:
    """Grouped cross-validated P(resolved) for every row."""
    x, y = _matrix(rows, features), np.array([r.resolved for r in rows])
    oof = np.zeros(len(rows))
    for test in _folds(rows):
        train = np.setdiff1d(np.arange(len(rows)), test)
        if len(set(y[train])) < 2:
            oof[test] = y[train].mean()
            continue
        z, mean, scale = _standardise(x[train])
        model = _fit_once(z, y[train], c)
        oof[test] = model.predict_proba((x[test] - mean) / scale)[:, 1]
    return [float(p) for p in oof]


def log_loss(y: Sequence[int], p: Sequence[float]) -> float:
    """Mean negative log likelihood, probabilities clipped to [1e-4, 1 - 1e-4] (sklearn)."""
    from sklearn.metrics import log_loss as sk_log_loss

    return float(sk_log_loss(y, np.clip(p, 1e-4, 1 - 1e-4), labels=[0, 1]))


def fit(rows: Sequence[Row], candidates: Sequence[Sequence[str]]) -> tuple[Fitted, list[str]]:
    """The feature set and C with the lowest grouped-CV log loss, refitted on every row."""
    y = [r.resolved for r in rows]
    best: tuple[float, float, list[str], list[float]] | None = None
    for features in candidates:
        for c in C_GRID:
            oof = out_of_fold(rows, features, c)
            loss = log_loss(y, oof)
            if best is None or loss < best[0] - 1e-9:
                best = (loss, c, list(features), oof)
    assert best is not None
    loss, c, features, oof = best
    z, mean, scale = _standardise(_matrix(rows, features))
    model = _fit_once(z, np.array(y), c)
    logistic = Logistic(
        features=features,
        mean=[round(float(v), 6) for v in mean],
        scale=[round(float(v), 6) for v in scale],
        coef=[round(float(v), 6) for v in model.coef_[0]],
        intercept=round(float(model.intercept_[0]), 6),
    )
    return Fitted(logistic, oof, loss, c), features


def _label(p: float, rule: GoalRule, nothing_done: bool) -> str:
    if p >= rule.complete:
        return "complete"
    return "failed" if p < rule.failed or nothing_done else "partial"


def fit_rule(
    oof: Sequence[float], rows: Sequence[Row], nothing_done: Sequence[bool]
) -> tuple[GoalRule, float]:
    """Thresholds maximising 3-class agreement of out-of-fold labels (ties: the higher
    resolved-vs-not balanced accuracy, then the thresholds nearest 0.5 and 0.2)."""
    grid = [round(0.05 * i, 2) for i in range(1, 20)]
    best: tuple[float, float, float, float, GoalRule] | None = None
    for complete in grid:
        for failed in [t for t in grid if t <= complete]:
            rule = GoalRule(complete=complete, failed=failed)
            labels = [_label(p, rule, n) for p, n in zip(oof, nothing_done, strict=True)]
            exact = sum(lab == r.outcome for lab, r in zip(labels, rows, strict=True)) / len(rows)
            bal = balanced_accuracy(
                [r.resolved for r in rows], [lab == "complete" for lab in labels]
            )
            key = (exact, bal, -abs(complete - 0.5), -abs(failed - 0.2))
            if best is None or key > best[:4]:
                best = (*key, rule)
    assert best is not None
    return best[4], best[0]


def balanced_accuracy(y: Sequence[int], predicted: Sequence[bool]) -> float:
    """Mean of the true-positive and true-negative rates (sklearn; over the classes `y`
    holds)."""
    from sklearn.metrics import balanced_accuracy_score

    with warnings.catch_warnings():  # one class only: the mean over the one rate
        warnings.simplefilter("ignore")
        return float(balanced_accuracy_score([bool(v) for v in y], [bool(v) for v in predicted]))


def fit_band(
    oof: Sequence[float], y: Sequence[int], threshold: float, max_share: float
) -> tuple[tuple[float, float], float]:
    """The interval of out-of-fold probabilities holding the most verdicts that are wrong
    at `threshold`, among intervals containing `threshold` and at most `max_share` of runs.

    Returns:
        The band and the share of dev runs in it.
    """
    n = len(oof)
    points = sorted(set(round(p, 4) for p in oof) | {threshold})
    best: tuple[int, float, tuple[float, float]] | None = None
    for lo in [p for p in points if p <= threshold]:
        for hi in [p for p in points if p >= threshold]:
            inside = [i for i, p in enumerate(oof) if lo <= p <= hi]
            if len(inside) > max_share * n:
                continue
            wrong = sum((oof[i] >= threshold) != bool(y[i]) for i in inside)
            key = (wrong, -(hi - lo), (lo, hi))
            if best is None or key[:2] > best[:2]:
                best = key
    assert best is not None
    lo, hi = best[2]
    share = sum(lo <= p <= hi for p in oof) / n
    return (round(lo, 4), round(hi, 4)), round(share, 4)
