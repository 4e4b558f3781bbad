"""Agreement between judge scores and ground truth, per dimension and per judge.

All statistics come from scikit-learn, scipy and krippendorff; this module only pairs
the data, snaps values onto the rubric's label set, and records why a statistic is
undefined (constant input, too few pairs) instead of crashing. Undefined values are
`None` so the results serialise to JSON `null`.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from itertools import groupby
from typing import Any, Literal

import krippendorff
import numpy as np
from pydantic import BaseModel, Field
from scipy import stats as sps
from sklearn import metrics as skm

from scorer._text import plural
from scorer.calibrate.ground_truth import EXECUTION, Label
from scorer.calibrate.pairing import (
    Pair,
    group_key,
    join_keys,
    labels_by_session,
    latest_scorecards,
    pair,
)
from scorer.calibrate.probability import N_BOOT as AUROC_BOOT
from scorer.calibrate.probability import ProbabilityFigures, probability_figures
from scorer.judge.rubric import Rubric, ScoreConfig, default_rubric
from scorer.models import Scorecard

BOOTSTRAPPED = (
    "exact_agreement",
    "within_one",
    "cohen_kappa",
    "weighted_kappa",
    "krippendorff_alpha",
    "spearman",
    "mae",
    "bias",
    "balanced_accuracy",
    "resolved_balanced_accuracy",
)
RESOLVED_FROM = {"goal_achievement": "complete"}
"""Dimensions with a binary "resolved" reading: at or above this category counts as resolved."""


class Interval(BaseModel):
    """A bootstrap 95% percentile interval; None ends when it is undefined."""

    low: float | None = None
    high: float | None = None


Truth = Literal["human", "execution-verified", "mixed"]
"""What the ground truth of an agreement is: annotators' labels (`human`), the tasks' own
tests (`execution-verified`: Terminal-Bench outcomes), or some of each (`mixed`)."""


class DimensionAgreement(BaseModel):
    """How well one judge (model, prompt version) agrees with ground truth on one dimension."""

    dimension: str
    judge: str
    model: str | None = None
    prompt_version: str
    n: int
    truth: Truth = "human"
    """What the ground truth is (the `human_*` fields hold it, whatever it is)."""
    labels: list[float] = Field(default_factory=list)
    """The ordered label set (rows/columns of `confusion`); empty for continuous scores."""
    label_names: list[str] = Field(default_factory=list)
    exact_agreement: float | None = None
    within_one: float | None = None
    cohen_kappa: float | None = None
    weighted_kappa: float | None = None
    """Quadratic-weighted Cohen's kappa."""
    krippendorff_alpha: float | None = None
    spearman: float | None = None
    pearson: float | None = None
    mae: float | None = None
    bias: float | None = None
    """Mean of judge minus human: positive means the judge is more generous."""
    balanced_accuracy: float | None = None
    """Mean per-class recall over the label set (sklearn), on snapped values."""
    resolved_balanced_accuracy: float | None = None
    """goal_achievement only: balanced accuracy of resolved (complete or exceeded) vs not."""
    confusion: list[list[int]] = Field(default_factory=list)
    """Rows are the human label, columns the judge label, both in `labels` order."""
    probability: ProbabilityFigures | None = None
    """goal_achievement only: AUROC (of the cards' goal_probability and of the class),
    Brier score, ECE and reliability bins against resolved-vs-not
    (`scorer.calibrate.probability`; AUROC intervals from `AUROC_BOOT` resamples)."""
    judge_values: list[float] = Field(default_factory=list)
    human_values: list[float] = Field(default_factory=list)
    ci: dict[str, Interval] = Field(default_factory=dict)
    disagreements: list[Pair] = Field(default_factory=list)
    """Largest |judge - human| first."""
    notes: list[str] = Field(default_factory=list)


class InterAnnotator(BaseModel):
    """Agreement among the human annotators themselves on one dimension."""

    dimension: str
    raters: list[str]
    n_units: int
    """Sessions rated by at least two annotators."""
    alpha: float | None = None
    notes: list[str] = Field(default_factory=list)


class CalibrationResult(BaseModel):
    """Everything `score-calibrate` reports."""

    rubric_version: str
    n_labels: int
    n_scorecards: int
    unmatched_labels: int
    """Labels whose session no scorecard covers."""
    n_boot: int
    seed: int
    agreements: list[DimensionAgreement] = Field(default_factory=list)
    inter_annotator: list[InterAnnotator] = Field(default_factory=list)


# --- pairing ---------------------------------------------------------------------------


# --- statistics ------------------------------------------------------------------------


def label_set(cfg: ScoreConfig, rubric: Rubric) -> tuple[list[float], list[str]]:
    """The ordered values and names of a dimension; empty for the continuous overall."""
    if cfg.data_type == "CATEGORICAL":
        cats = sorted(cfg.categories, key=lambda c: c.value)
        return [float(c.value) for c in cats], [c.label for c in cats]
    if cfg.computed:
        return [], []
    values = range(rubric.numeric_min, rubric.numeric_max + 1)
    return [float(v) for v in values], [str(v) for v in values]


def snap(values: Sequence[float] | np.ndarray, labels: Sequence[float]) -> np.ndarray:
    """Each value replaced by the nearest label (ties go to the lower one)."""
    arr = np.asarray(values, dtype=float)
    if not labels:
        return arr
    grid = np.asarray(labels, dtype=float)
    return grid[np.abs(arr[:, None] - grid[None, :]).argmin(axis=1)]


def _nan_to_none(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _safe(fn: Callable[[], float]) -> float:
    """Run a statistic, turning library warnings/errors on degenerate input into NaN."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return float(fn())
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan


def _core_metrics(
    j: np.ndarray, h: np.ndarray, labels: list[float], resolved: float | None = None
) -> dict[str, float]:
    """The bootstrapped statistics on raw judge/human arrays (labels empty = continuous).

    `resolved` is the lowest "resolved" value (see `RESOLVED_FROM`), None when the
    dimension has no binary reading.
    """
    js, hs = snap(j, labels), snap(h, labels)
    out = {
        "mae": _safe(lambda: skm.mean_absolute_error(h, j)),
        "bias": float(np.mean(j - h)),
        "spearman": _safe(lambda: sps.spearmanr(j, h).statistic),
        "krippendorff_alpha": _alpha(np.vstack([js, hs]), labels),
    }
    if labels:
        out["exact_agreement"] = float(np.mean(js == hs))
        out["within_one"] = float(np.mean(np.abs(j - h) <= 1))
        out["cohen_kappa"] = _safe(lambda: skm.cohen_kappa_score(hs, js, labels=labels))
        out["weighted_kappa"] = _safe(
            lambda: skm.cohen_kappa_score(hs, js, labels=labels, weights="quadratic")
        )
        out["balanced_accuracy"] = _safe(lambda: skm.balanced_accuracy_score(hs, js))
    if labels and resolved is not None:
        out["resolved_balanced_accuracy"] = _safe(
            lambda: skm.balanced_accuracy_score(hs >= resolved, js >= resolved)
        )
    return out


def _alpha(data: np.ndarray, labels: list[float]) -> float:
    if labels:
        return _safe(
            lambda: krippendorff.alpha(
                reliability_data=data, level_of_measurement="ordinal", value_domain=labels
            )
        )
    return _safe(lambda: krippendorff.alpha(reliability_data=data, level_of_measurement="interval"))


def bootstrap_ci(
    j: np.ndarray,
    h: np.ndarray,
    labels: list[float],
    *,
    n_boot: int,
    seed: int,
    resolved: float | None = None,
) -> dict[str, Interval]:
    """Percentile 95% intervals from resampling pairs `n_boot` times with a seeded RNG."""
    if n_boot <= 0 or len(j) < 2:
        return {}
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = defaultdict(list)
    for _ in range(n_boot):
        idx = rng.integers(0, len(j), len(j))
        for name, value in _core_metrics(j[idx], h[idx], labels, resolved).items():
            draws[name].append(value)
    return {name: _interval(values) for name, values in draws.items()}


def _interval(values: list[float]) -> Interval:
    arr = np.asarray(values, dtype=float)
    arr = arr[np.isfinite(arr)]
    if arr.size < len(values) / 2:  # mostly undefined resamples: no honest interval
        return Interval()
    low, high = np.percentile(arr, [2.5, 97.5])
    return Interval(low=float(low), high=float(high))


def agreement(
    pairs: Sequence[Pair],
    *,
    rubric: Rubric | None = None,
    n_boot: int = 500,
    seed: int = 0,
    top: int = 10,
) -> DimensionAgreement:
    """Agreement statistics for pairs of one dimension and one judge group.

    Args:
        pairs: from `pair()`, all with the same dimension, judge, model, prompt version.
        rubric: supplies the label set; default rubric when omitted.
        n_boot: bootstrap resamples for the 95% intervals (0 disables them).
        seed: RNG seed, so intervals are reproducible.
        top: how many of the largest disagreements to keep.
    """
    if not pairs:
        raise ValueError("agreement() needs at least one pair")
    rubric = rubric or default_rubric()
    first = pairs[0]
    cfg = rubric.get(first.dimension)
    labels, names = label_set(cfg, rubric)
    resolved = _resolved_value(cfg)
    j = np.array([p.judge_value for p in pairs], dtype=float)
    h = np.array([p.human_value for p in pairs], dtype=float)
    # Keys of `core` are all optional float fields of DimensionAgreement.
    core: dict[str, Any] = _core_metrics(j, h, labels, resolved)
    result = DimensionAgreement(
        dimension=first.dimension,
        judge=first.judge,
        model=first.model,
        prompt_version=first.prompt_version,
        n=len(pairs),
        truth=truth_of(pairs),
        labels=labels,
        label_names=names,
        judge_values=j.tolist(),
        human_values=h.tolist(),
        pearson=_safe(lambda: sps.pearsonr(j, h).statistic) if len(j) >= 2 else math.nan,
        ci=bootstrap_ci(j, h, labels, n_boot=n_boot, seed=seed, resolved=resolved),
        disagreements=largest_disagreements(pairs, top),
        **core,
    )
    if labels:
        js, hs = snap(j, labels), snap(h, labels)
        result.confusion = skm.confusion_matrix(hs, js, labels=labels).tolist()
        if not (np.array_equal(js, j) and np.array_equal(hs, h)):
            result.notes.append("values off the label set were snapped to the nearest label")
    if resolved is not None:
        result.probability = _probability(pairs, j, h >= resolved, n_boot=n_boot, seed=seed)
        result.notes += _probability_notes(result.probability)
    result.notes += _explain(j, h, core)
    return _finite(result)


def _probability(
    pairs: Sequence[Pair], j: np.ndarray, resolved: np.ndarray, *, n_boot: int, seed: int
) -> ProbabilityFigures:
    """The goal's probability figures; AUROC intervals take `AUROC_BOOT` resamples (they
    are cheap) unless intervals are off (`n_boot` 0)."""
    probs = [p.judge_probability for p in pairs]
    boot = AUROC_BOOT if n_boot > 0 else 0
    return probability_figures(resolved, j, probs, n_boot=boot, seed=seed)


def _probability_notes(fig: ProbabilityFigures) -> list[str]:
    if fig.n_probability == 0:
        return ["no card has a goal_probability: its AUROC, Brier score and ECE are n/a"]
    if fig.n_probability < fig.n:
        return [
            f"goal_probability on {fig.n_probability} of {fig.n} cards: its AUROC, Brier "
            "score and ECE cover those only (the class AUROC covers all)"
        ]
    return []


def truth_of(pairs: Sequence[Pair]) -> Truth:
    """`execution-verified` when every label came from the tasks' tests, `human` when none
    did, else `mixed`."""
    kinds = {annotator == EXECUTION for p in pairs for annotator in p.annotators}
    if kinds == {True}:
        return "execution-verified"
    return "mixed" if True in kinds else "human"


def _resolved_value(cfg: ScoreConfig) -> float | None:
    """The value from which `cfg` counts as resolved, for dimensions in `RESOLVED_FROM`."""
    label = RESOLVED_FROM.get(cfg.name)
    if label is None or cfg.data_type != "CATEGORICAL":
        return None
    return float(cfg.category(label).value)


def _explain(j: np.ndarray, h: np.ndarray, core: dict[str, float]) -> list[str]:
    """Why some statistics are undefined, in words."""
    notes = []
    if len(j) < 3:
        notes.append(f"only {plural(len(j), 'pair')}: correlations and intervals are unreliable")
    constant = [name for name, arr in (("judge", j), ("human", h)) if np.ptp(arr) == 0]
    if constant:
        notes.append(f"constant {' and '.join(constant)} values: correlations are undefined (NaN)")
    undefined = [
        k for k in ("cohen_kappa", "krippendorff_alpha") if not math.isfinite(core.get(k, 0.0))
    ]
    if undefined:
        notes.append(f"{', '.join(undefined)} undefined: no variation to measure agreement against")
    return notes


def _finite(result: DimensionAgreement) -> DimensionAgreement:
    """NaN statistics become None (JSON null)."""
    for name, field in DimensionAgreement.model_fields.items():
        if field.annotation == float | None:
            setattr(result, name, _nan_to_none(getattr(result, name)))
    return result


def largest_disagreements(pairs: Iterable[Pair], top: int = 10) -> list[Pair]:
    """Pairs where judge and human differ, largest |difference| first (ties by session)."""
    differ = [p for p in pairs if p.diff != 0]
    return sorted(differ, key=lambda p: (-abs(p.diff), p.session_id))[:top]


def inter_annotator_agreement(
    labels: Iterable[Label], dimension: str, *, rubric: Rubric | None = None
) -> InterAnnotator | None:
    """Krippendorff's alpha (ordinal) over the human annotators of `dimension`.

    Returns None when fewer than two annotators labelled the dimension. Sessions rated by
    one annotator only stay in the matrix as missing values (alpha ignores them).
    """
    rubric = rubric or default_rubric()
    by_session = labels_by_session(labels, dimension)
    raters = sorted({lab.annotator for group in by_session.values() for lab in group})
    if len(raters) < 2:
        return None
    sessions = sorted(by_session)
    matrix = np.full((len(raters), len(sessions)), np.nan)
    for col, sid in enumerate(sessions):
        for lab in by_session[sid]:
            matrix[raters.index(lab.annotator), col] = lab.value
    shared = int((np.sum(~np.isnan(matrix), axis=0) >= 2).sum())
    result = InterAnnotator(dimension=dimension, raters=raters, n_units=shared)
    if shared == 0:
        result.notes.append("no session was labelled by two annotators")
        return result
    labels_, _ = label_set(rubric.get(dimension), rubric)
    result.alpha = _nan_to_none(_alpha(matrix, labels_))
    if result.alpha is None:
        result.notes.append("alpha undefined: the annotators used a single value")
    return result


# --- the whole calibration --------------------------------------------------------------


def calibrate(
    scorecards: Sequence[Scorecard],
    labels: Sequence[Label],
    *,
    rubric: Rubric | None = None,
    dimensions: Sequence[str] | None = None,
    n_boot: int = 500,
    seed: int = 0,
    top: int = 10,
) -> CalibrationResult:
    """Compare every judge group (judge, model, prompt version) with the ground truth.

    Args:
        scorecards: e.g. `ScoreStore().scorecards()`; only the latest per group is used.
        labels: from the `ground_truth` loaders (any mix).
        dimensions: which to report; default every labelled dimension, rubric order.
    """
    rubric = rubric or default_rubric()
    order = [s.name for s in rubric.scores]
    dims = (
        list(dimensions)
        if dimensions
        else sorted(
            {lab.dimension for lab in labels}, key=lambda d: order.index(d) if d in order else 99
        )
    )
    agreements, inter = [], []
    for dim in dims:
        pairs = pair(scorecards, labels, dim)
        for _, group in groupby(pairs, key=group_key):
            agreements.append(
                agreement(list(group), rubric=rubric, n_boot=n_boot, seed=seed, top=top)
            )
        ia = inter_annotator_agreement(labels, dim, rubric=rubric)
        if ia is not None:
            inter.append(ia)
    agreements.sort(
        key=lambda a: (a.judge, a.model or "", a.prompt_version, order.index(a.dimension))
    )
    covered = {k for card in latest_scorecards(scorecards) for k in join_keys(card)}
    return CalibrationResult(
        rubric_version=rubric.version,
        n_labels=len(labels),
        n_scorecards=len(scorecards),
        unmatched_labels=sum(lab.session_id not in covered for lab in labels),
        n_boot=n_boot,
        seed=seed,
        agreements=agreements,
        inter_annotator=inter,
    )
