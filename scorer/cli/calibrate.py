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
    EXIT_INTERRUPTED,
    EXIT_NOT_STARTED,
    EXIT_PARTIAL,
    EffortOption,
    FallbackOption,
    effort_value,
    err,
    fail,
    handle_errors,
    is_quiet,
    note,
    out,
    print_json,
)
from scorer.cli._validate import non_negative
from scorer.errors import CredentialsError, RunInterrupted
from scorer.settings import get_settings

if TYPE_CHECKING:
    from scorer.jobs.calibrate_fill import FillOptions, FillResult


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
    """Compare stored judge scores with ground truth; print a table, write a report.

    The report folder's report is replaced only by a run that scored every labelled
    session it set out to and compared at least one: otherwise one line says why, the
    old report stays as it was, and the exit code is 1 (nothing to compare, no key),
    5 (`--max-cost` left sessions unstarted) or 6 (sessions failed or left to another
    process: run it again).
    """
    from scorer.calibrate import write_report
    from scorer.calibrate.report_files import check_folder
    from scorer.cli.tables import calibration_view
    from scorer.jobs.calibrate import load_ground_truth, run_calibration
    from scorer.jobs.calibrate_fill import FillOptions
    from scorer.jobs.score import choose_judge

    check_folder(out_dir)  # before any (paid) work
    if ground_truth == "-":
        labels = labels_from_stdin()
    else:
        labels = load_ground_truth(ground_truth, since=since)
    note(f"{plural(len(labels), 'ground-truth label')} from {ground_truth}{_per_backend(labels)}")
    if judge == JudgeFilter.auto:
        judge = JudgeFilter(choose_judge("auto"))
    kinds = _kinds_to_fill(judge, score_missing)
    left: list[FillResult] = []
    for kind in kinds:
        opts = FillOptions(
            judge=kind,  # type: ignore[arg-type]
            model=model, effort=effort_value(effort), fallback_model=fallback_model,
            concurrency=concurrency, max_cost=max_cost if kind == "llm" else None,
        )  # fmt: skip
        left.append(_fill_and_report(labels, opts))
    _stop_if_incomplete(left, out_dir)
    result = run_calibration(
        labels,
        judge=judge.value,  # type: ignore[arg-type]  # never "auto" here: resolved above
        model=model,
        n_boot=n_boot,
        since=since,
    )
    if not any(a.n for a in result.agreements):
        raise fail(
            f"no {_judged_by(judge)} scorecard matches the {plural(len(labels), 'label')}: "
            f"nothing to compare; the report in {out_dir} is unchanged"
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


def _kinds_to_fill(judge: JudgeFilter, score_missing: bool | None) -> list[str]:
    """The judges whose missing scorecards this run makes.

    Raises:
        CredentialsError: `--judge llm` is to score missing sessions and no key is set.
    """
    if score_missing is False:
        return []
    kinds = ["heuristic"] if judge != JudgeFilter.llm else []
    keyed = get_settings().anthropic_configured
    if judge == JudgeFilter.llm and not keyed:
        raise CredentialsError(
            "ANTHROPIC_API_KEY is not set: --judge llm scores the labelled sessions with the "
            "LLM judge; set it, use --judge heuristic, or add --no-score-missing to compare "
            "the LLM scores already stored"
        )
    if judge != JudgeFilter.heuristic and (score_missing or keyed):
        kinds.append("llm")
    return kinds


def _judged_by(judge: JudgeFilter) -> str:
    return "stored" if judge == JudgeFilter.all else f"{judge.value} judge"


def _stop_if_incomplete(done: list[FillResult], out_dir: Path) -> None:
    """Exit before the report when sessions are left to score (the old report stays)."""
    counts = {
        "failed": sum(len(d.failed) for d in done),
        "being scored by another process": sum(len(d.busy) for d in done),
        "not started (--max-cost)": sum(d.not_started for d in done),
    }
    left = sum(counts.values())
    if not left:
        return
    parts = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    raise fail(
        f"{plural(left, 'labelled session')} not scored yet ({parts}): the report in "
        f"{out_dir} is unchanged; run the same command again to finish",
        EXIT_NOT_STARTED if left == counts["not started (--max-cost)"] else EXIT_PARTIAL,
    )


def _interrupted(done: FillResult, total: int, judge: str) -> typer.Exit:
    """Ctrl-C while sessions were judged: what was stored and spent, how to go on."""
    judged = done.scored + done.unscored
    err.print(
        f"interrupted: {judged} of {plural(total, 'labelled session')} judged and stored this "
        f"run with the {judge} judge ({done.reused + done.copied} already stored), "
        f"${done.cost_usd:.4f} spent; no report was written; run the same command again to "
        "resume (what is stored is reused)",
        highlight=False,
    )
    return typer.Exit(EXIT_INTERRUPTED)


def _fill_and_report(labels: list, opts: FillOptions) -> FillResult:
    """Score what is missing, with a progress bar on a terminal (not with `-q`), and say
    what happened."""
    from scorer.cli.progress import CostBar
    from scorer.jobs.calibrate_fill import fill, todo

    shown = err.is_terminal and not is_quiet()
    total = len(todo(labels))
    try:
        with CostBar(total, f"{opts.judge} judge", enabled=shown) as bar:
            done = fill(labels, opts, on_done=bar.advance)
    except RunInterrupted as stopped:
        raise _interrupted(stopped.summary, total, opts.judge) from None
    judged = done.scored + done.unscored
    if judged:
        spent = done.cost_usd - done.failed_cost_usd
        cost = f" (${spent:.4f})" if opts.judge == "llm" else ""
        note(f"scored {plural(judged, 'session')} with the {opts.judge} judge{cost}")
    if done.reused:
        note(f"reused {plural(done.reused, opts.judge + ' scorecard')} already in the store")
    if done.copied:
        note(
            f"copied {plural(done.copied, opts.judge + ' scorecard')} of the same judge from "
            "production into the calibration collection (not judged again)"
        )
    if done.unscored:
        err.print(f"{plural(done.unscored, 'session')} unscored (see `scorer scores list`)")
    if done.not_started:
        err.print(
            f"[yellow]--max-cost reached:[/] {plural(done.not_started, 'session')} not started; "
            "run the same command again to continue"
        )
    for sid, reason in done.busy[:5]:
        err.print(f"[yellow]skipped[/] {sid}: {reason}", highlight=False)
    if done.busy:
        err.print(
            f"{plural(len(done.busy), 'session')} left to the processes scoring them; run the "
            "same command again once they end"
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
    for sid, reason in done.left_out[:5]:
        err.print(f"[yellow]left out[/] {sid}: {reason}", highlight=False)
    if done.left_out:
        note(
            f"{plural(len(done.left_out), 'labelled session')} cannot be scored as they are "
            "(left out of the report: the same file fails the same way)"
        )
    return done


def main() -> None:
    """Console-script entry point for `score-calibrate`."""
    from scorer.cli._conventions import entry_point

    entry_point(calibrate_command, "score-calibrate")
