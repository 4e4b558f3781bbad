"""The calibration report: a Markdown or HTML page with tables and PNG plots, plus a rich
table for the terminal.

The HTML report is one self-contained file (Jinja2 template `templates/report.html.j2`):
its PNG plots are embedded as base64 `data:` URIs, so it can be mailed or attached as
is. The Markdown report links `plots/*.png` beside it. Both carry a legend of every
statistic and name the task (with a link where one is known) of each disagreement.

Plots are drawn on `matplotlib.figure.Figure` objects with the Agg canvas, never through
pyplot: nothing global is switched, so a notebook's backend is left alone, and no
display is needed. matplotlib is a main dependency; if it cannot be imported the report
still has every table and says why the plots are missing.
"""

from __future__ import annotations

import base64
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from rich.table import Table

from scorer._text import plural
from scorer.calibrate.report_files import write_set
from scorer.calibrate.stats import CalibrationResult, DimensionAgreement, Pair
from scorer.errors import ConfigError

_STATS = [
    ("n", "n"),
    ("exact", "exact_agreement"),
    ("±1", "within_one"),
    ("κ", "cohen_kappa"),
    ("κw", "weighted_kappa"),
    ("α", "krippendorff_alpha"),
    ("ρ", "spearman"),
    ("r", "pearson"),
    ("MAE", "mae"),
    ("bias", "bias"),
    ("bal.acc", "balanced_accuracy"),
    ("bal.acc res.", "resolved_balanced_accuracy"),
]
STATS = _STATS
"""(header, field) of each statistic, in table order (the CLI's narrow tables use it)."""
_NO_PLOTS = (
    "matplotlib could not be imported, so this report has tables only (pip install matplotlib)."
)
LEGEND: list[tuple[str, str]] = [
    ("n", "Sessions with both a judge score and a ground-truth label for the dimension."),
    ("exact", "Exact agreement: share of sessions where the judge gave the same label as the "
     "humans (0-1, higher is better)."),
    ("±1", "Within one: share of sessions where judge and humans are at most one step apart."),
    ("κ", "Cohen's kappa: agreement corrected for chance (1 perfect, 0 chance level, "
     "below 0 worse than chance)."),
    ("κw", "Weighted kappa (quadratic): like κ, but near misses count as partial agreement, "
     "which suits ordered scales."),
    ("α", "Krippendorff's alpha (ordinal): chance-corrected reliability between judge and "
     "humans; above 0.8 is reliable, 0.67-0.8 tentative."),
    ("ρ", "Spearman rank correlation: do judge and humans order sessions the same way."),
    ("r", "Pearson correlation of the raw values."),
    ("MAE", "Mean absolute error |judge − human|, in scale steps (lower is better)."),
    ("bias", "Mean of judge − human: positive means the judge is more generous than the "
     "humans, negative stricter."),
    ("bal.acc", "Balanced accuracy: recall averaged over the label classes, so a judge that "
     "always answers the majority label does not look good."),
    ("bal.acc res.", "Resolved-vs-not balanced accuracy (goal_achievement only): complete or "
     "exceeded against everything else, the question execution-verified outcomes answer."),
    ("[low, high]", "95% confidence interval from a seeded bootstrap over sessions; wide "
     "intervals mean too few labelled sessions to trust the point value."),
    ("—", "Undefined: too few pairs, or one side is constant (see the notes under each "
     "dimension)."),
    ("human", "The consensus of the annotators: the low median of their labels."),
    ("diff", "Judge minus human for one session; the disagreement tables list the largest "
     "|diff| first, with the evidence the judge cited (#event numbers)."),
]  # fmt: skip
"""(symbol, explanation) for every statistic and column in the report."""


def format_stat(value: float | int | None, digits: int = 2) -> str:
    """A statistic for display: `—` when undefined."""
    if value is None:
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:+.{digits}f}" if value < 0 else f"{value:.{digits}f}"


def group_name(a: DimensionAgreement | Pair) -> str:
    """`judge/model@prompt_version`, the label of one judge group."""
    return f"{a.judge}/{a.model or '-'}@{a.prompt_version}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()


def _with_ci(a: DimensionAgreement, field: str) -> str:
    text = format_stat(getattr(a, field))
    ci = a.ci.get(field)
    if ci and ci.low is not None and ci.high is not None:
        text += f" [{format_stat(ci.low)}, {format_stat(ci.high)}]"
    return text


# --- terminal --------------------------------------------------------------------------


def render_table(result: CalibrationResult) -> Table:
    """One row per (judge group, dimension) with the main statistics."""
    table = Table(title=f"Calibration (rubric {result.rubric_version})", show_lines=False)
    for header in ("judge", "dimension", *(h for h, _ in _STATS)):
        table.add_column(header, justify="left" if header in ("judge", "dimension") else "right")
    for a in result.agreements:
        table.add_row(group_name(a), a.dimension, *(format_stat(getattr(a, f)) for _, f in _STATS))
    return table


# --- plots ---------------------------------------------------------------------------


def _figure_class() -> Any:
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


def make_plots(result: CalibrationResult) -> dict[str, bytes] | None:
    """PNG bytes keyed `bias`, `confusion:<stem>`, `dist:<stem>`; None without matplotlib."""
    figure = _figure_class()
    if figure is None:
        return None
    plots: dict[str, bytes] = {}
    for a in result.agreements:
        stem = _stem(a)
        confusion = _plot_confusion(figure, a)
        if confusion:
            plots[f"confusion:{stem}"] = confusion
        plots[f"dist:{stem}"] = _plot_distribution(figure, a)
    bias = _plot_bias(figure, result)
    if bias:
        plots["bias"] = bias
    return plots


def _stem(a: DimensionAgreement) -> str:
    return _slug(f"{group_name(a)}-{a.dimension}")


def _plot_files(plots: dict[str, bytes]) -> dict[str, str]:
    """{key: `plots/NAME.png`}, each PNG's path relative to the report."""
    return {key: "plots/" + key.replace(":", "-") + ".png" for key in plots}


def _data_uris(plots: dict[str, bytes]) -> dict[str, str]:
    return {k: "data:image/png;base64," + base64.b64encode(v).decode() for k, v in plots.items()}


# --- documents -------------------------------------------------------------------------


def _summary_rows(result: CalibrationResult) -> tuple[list[str], list[list[str]]]:
    headers = ["judge", "dimension", *(h for h, _ in _STATS)]
    rows = [
        [
            group_name(a),
            a.dimension,
            *(_with_ci(a, f) if f in a.ci else format_stat(getattr(a, f)) for _, f in _STATS),
        ]
        for a in result.agreements
    ]
    return headers, rows


def _task_cell(p: Pair) -> str:
    """The task name with the session id, or the session id alone."""
    return f"{p.task} ({p.session_id})" if p.task and p.task != p.session_id else p.session_id


def _link_text(url: str) -> str:
    if "langfuse" in url or "/trace/" in url or "/sessions/" in url:
        return "Langfuse"
    return "open" if url.startswith(("http://", "https://")) else "file"


def _link_target(link: str) -> str:
    """A URL for an href: absolute paths become file:// URIs."""
    return Path(link).as_uri() if link.startswith("/") else link


def _disagreements(a: DimensionAgreement) -> list[tuple[list[str], tuple[str, str] | None]]:
    """Per disagreement: the text cells, and the (text, href) of its link if any."""
    rows = []
    for p in a.disagreements:
        refs = ", ".join(
            f"#{e.event}" + (f" “{e.quote[:60]}”" if e.quote else "") for e in p.evidence
        )
        cells = [
            _task_cell(p),
            p.judge_label or _value_name(a, p.judge_value),
            p.human_label or _value_name(a, p.human_value),
            format_stat(p.diff, 1),
            refs or "—",
        ]
        rows.append((cells, (_link_text(p.link), _link_target(p.link)) if p.link else None))
    return rows


def _disagreement_rows(a: DimensionAgreement, link: Callable[[str, str], str]) -> list[list[str]]:
    return [[*cells, link(*ref) if ref else "—"] for cells, ref in _disagreements(a)]


def _value_name(a: DimensionAgreement, value: float) -> str:
    names = dict(zip(a.labels, a.label_names, strict=True))
    return names.get(value, format_stat(value, 1))


_DIS_HEADERS = ["task (session)", "judge", "human", "diff", "evidence", "link"]


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _intro(result: CalibrationResult) -> str:
    return (
        f"Rubric {result.rubric_version} · {plural(result.n_labels, 'label')} · "
        f"{plural(result.n_scorecards, 'scorecard')} · "
        f"{plural(result.unmatched_labels, 'label')} without a scorecard · bootstrap {result.n_boot}x (seed {result.seed}), 95% CI in brackets."
    )


def _inter_rows(result: CalibrationResult) -> list[list[str]]:
    return [
        [i.dimension, ", ".join(i.raters), str(i.n_units), format_stat(i.alpha), "; ".join(i.notes)]
        for i in result.inter_annotator
    ]


_INTER_HEADERS = ["dimension", "annotators", "shared sessions", "α", "notes"]


def _render_md(result: CalibrationResult, plots: dict[str, str] | None) -> str:
    out = ["# Judge calibration", "", _intro(result), "", "## Summary", ""]
    out += [_md_table(*_summary_rows(result)), "", "## Legend", ""]
    out += [f"- **{symbol}**: {text}" for symbol, text in LEGEND]
    if plots is None:
        out += ["", f"> {_NO_PLOTS}"]
    elif "bias" in plots:
        out += ["", "## Bias per dimension", "", f"![bias]({plots['bias']})"]
    if result.inter_annotator:
        out += [
            "",
            "## Inter-annotator agreement",
            "",
            _md_table(_INTER_HEADERS, _inter_rows(result)),
        ]
    for a in result.agreements:
        stem = _stem(a)
        out += ["", f"## {a.dimension} — {group_name(a)} (n={a.n})", ""]
        out += [f"- {note}" for note in a.notes]
        for key in (f"confusion:{stem}", f"dist:{stem}"):
            if plots and key in plots:
                out.append(f"![{key.split(':')[0]} {a.dimension}]({plots[key]})")
        if a.disagreements:
            out += ["", "Largest disagreements:", ""]
            out.append(_md_table(_DIS_HEADERS, _disagreement_rows(a, lambda t, u: f"[{t}]({u})")))
    return "\n".join(out) + "\n"


def _html_sections(result: CalibrationResult, plots: dict[str, str] | None) -> list[dict]:
    sections = []
    for a in result.agreements:
        stem = _stem(a)
        images = [
            (kind, plots[f"{kind}:{stem}"])
            for kind in ("confusion", "dist")
            if plots and f"{kind}:{stem}" in plots
        ]
        sections.append(
            {
                "title": f"{a.dimension} — {group_name(a)} (n={a.n})",
                "notes": a.notes,
                "images": images,
                "rows": _disagreements(a),
            }
        )
    return sections


def _render_html(result: CalibrationResult, plots: dict[str, str] | None) -> str:
    from jinja2 import Environment, PackageLoader, select_autoescape

    env = Environment(
        loader=PackageLoader("scorer.calibrate", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    summary_headers, summary_rows = _summary_rows(result)
    return env.get_template("report.html.j2").render(
        intro=_intro(result),
        summary_headers=summary_headers,
        summary_rows=summary_rows,
        legend=LEGEND,
        no_plots=_NO_PLOTS if plots is None else None,
        bias=(plots or {}).get("bias"),
        inter_headers=_INTER_HEADERS,
        inter_rows=_inter_rows(result),
        sections=_html_sections(result, plots),
        dis_headers=_DIS_HEADERS,
    )


def write_report(
    result: CalibrationResult, out_dir: Path, *, fmt: Literal["md", "html"] = "md"
) -> Path:
    """Write the report and `calibration.json` to `out_dir`, replacing the report there
    as a whole (`report_files.write_set`: never a mix of two reports, even after a crash).

    `html` is one self-contained `calibration.html` (plots embedded as data URIs);
    `md` is `calibration.md` with its plots in `plots/*.png` beside it.

    Returns:
        The path of the Markdown/HTML report.

    Raises:
        ConfigError: An unknown format, or `out_dir` holds files that are not a report.
    """
    if fmt not in ("md", "html"):
        raise ConfigError(f"unknown report format {fmt!r} (md or html)")
    pngs = make_plots(result)
    files = {"calibration.json": result.model_dump_json(indent=2).encode()}
    if fmt == "html":
        text = _render_html(result, _data_uris(pngs) if pngs is not None else None)
    else:
        links = _plot_files(pngs) if pngs is not None else None
        files.update({links[key]: png for key, png in (pngs or {}).items() if links})
        text = _render_md(result, links)
    files[f"calibration.{fmt}"] = text.encode()
    write_set(Path(out_dir), files)
    return Path(out_dir) / f"calibration.{fmt}"
