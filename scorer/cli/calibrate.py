"""`score-calibrate`: how well do our judges agree with ground truth?"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from scorer._text import plural
from scorer.cli._common import err, handle_errors, out, print_json
from scorer.cli._validate import non_negative
from scorer.settings import get_settings


class JudgeFilter(StrEnum):
    all = "all"
    heuristic = "heuristic"
    llm = "llm"


class ReportFormat(StrEnum):
    md = "md"
    html = "html"


@handle_errors
def calibrate_command(
    ground_truth: Annotated[
        str, typer.Option(help="langfuse | terminal-bench[:PATH] | a CSV/JSONL file.")
    ] = "terminal-bench",
    judge: Annotated[JudgeFilter, typer.Option(help="Which stored judge scores to compare.")] = (
        JudgeFilter.all
    ),
    model: Annotated[str | None, typer.Option(help="Only scores from this judge model.")] = None,
    since: Annotated[datetime | None, typer.Option(help="Only scores/labels since (ISO).")] = None,
    score_missing: Annotated[
        bool | None,
        typer.Option(
            help="Score labelled sessions that have no score yet (default: heuristic only, "
            "or llm when ANTHROPIC_API_KEY is set and --judge llm)."
        ),
    ] = None,
    out_dir: Annotated[Path, typer.Option("--out", help="Report folder.")] = Path(
        "calibration-report"
    ),
    fmt: Annotated[ReportFormat, typer.Option("--format", help="md or html.")] = ReportFormat.md,
    n_boot: Annotated[
        int,
        typer.Option(callback=non_negative, help="Bootstrap resamples for 95% CIs (0: none)."),
    ] = 500,
    as_json: Annotated[bool, typer.Option("--json", help="Result as JSON on stdout.")] = False,
) -> None:
    """Compare stored judge scores with ground truth; print a table, write a report."""
    from scorer.calibrate import render_table, write_report
    from scorer.jobs.calibrate import load_ground_truth, run_calibration
    from scorer.jobs.calibrate import score_missing as fill

    labels = load_ground_truth(ground_truth, since=since)
    err.print(f"{plural(len(labels), 'ground-truth label')} from {ground_truth}")
    kinds = ["heuristic"] if judge != JudgeFilter.llm else []
    if judge != JudgeFilter.heuristic and (score_missing or get_settings().anthropic_configured):
        kinds.append("llm")
    if score_missing is not False:
        for kind in kinds:
            n = fill(labels, kind, model=model)  # type: ignore[arg-type]
            if n:
                err.print(f"scored {plural(n, 'session')} with the {kind} judge")
    result = run_calibration(labels, judge=judge.value, model=model, n_boot=n_boot, since=since)
    report = write_report(result, out_dir, fmt=fmt.value)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        out.print(render_table(result))
    err.print(f"report: {report}")


def main() -> None:
    """Console-script entry point for `score-calibrate`."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(calibrate_command)
    app()
