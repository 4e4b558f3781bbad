"""The calibration report's PNG plots: confusion matrices, score distributions, the bias
per dimension and reliability diagrams of the goal probability.

Plots are drawn on `matplotlib.figure.Figure` objects with the Agg canvas, never through
pyplot: nothing global is switched, so a notebook's backend is left alone, and no
display is needed. matplotlib is a main dependency; without it `make_plots` returns None
and the report says why it has tables only.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Any

from scorer.calibrate.probability import ReliabilityBin
from scorer.calibrate.stats import CalibrationResult, DimensionAgreement, Pair


def group_name(a: DimensionAgreement | Pair) -> str:
    """`judge/model@prompt_version`, the label of one judge group."""
    return f"{a.judge}/{a.model or '-'}@{a.prompt_version}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _stem(a: DimensionAgreement) -> str:
    return _slug(f"{group_name(a)}-{a.dimension}")


def figure_class() -> Any:
    """matplotlib's `Figure`, or None when matplotlib cannot be imported."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


def _png(fig: Any) -> bytes:
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)  # a bare Figure renders with the Agg canvas
    return buf.getvalue()


def _plot_confusion(figure: Any, a: DimensionAgreement) -> bytes | None:
    if not a.confusion:
        return None
    fig = figure(figsize=(3.6, 3.2))
    ax = fig.subplots()
    ax.imshow(a.confusion, cmap="Blues")
    ticks = range(len(a.label_names))
    ax.set_xticks(ticks, a.label_names, rotation=45, ha="right")
    ax.set_yticks(ticks, a.label_names)
    ax.set_xlabel("judge")
    ax.set_ylabel("human")
    ax.set_title(a.dimension, fontsize=9)
    for r, row in enumerate(a.confusion):
        for c, count in enumerate(row):
            ax.text(c, r, str(count), ha="center", va="center", fontsize=8)
    return _png(fig)


def _plot_distribution(figure: Any, a: DimensionAgreement) -> bytes:
    fig = figure(figsize=(4.2, 2.8))
    ax = fig.subplots()
    if a.labels:
        width = 0.4
        xs = range(len(a.labels))
        for offset, values, name in (
            (-width / 2, a.judge_values, "judge"),
            (width / 2, a.human_values, "human"),
        ):
            counts = [sum(abs(v - lab) < 0.5 for v in values) for lab in a.labels]
            ax.bar([x + offset for x in xs], counts, width, label=name)
        ax.set_xticks(list(xs), a.label_names)
    else:
        ax.hist([a.judge_values, a.human_values], bins=10, label=["judge", "human"])
    ax.set_title(f"{a.dimension}: score distribution", fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


def _plot_bias(figure: Any, result: CalibrationResult) -> bytes | None:
    rows = [(a, a.bias) for a in result.agreements if a.bias is not None]
    if not rows:
        return None
    fig = figure(figsize=(6, 0.4 * len(rows) + 1.2))
    ax = fig.subplots()
    names = [f"{group_name(a)} {a.dimension}" for a, _ in rows]
    biases = [bias for _, bias in rows]
    ax.barh(names, biases, color=["tab:red" if b > 0 else "tab:blue" for b in biases])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("mean bias (judge − human)")
    ax.tick_params(axis="y", labelsize=7)
    return _png(fig)


def plot_reliability(figure: Any, bins: Sequence[ReliabilityBin], title: str) -> bytes:
    """The reliability diagram: each bin's share resolved against its mean probability
    (marker area ~ runs in the bin), the diagonal of perfect calibration, and the
    runs per bin below."""
    fig = figure(figsize=(3.6, 4.0))
    top, bottom = fig.subplots(2, 1, sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    top.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=0.8, label="calibrated")
    xs = [b.mean_probability for b in bins]
    top.plot(xs, [b.resolved_share for b in bins], color="tab:blue", linewidth=1)
    top.scatter(xs, [b.resolved_share for b in bins], s=[12 + 6 * b.n for b in bins],
                color="tab:blue", label="judge", zorder=3)  # fmt: skip
    top.set_xlim(0, 1)
    top.set_ylim(-0.02, 1.02)
    top.set_ylabel("share resolved")
    top.set_title(title, fontsize=9)
    top.legend(fontsize=7, loc="upper left")
    bottom.bar([(b.low + b.high) / 2 for b in bins], [b.n for b in bins], width=0.09,
               color="tab:grey")  # fmt: skip
    bottom.set_xlabel("goal_probability")
    bottom.set_ylabel("runs")
    return _png(fig)


def make_plots(result: CalibrationResult) -> dict[str, bytes] | None:
    """PNG bytes keyed `bias`, `confusion:<stem>`, `reliability:<stem>` (goal cards with
    a probability), `dist:<stem>`; None without matplotlib."""
    figure = figure_class()
    if figure is None:
        return None
    plots: dict[str, bytes] = {}
    for a in result.agreements:
        stem = _stem(a)
        confusion = _plot_confusion(figure, a)
        if confusion:
            plots[f"confusion:{stem}"] = confusion
        if a.probability is not None and a.probability.bins:
            title = f"{a.dimension}: goal_probability (n={a.probability.n_probability})"
            plots[f"reliability:{stem}"] = plot_reliability(figure, a.probability.bins, title)
        plots[f"dist:{stem}"] = _plot_distribution(figure, a)
    bias = _plot_bias(figure, result)
    if bias:
        plots["bias"] = bias
    return plots
