"""`score-calibrate`: how well do our judges agree with ground truth?"""

from __future__ import annotations

import sys
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from scorer._text import plural
from scorer.cli._common import (
    EffortOption,
    FallbackOption,
    effort_value,
    err,
    handle_errors,
    note,
    out,
    print_json,
)
from scorer.cli._validate import non_negative
from scorer.settings import get_settings

if TYPE_CHECKING:
    from scorer.jobs.calibrate_fill import FillOptions


class JudgeFilter(StrEnum):
    auto = "auto"
    all = "all"
    heuristic = "heuristic"
    llm = "llm"


class ReportFormat(StrEnum):
    md = "md"
    html = "html"


def labels_from_stdin() -> list:
    """Ground-truth labels piped in: JSONL when the first line is an object, else CSV."""
    import tempfile

    from scorer.calibrate.ground_truth import load_file

    text = sys.stdin.read()
    suffix = ".jsonl" if text.lstrip().startswith("{") else ".csv"
    with tempfile.TemporaryDirectory(prefix="scorer-labels-") as folder:
        path = Path(folder) / f"stdin{suffix}"
        path.write_text(text, encoding="utf-8")
        return load_file(path)


@handle_errors
def calibrate_command(
    ground_truth: Annotated[
        str,
        typer.Option(
            help="langfuse | terminal-bench[:PATH] | a CSV/JSONL file (- reads standard input)."
        ),
    ] = "terminal-bench",
    judge: Annotated[
        JudgeFilter,
        typer.Option(
            help="Which judge to compare: auto (llm when ANTHROPIC_API_KEY is set, else "
            "heuristic), llm, heuristic, or all stored scores."
        ),
    ] = JudgeFilter.auto,
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
    concurrency: Annotated[int, typer.Option(min=1, help="Sessions judged in parallel.")] = 4,
    max_cost: Annotated[
        float | None, typer.Option(help="Stop starting LLM-judged sessions beyond this USD.")
    ] = None,
    effort: EffortOption = None,
    fallback_model: FallbackOption = None,
) -> None:
    """Compare stored judge scores with ground truth; print a table, write a report."""
    from scorer.calibrate import write_report
    from scorer.cli.tables import calibration_view
    from scorer.jobs.calibrate import load_ground_truth, run_calibration
    from scorer.jobs.calibrate_fill import FillOptions
    from scorer.jobs.score import choose_judge

    if ground_truth == "-":
        labels = labels_from_stdin()
    else:
        labels = load_ground_truth(ground_truth, since=since)
    note(f"{plural(len(labels), 'ground-truth label')} from {ground_truth}{_per_backend(labels)}")
    if judge == JudgeFilter.auto:
        judge = JudgeFilter(choose_judge("auto"))
    kinds = ["heuristic"] if judge != JudgeFilter.llm else []
    if judge != JudgeFilter.heuristic and (score_missing or get_settings().anthropic_configured):
        kinds.append("llm")
    if score_missing is not False:
        for kind in kinds:
            opts = FillOptions(
                judge=kind,  # type: ignore[arg-type]
                model=model, effort=effort_value(effort), fallback_model=fallback_model,
                concurrency=concurrency, max_cost=max_cost if kind == "llm" else None,
            )  # fmt: skip
            _fill_and_report(labels, opts)
    result = run_calibration(
        labels,
        judge=judge.value,  # type: ignore[arg-type]  # never "auto" here: resolved above
        model=model,
        n_boot=n_boot,
        since=since,
    )
    report = write_report(result, out_dir, fmt=fmt.value)
    if as_json:
        print_json(result.model_dump(mode="json"))
    else:
        out.print(calibration_view(result, out))
    err.print(f"report: {report}")


def _per_backend(labels: list) -> str:
    """` (claude_code_coder 80, claude_code_gpt5 80)` for Terminal-Bench labels, else ``."""
    from collections import Counter

    counts = Counter(lab.meta.get("backend") for lab in labels if lab.meta.get("backend"))
    return f" ({', '.join(f'{b} {n}' for b, n in sorted(counts.items()))})" if counts else ""


def _fill_and_report(labels: list, opts: FillOptions) -> None:
    """Score what is missing, with a progress bar on a terminal, and say what happened."""
    from scorer.cli.progress import CostBar
    from scorer.jobs.calibrate_fill import fill, todo

    with CostBar(len(todo(labels)), f"{opts.judge} judge", enabled=err.is_terminal) as bar:
        done = fill(labels, opts, on_done=bar.advance)
    judged = done.scored + done.unscored
    if judged:
        spent = done.cost_usd - done.failed_cost_usd
        cost = f" (${spent:.4f})" if opts.judge == "llm" else ""
        note(f"scored {plural(judged, 'session')} with the {opts.judge} judge{cost}")
    if done.reused:
        note(f"reused {plural(done.reused, opts.judge + ' scorecard')} already in the store")
    if done.unscored:
        err.print(f"{plural(done.unscored, 'session')} unscored (see `scorer scores list`)")
    if done.not_started:
        err.print(
            f"[yellow]--max-cost reached:[/] {plural(done.not_started, 'session')} not started; "
            "run the same command again to continue"
        )
    for sid, reason in done.failed[:5]:
        err.print(f"[red]failed[/] {sid}: {reason}", highlight=False)
    if len(done.failed) > 5:
        err.print(f"... and {len(done.failed) - 5} more failed")
    if done.failed_cost_usd:
        note(
            f"judge calls made before {plural(len(done.failed), 'session')} failed "
            f"cost ${done.failed_cost_usd:.4f}"
        )


def main() -> None:
    """Console-script entry point for `score-calibrate`."""
    from scorer.cli._conventions import entry_point

    entry_point(calibrate_command, "score-calibrate")
