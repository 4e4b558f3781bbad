"""The calibration report: a Markdown or HTML page with tables and PNG plots, plus a rich
table for the terminal.

The HTML report is one self-contained file (Jinja2 template `templates/report.html.j2`):
its PNG plots are embedded as base64 `data:` URIs, so it can be mailed or attached as
is. The Markdown report links `plots/*.png` beside it. Both carry a legend of every
statistic and name the task (with a link where one is known) of each disagreement. For
the goal, a second table gives the success probability's ranking and calibration
(AUROC, Brier score, ECE; `scorer.calibrate.probability`) beside the class's AUROC, and
its section shows the reliability diagram next to the confusion matrix.

The plots are `calibrate.plots`'. matplotlib is a main dependency; if it cannot be
imported the report still has every table and says why the plots are missing. The
ground truth is named what it is everywhere (`human`, `execution-verified`, or `ground
truth` for a mix), and the legend says what it means.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from rich.table import Table

from scorer._text import plural
from scorer.calibrate.plots import (
    TRUTH_NAMES,
    bias_truth,
    data_uris,
    group_name,
    make_plots,
    plot_links,
    stem,
    truth_name,
)
from scorer.calibrate.probability import N_BOOT as AUROC_BOOT
from scorer.calibrate.probability import ProbabilityFigures
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
     "ground truth (0-1, higher is better)."),
    ("±1", "Within one: share of sessions where judge and ground truth are at most one step "
     "apart."),
    ("κ", "Cohen's kappa: agreement corrected for chance (1 perfect, 0 chance level, "
     "below 0 worse than chance)."),
    ("κw", "Weighted kappa (quadratic): like κ, but near misses count as partial agreement, "
     "which suits ordered scales."),
    ("α", "Krippendorff's alpha (ordinal): chance-corrected reliability between judge and "
     "ground truth; above 0.8 is reliable, 0.67-0.8 tentative."),
    ("ρ", "Spearman rank correlation: do judge and ground truth order sessions the same way."),
    ("r", "Pearson correlation of the raw values."),
    ("MAE", "Mean absolute error |judge − ground truth|, in scale steps (lower is better)."),
    ("bias", "Mean of judge − ground truth: positive means the judge is more generous than the "
     "ground truth, negative stricter."),
    ("bal.acc", "Balanced accuracy: recall averaged over the label classes, so a judge that "
     "always answers the majority label does not look good."),
    ("bal.acc res.", "Resolved-vs-not balanced accuracy (goal_achievement only): complete or "
     "exceeded against everything else, the question execution-verified outcomes answer."),
    ("AUROC p", "goal_achievement only: AUROC of the cards' goal_probability against "
     "resolved-vs-not, the chance a resolved session gets a higher probability than an "
     "unresolved one (0.5 chance, 1 perfect). n/a when no card has a probability."),
    ("AUROC class", "The same for the goal class (failed < partial < complete < exceeded): "
     "the baseline the probability has to beat."),
    ("Brier", "Mean squared error of goal_probability against resolved (1) or not (0); "
     "0 is perfect, a constant 0.5 scores 0.25."),
    ("ECE", "Expected calibration error over 10 equal-width probability bins: the "
     "session-weighted mean |mean probability − share resolved| of each bin (0 perfect)."),
    ("reliability", "The reliability diagram: per probability bin, the share that resolved "
     "against the mean probability (on the diagonal = calibrated), with sessions per bin."),
    ("[low, high]", "95% confidence interval from a seeded bootstrap over sessions (AUROC: "
     "2,000 resamples); wide intervals mean too few labelled sessions to trust the point "
     "value."),
    ("—", "Undefined: too few pairs, or one side is constant (see the notes under each "
     "dimension)."),
    ("diff", "Judge minus ground truth for one session; the disagreement tables list the "
     "largest |diff| first, with the evidence the judge cited (#event numbers)."),
]  # fmt: skip
"""(symbol, explanation) for every statistic and column in the report (`legend` adds
what the ground truth is)."""
TRUTH_LEGEND: dict[str, str] = {
    "human": "The ground truth is people's labels: the consensus of the annotators (the low "
    "median of their labels).",
    "execution-verified": "The ground truth is the task's own tests (Terminal-Bench): all "
    "passed is complete, some passed partial, none failed. No person labelled these sessions.",
    "mixed": "Some sessions are labelled by people (the annotators' low median), some by the "
    "task's own tests (execution-verified).",
}
"""What each kind of ground truth means, under the name the report gives it (`TRUTH_NAMES`)."""


def legend(result: CalibrationResult) -> list[tuple[str, str]]:
    """`LEGEND` and an entry for each kind of ground truth the result holds."""
    kinds = dict.fromkeys(a.truth for a in result.agreements)
    return [*LEGEND, *((TRUTH_NAMES[k], TRUTH_LEGEND[k]) for k in kinds)]


def format_stat(value: float | int | None, digits: int = 2) -> str:
    """A statistic for display: `—` when undefined."""
    if value is None:
        return "—"
    if isinstance(value, int):
        return str(value)
    return f"{value:+.{digits}f}" if value < 0 else f"{value:.{digits}f}"


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


PROB_HEADERS = ["judge", "n", "with p", "AUROC p", "AUROC class", "Brier", "ECE"]
"""Columns of the goal probability's table (`probability_rows`)."""


def _ci_text(value: float | None, ci: tuple[float, float] | None, missing: str = "—") -> str:
    if value is None:
        return missing
    text = format_stat(value)
    return text + (f" [{format_stat(ci[0])}, {format_stat(ci[1])}]" if ci else "")


def _prob_cells(f: ProbabilityFigures) -> list[str]:
    """AUROC p, AUROC class, Brier, ECE: `n/a` where no card has a probability."""
    na = "n/a" if f.n_probability == 0 else "—"
    return [
        _ci_text(f.auroc, f.auroc_ci, na),
        _ci_text(f.auroc_class, f.auroc_class_ci),
        _ci_text(f.brier, None, na),
        _ci_text(f.ece, None, na),
    ]


def probability_rows(result: CalibrationResult) -> list[list[str]]:
    """One row per judge group with a goal agreement: `PROB_HEADERS`' cells."""
    return [
        [group_name(a), str(f.n), str(f.n_probability), *_prob_cells(f)]
        for a in result.agreements
        if (f := a.probability) is not None
    ]


def render_probability_table(result: CalibrationResult) -> Table | None:
    """The goal probability's ranking and calibration per judge group (None: no goal)."""
    rows = probability_rows(result)
    if not rows:
        return None
    table = Table(title="goal_achievement: success probability vs resolved", show_lines=False)
    for header in PROB_HEADERS:
        table.add_column(header, justify="left" if header == "judge" else "right")
    for row in rows:
        table.add_row(*row)
    return table


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


def _dis_headers(a: DimensionAgreement) -> list[str]:
    return ["task (session)", "judge", truth_name(a), "diff", "evidence", "link"]


def _md_table(headers: list[str], rows: list[list[str]]) -> str:
    def cell(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _intro(result: CalibrationResult) -> str:
    auroc = f", AUROC {AUROC_BOOT:,}x" if result.n_boot and probability_rows(result) else ""
    return (
        f"Rubric {result.rubric_version} · {plural(result.n_labels, 'label')} · "
        f"{plural(result.n_scorecards, 'scorecard')} · "
        f"{plural(result.unmatched_labels, 'label')} without a scorecard · bootstrap {result.n_boot}x{auroc} (seed {result.seed}), 95% CI in brackets."
    )


def _inter_rows(result: CalibrationResult) -> list[list[str]]:
    return [
        [i.dimension, ", ".join(i.raters), str(i.n_units), format_stat(i.alpha), "; ".join(i.notes)]
        for i in result.inter_annotator
    ]


_INTER_HEADERS = ["dimension", "annotators", "shared sessions", "α", "notes"]


def _render_md(result: CalibrationResult, plots: dict[str, str] | None) -> str:
    out = ["# Judge calibration", "", _intro(result), "", "## Summary", ""]
    out += [_md_table(*_summary_rows(result)), ""]
    if probability_rows(result):
        out += ["## Goal: success probability vs resolved", ""]
        out += [_md_table(PROB_HEADERS, probability_rows(result)), ""]
    out += ["## Legend", ""]
    out += [f"- **{symbol}**: {text}" for symbol, text in legend(result)]
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
        key = stem(a)
        out += ["", f"## {a.dimension} — {group_name(a)} (n={a.n})", ""]
        out += [f"- {note}" for note in a.notes]
        for plot in (f"confusion:{key}", f"reliability:{key}", f"dist:{key}"):
            if plots and plot in plots:
                out.append(f"![{plot.split(':')[0]} {a.dimension}]({plots[plot]})")
        if a.disagreements:
            out += ["", "Largest disagreements:", ""]
            rows = _disagreement_rows(a, lambda t, u: f"[{t}]({u})")
            out.append(_md_table(_dis_headers(a), rows))
    return "\n".join(out) + "\n"


def _html_sections(result: CalibrationResult, plots: dict[str, str] | None) -> list[dict]:
    sections = []
    for a in result.agreements:
        key = stem(a)
        images = [
            (kind, plots[f"{kind}:{key}"])
            for kind in ("confusion", "reliability", "dist")
            if plots and f"{kind}:{key}" in plots
        ]
        sections.append(
            {
                "title": f"{a.dimension} — {group_name(a)} (n={a.n})",
                "notes": a.notes,
                "images": images,
                "rows": _disagreements(a),
                "headers": _dis_headers(a),
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
        prob_headers=PROB_HEADERS,
        prob_rows=probability_rows(result),
        legend=legend(result),
        no_plots=_NO_PLOTS if plots is None else None,
        bias=(plots or {}).get("bias"),
        bias_truth=bias_truth(result),
        inter_headers=_INTER_HEADERS,
        inter_rows=_inter_rows(result),
        sections=_html_sections(result, plots),
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
        text = _render_html(result, data_uris(pngs) if pngs is not None else None)
    else:
        links = plot_links(pngs) if pngs is not None else None
        files.update({links[key]: png for key, png in (pngs or {}).items() if links})
        text = _render_md(result, links)
    files[f"calibration.{fmt}"] = text.encode()
    write_set(Path(out_dir), files)
    return Path(out_dir) / f"calibration.{fmt}"
