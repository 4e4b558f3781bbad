"""How well a success probability ranks and is calibrated against resolved-vs-not (pure).

For one judge on one set of runs, each with a ground truth `resolved` (the task's own
checks passed), the judge's goal class on its ordered scale and, where the card has
one, its `goal_probability`:

- AUROC of the probability: the chance a resolved run gets a higher probability than an
  unresolved one (0.5 is chance, 1 perfect; sklearn `roc_auc_score`).
- AUROC of the class: the same for the goal class (failed < partial < complete <
  exceeded), the baseline the probability has to beat.
- Brier score: the mean squared error of the probability (0 perfect; 0.25 is a constant
  0.5; sklearn `brier_score_loss`).
- ECE: expected calibration error over 10 equal-width probability bins, the
  run-weighted mean |mean probability - share resolved| of each bin (0 perfect).
- The reliability diagram's points: per non-empty bin, its mean probability, the share
  of its runs that resolved and how many runs it holds (the bins of sklearn
  `calibration_curve(strategy="uniform")`).

Intervals: percentile bootstrap over runs (`N_BOOT` resamples, seed 0); a resample with
one class only is skipped, and no interval is given when more than half are. Runs
without a probability are left out of the probability's figures, which are None ("n/a")
when no run has one, never 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, Field
from scipy import stats as sps
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

N_BOOT = 2_000
N_BINS = 10


class ReliabilityBin(BaseModel):
    """One bin of the reliability diagram."""

    low: float
    high: float
    n: int
    """Runs whose probability falls in the bin."""
    mean_probability: float
    resolved_share: float
    """The share of those runs that resolved."""


class ProbabilityFigures(BaseModel):
    """Ranking and calibration of one judge's goal probability (None: undefined or n/a)."""

    n: int
    """Runs with a ground truth and a goal class."""
    n_probability: int = 0
    """Of those, runs whose card has a goal_probability (the probability's figures' n)."""
    n_resolved: int = 0
    auroc: float | None = None
    auroc_ci: tuple[float, float] | None = None
    auroc_class: float | None = None
    """AUROC of the goal class (the baseline), over all `n` runs."""
    auroc_class_ci: tuple[float, float] | None = None
    brier: float | None = None
    ece: float | None = None
    bins: list[ReliabilityBin] = Field(default_factory=list)


def auroc(resolved: np.ndarray, score: np.ndarray) -> float | None:
    """AUROC of `score` for `resolved` (booleans); None when one class is missing."""
    if resolved.all() or not resolved.any():
        return None
    return float(skm.roc_auc_score(resolved, score))


def _auroc_draws(resolved: np.ndarray, score: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """AUROC of every resample (rows of `idx`), NaN where one class is missing.

    The Mann-Whitney form `roc_auc_score` equals (ties count one half), on all resamples
    at once: 2,000 calls to sklearn cost seconds, this costs milliseconds.
    """
    y, s = resolved[idx], score[idx]
    ranks = sps.rankdata(s, axis=1)
    pos = y.sum(axis=1)
    neg = y.shape[1] - pos
    with np.errstate(divide="ignore", invalid="ignore"):
        u = (ranks * y).sum(axis=1) - pos * (pos + 1) / 2
        return np.where((pos > 0) & (neg > 0), u / (pos * neg), np.nan)


def auroc_interval(
    resolved: np.ndarray, score: np.ndarray, *, n_boot: int = N_BOOT, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile-bootstrap 95% interval of the AUROC (None if undefined or n_boot is 0)."""
    if n_boot <= 0 or len(resolved) < 2 or auroc(resolved, score) is None:
        return None
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(resolved), (n_boot, len(resolved)))
    draws = _auroc_draws(resolved, score, idx)
    draws = draws[np.isfinite(draws)]
    if draws.size < n_boot / 2:  # mostly one-class resamples: no honest interval
        return None
    low, high = np.percentile(draws, [2.5, 97.5])
    return float(low), float(high)


def reliability(
    resolved: np.ndarray, probability: np.ndarray, n_bins: int = N_BINS
) -> list[ReliabilityBin]:
    """The non-empty equal-width bins of the reliability diagram."""
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    counts = np.bincount(np.searchsorted(edges[1:-1], probability), minlength=n_bins)
    true, pred = calibration_curve(
        resolved, probability, n_bins=n_bins, strategy="uniform", pos_label=True
    )
    filled = [i for i in range(n_bins) if counts[i]]  # calibration_curve's rows, in order
    return [
        ReliabilityBin(
            low=float(edges[i]),
            high=float(edges[i + 1]),
            n=int(counts[i]),
            mean_probability=float(p),
            resolved_share=float(t),
        )
        for i, p, t in zip(filled, pred, true, strict=True)
    ]


def ece(bins: Sequence[ReliabilityBin]) -> float | None:
    """Expected calibration error: the run-weighted mean gap of the bins."""
    total = sum(b.n for b in bins)
    if not total:
        return None
    return sum(b.n * abs(b.mean_probability - b.resolved_share) for b in bins) / total


def probability_figures(
    resolved: Sequence[bool] | np.ndarray,
    goal_class: Sequence[float] | np.ndarray,
    probability: Sequence[float | None],
    *,
    n_boot: int = N_BOOT,
    seed: int = 0,
) -> ProbabilityFigures:
    """Every figure of the module docstring for one judge on one set of runs.

    Args:
        resolved: Per run, whether the task's own checks passed.
        goal_class: Per run, the judge's goal class on its ordered scale.
        probability: Per run, the card's goal_probability, None where it has none.
        n_boot: Bootstrap resamples for the AUROC intervals (0: none).
        seed: The bootstrap's seed.
    """
    y = np.asarray(resolved, dtype=bool)
    cls = np.asarray(goal_class, dtype=float)
    out = ProbabilityFigures(
        n=len(y),
        n_resolved=int(y.sum()),
        auroc_class=auroc(y, cls),
        auroc_class_ci=auroc_interval(y, cls, n_boot=n_boot, seed=seed),
    )
    has = np.array([p is not None for p in probability], dtype=bool)
    if not has.any():
        return out
    yp = y[has]
    p = np.asarray([v for v in probability if v is not None], dtype=float)
    bins = reliability(yp, p)
    return out.model_copy(
        update={
            "n_probability": int(has.sum()),
            "auroc": auroc(yp, p),
            "auroc_ci": auroc_interval(yp, p, n_boot=n_boot, seed=seed),
            "brier": float(skm.brier_score_loss(yp, p, pos_label=True)),
            "ece": ece(bins),
            "bins": bins,
        }
    )
