"""`score-backfill`: score every finished session in a time window (resumable).

Run the same command again to resume; see `scorer.jobs.backfill` for the guarantees.
Progress and the summary table go to stderr; `--json` prints the summary on stdout.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from scorer._text import plural
from scorer.cli._common import (
    EXIT_ERROR,
    EffortOption,
    FallbackOption,
    effort_value,
    err,
    handle_errors,
    print_json,
)
from scorer.cli._validate import check_window, non_negative, unit_interval
from scorer.cli.progress import BackfillBar
from scorer.errors import ConfigError
from scorer.jobs.backfill import BackfillOptions, BackfillSummary, run_backfill
from scorer.jobs.discovery import DiscoveryProgress, watch_discovery
from scorer.jobs.selection import parse_shard


class BackfillSource(StrEnum):
    claude_code = "claude-code"
    langfuse = "langfuse"


class BackfillJudge(StrEnum):
    llm = "llm"
    heuristic = "heuristic"


def parse_when(value: str | None, flag: str) -> datetime | None:
    """ISO date or datetime → aware UTC datetime (naive values are taken as UTC)."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(f"{flag} must be an ISO date or datetime, got {value!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def render_summary(summary: BackfillSummary) -> None:
    """The human summary on stderr."""
    s = summary
    if s.dry_run:
        err.print(
            f"[bold]dry run[/] {plural(s.selected, 'session')} (of {s.discovered} found, {s.active} active): "
            f"~{s.estimated_input_tokens:,} input + ~{s.estimated_output_tokens:,} output tokens, "
            f"~${s.estimated_cost_usd:.4f}"
        )
        for basis in s.estimate_basis:
            err.print(f"  estimate basis: {basis}", markup=False, highlight=False)
    else:
        err.print(
            f"[bold]backfill {s.run_key}[/]: {s.scored} scored, "
            + (f"{s.incomplete} incomplete in Langfuse, " if s.incomplete else "")
            + f"{s.skipped} skipped, "
            f"{s.unscored} unscored, {s.failed} failed, {s.not_started} not started "
            f"(of {s.selected} selected, {s.discovered} found, {s.active} active) — "
            f"{s.input_tokens:,} in / {s.output_tokens:,} out tokens, ${s.cost_usd:.4f}, "
            f"{s.wall_seconds:.1f}s"
        )
    for f in s.failures:
        err.print(f"  [red]{f.outcome}[/] {f.session_id}: {f.reason} (attempts {f.attempts})")
    for note in s.notes:
        err.print(f"  [yellow]note[/] {escape(note)}", highlight=False)
    if s.verified or s.verify_error:
        err.print(
            f"  read back from Langfuse: {s.verified} session(s)"
            + (f" — read-back failed: {s.verify_error}" if s.verify_error else "")
        )
    if s.incomplete:
        err.print(
            "  incomplete sessions are stored locally; run the same command again or "
            "`scorer scores push` to finish their Langfuse scores"
        )
    if s.escalated or s.calibration:
        err.print(
            f"  queued for review: {len(s.escalated)} escalated, {len(s.calibration)} calibration"
        )


@contextmanager
def discovery_status(console: Console, *, enabled: bool) -> Iterator[None]:
    """A live status line while Langfuse discovery runs (terminals only, never on a pipe).

    It stops when discovery reports it is done, before the scoring progress bar starts.
    """
    if not (enabled and console.is_terminal):
        yield
        return
    status = console.status("discovering sessions in Langfuse…")

    def show(p: DiscoveryProgress) -> None:
        if p.done:
            status.stop()
            return
        status.update(
            f"discovering sessions in Langfuse… {p.sessions} found, listed up to "
            f"{p.reached:%Y-%m-%d %H:%M} ({p.fraction:.0%} of the window), {p.requests} requests"
        )

    status.start()
    try:
        with watch_discovery(show):
            yield
    finally:
        status.stop()


@handle_errors
def backfill_command(
    start: Annotated[
        str | None, typer.Option("--from", help="Window start (ISO date/time, UTC).")
    ] = None,
    end: Annotated[
        str | None, typer.Option("--to", help="Window end, exclusive (default: now).")
    ] = None,
    source: Annotated[
        BackfillSource, typer.Option(help="Where to find sessions.")
    ] = BackfillSource.claude_code,
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", help="Langfuse: trace tag (repeatable, all must match)."),
    ] = None,
    environment: Annotated[str | None, typer.Option(help="Langfuse: environment.")] = None,
    user: Annotated[str | None, typer.Option(help="Langfuse: user id.")] = None,
    project: Annotated[
        str | None, typer.Option(help="Local: project folder name contains this.")
    ] = None,
    sample: Annotated[
        int | None,
        typer.Option(callback=non_negative, help="Score N sessions picked at random (--seed)."),
    ] = None,
    fraction: Annotated[
        float | None, typer.Option(help="Score this fraction (0..1] at random.")
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Seed for --sample/--fraction/--calibration-sample.")
    ] = 0,
    limit: Annotated[
        int | None, typer.Option(callback=non_negative, help="At most N sessions.")
    ] = None,
    concurrency: Annotated[
        int, typer.Option(min=1, help="Most judge requests in flight at once.")
    ] = 4,
    max_cost: Annotated[
        float | None,
        typer.Option(callback=non_negative, help="Stop starting sessions beyond this USD."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Estimate tokens and $; spend nothing.")
    ] = False,
    rescore: Annotated[
        bool, typer.Option("--rescore", help="Score again what is already scored.")
    ] = False,
    judge: Annotated[BackfillJudge, typer.Option(help="llm or heuristic.")] = BackfillJudge.llm,
    model: Annotated[str | None, typer.Option(help="Judge model (default: SCORER_MODEL).")] = None,
    effort: EffortOption = None,
    fallback_model: FallbackOption = None,
    projects_root: Annotated[
        Path | None,
        typer.Option(help="Claude Code projects root."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Summary as JSON on stdout.")] = False,
    shard: Annotated[
        str | None, typer.Option(help="Only shard i of N (i/N), by session-id hash.")
    ] = None,
    batch_api: Annotated[
        bool, typer.Option("--batch-api", help="Use Message Batches (-50%).")
    ] = False,
    escalate_below: Annotated[
        float | None,
        typer.Option(
            callback=unit_interval, help="Queue sessions with overall below this (0..1) for review."
        ),
    ] = None,
    calibration_sample: Annotated[
        int, typer.Option(callback=non_negative, help="Also queue N random scored sessions.")
    ] = 0,
    queue: Annotated[
        str, typer.Option(help="Langfuse annotation queue name.")
    ] = "session-scorer-review",
    idle_minutes: Annotated[
        float,
        typer.Option(callback=non_negative, help="Skip sessions active within this many minutes."),
    ] = 30.0,
    push: Annotated[
        bool | None, typer.Option(help="Write scores to Langfuse (default: for --source langfuse).")
    ] = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar on stderr.")] = True,
    max_attempts: Annotated[
        int,
        typer.Option(
            min=1, help="Retry a failed session (API outage...) on later runs up to N attempts."
        ),
    ] = 3,
    verify_sample: Annotated[
        int,
        typer.Option(min=0, help="Read back N pushed sessions from Langfuse (202 is not stored)."),
    ] = 5,
) -> None:
    """Score every finished session in a window; re-run the same command to resume."""
    window = parse_when(start, "--from"), parse_when(end, "--to")
    check_window(*window)
    opts = BackfillOptions(
        source=source.value,
        start=window[0],
        end=window[1],
        tags=tag or [],
        environment=environment,
        user=user,
        project=project,
        sample=sample,
        fraction=fraction,
        seed=seed,
        limit=limit,
        concurrency=concurrency,
        max_cost=max_cost,
        dry_run=dry_run,
        rescore=rescore,
        judge=judge.value,
        model=model,
        effort=effort_value(effort),
        fallback_model=fallback_model,
        projects_root=projects_root,
        shard=parse_shard(shard),
        batch_api=batch_api,
        escalate_below=escalate_below,
        calibration_sample=calibration_sample,
        queue=queue,
        idle_minutes=idle_minutes,
        push=push,
        max_attempts=max_attempts,
        verify_sample=verify_sample,
    )
    if batch_api and judge == BackfillJudge.heuristic:
        raise ConfigError("--batch-api needs --judge llm")
    show = progress and not as_json
    with discovery_status(err, enabled=show and source == BackfillSource.langfuse):
        summary = run_backfill(opts, progress=BackfillBar if show else None)
    if as_json:
        print_json(summary.model_dump(mode="json"))
    else:
        render_summary(summary)
    if (summary.failed or summary.incomplete) and not (summary.scored or summary.skipped):
        raise typer.Exit(EXIT_ERROR)


def main() -> None:
    """Console-script entry point for `score-backfill`."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command(help=backfill_command.__doc__)(backfill_command)
    app()


if __name__ == "__main__":
    main()
