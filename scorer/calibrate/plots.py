"""The calibration report's plots (confusion matrices, score distributions, the bias per
dimension, reliability diagrams of the goal probability): PNG bytes drawn on `matplotlib.figure.Figure` objects
with the Agg canvas, never through pyplot (nothing global is switched, so a notebook's
backend is left alone, and no display is needed), and the names they share with the
report's tables.

Every plot is laid out at the resolution it is written at, so no label is cut at the
figure's edge; a count on the confusion matrix is black or white, whichever reads on its
cell; the ground truth is called what it is: `human` (annotators), `execution-verified`
(the tasks' own tests) or, for a mix, `ground truth`.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Sequence
from typing import Any

from scorer.calibrate.probability import ReliabilityBin
from scorer.calibrate.stats import CalibrationResult, DimensionAgreement, Pair

__all__ = [
    "TRUTH_NAMES",
    "bias_truth",
    "data_uris",
    "figure_class",
    "group_name",
    "ink",
    "make_plots",
    "plot_links",
    "plot_reliability",
    "stem",
    "truth_name",
]

TRUTH_NAMES = {
    "human": "human",
    "execution-verified": "execution-verified",
    "mixed": "ground truth",
}
"""What the report calls each kind of ground truth (`DimensionAgreement.truth`)."""


def group_name(a: DimensionAgreement | Pair) -> str:
    """`judge/model@prompt_version`, the label of one judge group."""
    return f"{a.judge}/{a.model or '-'}@{a.prompt_version}"


def truth_name(a: DimensionAgreement) -> str:
    """What the report calls the agreement's ground truth (`TRUTH_NAMES`)."""
    return TRUTH_NAMES[a.truth]


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def figure_class() -> Any:
    """matplotlib's `Figure`, or None when matplotlib cannot be imported."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    return Figure


_DPI = 90


def _png(fig: Any) -> bytes:
    # Lay out at the resolution the file is written at: text is measured wider at 90 dpi
    # than at the figure's default 100 (hinting), so a layout made at 100 cut long labels.
    fig.set_dpi(_DPI)
    fig.tight_layout(pad=0.6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=_DPI)  # a bare Figure renders with the Agg canvas
    return buf.getvalue()


def ink(rgba: tuple[float, ...]) -> str:
    """`black` or `white`, whichever has more contrast on the colour `rgba` (WCAG 2
    relative luminance): a count on a dark cell of the confusion matrix is white."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgba[:3])
    luminance = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (luminance + 0.05) / 0.05 >= 1.05 / (luminance + 0.05) else "white"


def _plot_confusion(figure: Any, a: DimensionAgreement) -> bytes | None:
    if not a.confusion:
        return None
    fig = figure(figsize=(3.6, 3.2))
    ax = fig.subplots()
    image = ax.imshow(a.confusion, cmap="Blues")
    ticks = range(len(a.label_names))
    ax.set_xticks(ticks, a.label_names, rotation=45, ha="right")
    ax.set_yticks(ticks, a.label_names)
    ax.set_xlabel("judge")
    ax.set_ylabel(truth_name(a))
    ax.set_title(a.dimension, fontsize=9)
    for r, row in enumerate(a.confusion):
        for c, count in enumerate(row):
            colour = ink(image.cmap(image.norm(count)))
            ax.text(c, r, str(count), ha="center", va="center", fontsize=8, color=colour)
    return _png(fig)


def _plot_distribution(figure: Any, a: DimensionAgreement) -> bytes:
    fig = figure(figsize=(4.2, 2.8))
    ax = fig.subplots()
    if a.labels:
        width = 0.4
        xs = range(len(a.labels))
        for offset, values, name in (
            (-width / 2, a.judge_values, "judge"),
            (width / 2, a.human_values, truth_name(a)),
        ):
            counts = [sum(abs(v - lab) < 0.5 for v in values) for lab in a.labels]
            ax.bar([x + offset for x in xs], counts, width, label=name)
        ax.set_xticks(list(xs), a.label_names)
    else:
        ax.hist([a.judge_values, a.human_values], bins=10, label=["judge", truth_name(a)])
    ax.set_title(f"{a.dimension}: score distribution", fontsize=9)
    ax.legend(fontsize=7)
    return _png(fig)


def _plot_bias(figure: Any, result: CalibrationResult) -> bytes | None:
    rows = [(a, a.bias) for a in result.agreements if a.bias is not None]
    if not rows:
        return None
    names = [f"{group_name(a)} {a.dimension}" for a, _ in rows]
    # wide enough for the longest label beside a readable plot (6 to 12 inches)
    width = min(12.0, max(6.0, 3.5 + 0.055 * max(len(n) for n in names)))
    fig = figure(figsize=(width, 0.4 * len(rows) + 1.2))
    ax = fig.subplots()
    biases = [bias for _, bias in rows]
    ax.barh(names, biases, color=["tab:red" if b > 0 else "tab:blue" for b in biases])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel(f"mean bias (judge − {bias_truth(result)})")
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


def bias_truth(result: CalibrationResult) -> str:
    """The ground truth's name when every agreement has the same kind, else `ground truth`."""
    names = {truth_name(a) for a in result.agreements}
    return names.pop() if len(names) == 1 else "ground truth"


def make_plots(result: CalibrationResult) -> dict[str, bytes] | None:
    """PNG bytes keyed `bias`, `confusion:<stem>`, `reliability:<stem>` (goal cards with
    a probability), `dist:<stem>`; None without matplotlib."""
    figure = figure_class()
    if figure is None:
        return None
    plots: dict[str, bytes] = {}
    for a in result.agreements:
        key = stem(a)
        confusion = _plot_confusion(figure, a)
        if confusion:
            plots[f"confusion:{key}"] = confusion
        if a.probability is not None and a.probability.bins:
            title = f"{a.dimension}: goal_probability (n={a.probability.n_probability})"
            plots[f"reliability:{key}"] = plot_reliability(figure, a.probability.bins, title)
        plots[f"dist:{key}"] = _plot_distribution(figure, a)
    bias = _plot_bias(figure, result)
    if bias:
        plots["bias"] = bias
    return plots


def stem(a: DimensionAgreement) -> str:
    """A file-name-safe key of one agreement (`llm-claude-v1-goal-achievement`)."""
    return _slug(f"{group_name(a)}-{a.dimension}")


def plot_links(plots: dict[str, bytes]) -> dict[str, str]:
    """{key: `plots/NAME.png`}: each PNG's path relative to the report (the files are
    written with the report, as one set: `report_files.write_set`)."""
    return {key: "plots/" + key.replace(":", "-") + ".png" for key in plots}


def data_uris(plots: dict[str, bytes]) -> dict[str, str]:
    """Each PNG as a `data:image/png;base64,...` URI, for the self-contained HTML report."""
    return {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in plots.items()}
