"""The calibration report: a Markdown or HTML page with tables and PNG plots, plus a rich
table for the terminal.

matplotlib is optional (dev/notebooks extra): without it the report has tables only and
says so.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Literal

from rich.table import Table

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
_NO_PLOTS = "matplotlib is not installed, so this report has tables only (pip install matplotlib)."


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


# --- plots (optional) ------------------------------------------------------------------


def _pyplot():
    try:
        import matplotlib

        if "matplotlib.pyplot" not in sys.modules:
            # a CLI never opens a window; a notebook that already chose a backend keeps it
            matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def _save(plt, fig, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return f"plots/{path.name}"


def _plot_confusion(plt, a: DimensionAgreement, path: Path) -> str | None:
    if not a.confusion:
        return None
    fig, ax = plt.subplots(figsize=(3.6, 3.2))
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
    return _save(plt, fig, path)


def _plot_distribution(plt, a: DimensionAgreement, path: Path) -> str:
    fig, ax = plt.subplots(figsize=(4.2, 2.8))
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
    return _save(plt, fig, path)


def _plot_bias(plt, result: CalibrationResult, path: Path) -> str | None:
    rows = [(a, a.bias) for a in result.agreements if a.bias is not None]
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(6, 0.4 * len(rows) + 1.2))
    names = [f"{group_name(a)} {a.dimension}" for a, _ in rows]
    biases = [bias for _, bias in rows]
    ax.barh(names, biases, color=["tab:red" if b > 0 else "tab:blue" for b in biases])
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_xlabel("mean bias (judge − human)")
    ax.tick_params(axis="y", labelsize=7)
    return _save(plt, fig, path)


def _make_plots(result: CalibrationResult, plot_dir: Path) -> dict[str, str] | None:
    """Write the PNGs; returns {key: relative path}, or None without matplotlib."""
    plt = _pyplot()
    if plt is None:
        return None
    plot_dir.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for a in result.agreements:
        stem = _slug(f"{group_name(a)}-{a.dimension}")
        confusion = _plot_confusion(plt, a, plot_dir / f"confusion-{stem}.png")
        if confusion:
            paths[f"confusion:{stem}"] = confusion
        paths[f"dist:{stem}"] = _plot_distribution(plt, a, plot_dir / f"dist-{stem}.png")
    bias = _plot_bias(plt, result, plot_dir / "bias.png")
    if bias:
        paths["bias"] = bias
    return paths


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


def _disagreement_rows(a: DimensionAgreement, link: Callable[[str, str], str]) -> list[list[str]]:
    rows = []
    for p in a.disagreements:
        refs = ", ".join(
            f"#{e.event}" + (f" “{e.quote[:60]}”" if e.quote else "") for e in p.evidence
        )
        rows.append(
            [
                p.session_id,
                p.judge_label or _value_name(a, p.judge_value),
                p.human_label or _value_name(a, p.human_value),
                format_stat(p.diff, 1),
                refs or "—",
                link("Langfuse", p.langfuse_url) if p.langfuse_url else "—",
            ]
        )
    return rows


def _value_name(a: DimensionAgreement, value: float) -> str:
    names = dict(zip(a.labels, a.label_names, strict=True))
    return names.get(value, format_stat(value, 1))


_DIS_HEADERS = ["session", "judge", "human", "diff", "evidence", "link"]


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _render_md(result: CalibrationResult, plots: dict[str, str] | None) -> str:
    out = [
        "# Judge calibration",
        "",
        f"Rubric `{result.rubric_version}` · {result.n_labels} labels · {result.n_scorecards} scorecards"
        f" · {result.unmatched_labels} labels without a scorecard · bootstrap {result.n_boot}x (seed {result.seed}), 95% CI in brackets.",
        "",
        "## Summary",
        "",
        _md_table(*_summary_rows(result)),
    ]
    if plots is None:
        out += ["", f"> {_NO_PLOTS}"]
    elif "bias" in plots:
        out += ["", "## Bias per dimension", "", f"![bias]({plots['bias']})"]
    if result.inter_annotator:
        out += ["", "## Inter-annotator agreement", ""]
        rows = [
            [
                i.dimension,
                ", ".join(i.raters),
                str(i.n_units),
                format_stat(i.alpha),
                "; ".join(i.notes),
            ]
            for i in result.inter_annotator
        ]
        out.append(_md_table(["dimension", "annotators", "shared sessions", "α", "notes"], rows))
    for a in result.agreements:
        stem = _slug(f"{group_name(a)}-{a.dimension}")
        out += ["", f"## {a.dimension} — {group_name(a)} (n={a.n})", ""]
        out += [f"- {note}" for note in a.notes]
        for key in (f"confusion:{stem}", f"dist:{stem}"):
            if plots and key in plots:
                out.append(f"![{key.split(':')[0]} {a.dimension}]({plots[key]})")
        if a.disagreements:
            out += ["", "Largest disagreements:", ""]
            out.append(_md_table(_DIS_HEADERS, _disagreement_rows(a, lambda t, u: f"[{t}]({u})")))
    return "\n".join(out) + "\n"


def _html_table(headers: list[str], rows: list[list[str]], *, raw_last: bool = False) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = ""
    for row in rows:
        cells = [html.escape(c) for c in row]
        if raw_last:
            cells[-1] = row[-1]  # already-built link markup
        body += "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _render_html(result: CalibrationResult, plots: dict[str, str] | None) -> str:
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>Judge calibration</title>",
        "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 6px;font-size:13px}</style></head><body>",
        "<h1>Judge calibration</h1>",
        f"<p>Rubric <code>{html.escape(result.rubric_version)}</code> · {result.n_labels} labels · "
        f"{result.n_scorecards} scorecards · {result.unmatched_labels} labels without a scorecard · "
        f"bootstrap {result.n_boot}x (seed {result.seed}).</p>",
        "<h2>Summary</h2>",
        _html_table(*_summary_rows(result)),
    ]
    if plots is None:
        parts.append(f"<p><em>{html.escape(_NO_PLOTS)}</em></p>")
    elif "bias" in plots:
        parts.append(f"<h2>Bias per dimension</h2><img src='{plots['bias']}' alt='bias'>")
    for a in result.agreements:
        stem = _slug(f"{group_name(a)}-{a.dimension}")
        parts.append(
            f"<h2>{html.escape(a.dimension)} — {html.escape(group_name(a))} (n={a.n})</h2>"
        )
        parts += [f"<p>{html.escape(note)}</p>" for note in a.notes]
        for key in (f"confusion:{stem}", f"dist:{stem}"):
            if plots and key in plots:
                parts.append(f"<img src='{plots[key]}' alt='{html.escape(key)}'>")
        if a.disagreements:
            link = lambda t, u: f"<a href='{html.escape(u, quote=True)}'>{html.escape(t)}</a>"  # noqa: E731
            parts.append(_html_table(_DIS_HEADERS, _disagreement_rows(a, link), raw_last=True))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(
    result: CalibrationResult, out_dir: Path, *, fmt: Literal["md", "html"] = "md"
) -> Path:
    """Write `calibration.md` (or `.html`), `calibration.json` and `plots/*.png` to `out_dir`.

    Returns:
        The path of the Markdown/HTML report.
    """
    if fmt not in ("md", "html"):
        raise ConfigError(f"unknown report format {fmt!r} (md or html)")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plots = _make_plots(result, out_dir / "plots")
    (out_dir / "calibration.json").write_text(result.model_dump_json(indent=2), encoding="utf-8")
    render = _render_md if fmt == "md" else _render_html
    path = out_dir / f"calibration.{fmt}"
    path.write_text(render(result, plots), encoding="utf-8")
    return path
