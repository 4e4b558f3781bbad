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
from rich.text import Text

from scorer._text import plural
from scorer.cli._common import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_NOT_STARTED,
    EXIT_OK,
    EXIT_PARTIAL,
    EffortOption,
    FallbackOption,
    FinalStateOption,
    SecondOpinionsOption,
    effort_value,
    err,
    handle_errors,
    is_quiet,
    model_option,
    note,
    print_json,
)
from scorer.cli._validate import check_window, non_negative, unit_interval, usage_error
from scorer.cli.progress import BackfillBar
from scorer.cli.tables import pack, results_table
from scorer.errors import ConfigError, RunInterrupted
from scorer.jobs.backfill import BackfillOptions, BackfillSummary, run_backfill
from scorer.jobs.discovery import DiscoveryProgress, watch_discovery
from scorer.jobs.outcomes import left_unfinished
from scorer.jobs.selection import parse_shard


class BackfillSource(StrEnum):
    claude_code = "claude-code"
    langfuse = "langfuse"


class BackfillJudge(StrEnum):
    auto = "auto"
    llm = "llm"
    claude_code = "claude-code"
    heuristic = "heuristic"


CLAUDE_CODE_CONCURRENCY = 2
"""Most sessions judged at once through `claude -p`: each call is a process, and the
user's plan limits are shared with their own work."""


def parse_when(value: str | None, flag: str) -> datetime | None:
    """ISO date or datetime → aware UTC datetime (naive values are taken as UTC).

    Raises:
        typer.Exit: Code 2 (a usage error, like any other bad option value).
    """
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise usage_error(f"{flag} must be an ISO date or datetime, got {value!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def check_combination(opts: BackfillOptions) -> None:
    """Options that do not go together are usage errors (exit 2), found before any work."""
    langfuse_only = bool(opts.tags or opts.environment or opts.user)
    rules = [
        (
            opts.source == "claude-code" and langfuse_only,
            "--tag, --environment and --user only apply to --source langfuse",
        ),
        (
            opts.source == "langfuse" and bool(opts.project),
            "--project only applies to --source claude-code",
        ),
        (
            opts.source == "langfuse" and opts.start is None,
            "--from is required with --source langfuse",
        ),
        (
            opts.sample is not None and opts.fraction is not None,
            "give either --sample or --fraction, not both",
        ),
        (
            opts.fraction is not None and not 0 < opts.fraction <= 1,
            f"--fraction must be in (0, 1], got {opts.fraction}",
        ),
        (
            opts.batch_api and (opts.judge != "llm" or opts.backend != "api"),
            "--batch-api needs --judge llm (the Messages API with ANTHROPIC_API_KEY)",
        ),
    ]
    for broken, message in rules:
        if broken:
            raise usage_error(message)


def not_started_text(summary: BackfillSummary, cost_cap: float | None) -> str:
    """`14 not started (cost cap)`; the cap is the only reason a finished run leaves any."""
    n = summary.not_started
    return f"{n} not started" + (" (cost cap)" if n and cost_cap is not None else "")


def _stored_ids() -> list[str]:
    """The store's session ids, which a shown id prefix must be unique among ([] when
    the store cannot be read: the prefixes are then unique among the run's sessions)."""
    from scorer.errors import SinkError
    from scorer.sinks.store import ScoreStore

    try:
        with ScoreStore(open_now=False) as store:
            return store.session_ids()
    except SinkError:
        return []


def _summary_phrases(s: BackfillSummary, cost_cap: float | None) -> list[str]:
    """The run's one-line summary, in phrases a narrow terminal may break between."""
    phrases = [f"backfill {s.run_key}:", f"{s.scored} scored,"]
    if s.incomplete:
        phrases.append(f"{s.incomplete} incomplete in Langfuse,")
    phrases += [f"{s.skipped} skipped,", f"{s.unscored} unscored,", f"{s.failed} failed,"]
    busy = [f"{s.busy} being scored by another process"] if s.busy else []
    return [
        *phrases,
        not_started_text(s, cost_cap) + ("," if busy else ""),
        *busy,
        f"(of {s.selected} selected,",
        f"{s.discovered} found,",
        f"{s.active} active) —",
        f"{s.input_tokens:,} in / {s.output_tokens:,} out tokens,",
        f"${s.cost_usd:.4f},",
        f"{s.wall_seconds:.1f}s",
    ]


def _dry_run_phrases(s: BackfillSummary) -> list[str]:
    to_judge = s.selected - s.skipped - s.unscored - s.failed - s.not_started - s.busy
    final = f"{s.unscored + s.failed} final or out of attempts"
    busy = [f"{s.busy} being scored by another process;"] if s.busy else []
    return [
        "dry run",
        f"{plural(to_judge, 'session')} to judge",
        f"(of {s.selected} selected:",
        f"{s.skipped} already done,",
        final + ("," if busy else ";"),
        *busy,
        f"{s.discovered} found,",
        f"{s.active} active):",
        f"~{s.estimated_input_tokens:,} input +",
        f"~{s.estimated_output_tokens:,} output tokens,",
        f"~${s.estimated_cost_usd:.4f}",
    ]


def _phrases(phrases: list[str], width: int) -> Text:
    """The phrases on lines of at most `width`, the first (what this is) in bold."""
    text = Text(pack(phrases, width, sep=" "))
    text.stylize("bold", 0, len(phrases[0].rstrip(":")))
    return text


def render_summary(summary: BackfillSummary, cost_cap: float | None = None) -> None:
    """The human summary on stderr."""
    s = summary
    if s.sessions:
        err.print(results_table(s.sessions, err.width, among=_stored_ids()))
    if s.dry_run:
        err.print(_phrases(_dry_run_phrases(s), err.width))
        if s.estimate_note:
            err.print(f"  {s.estimate_note}", markup=False, highlight=False)
        for basis in s.estimate_basis:
            err.print(f"  estimate basis: {basis}", markup=False, highlight=False)
        for line in s.forecast.lines() if s.forecast else []:
            err.print(line, markup=False, highlight=False)
    else:
        err.print(_phrases(_summary_phrases(s, cost_cap), err.width))
    for f in s.failures:
        err.print(
            f"  [red]{f.outcome}[/] {f.session_id}: {f.reason} (attempts {f.attempts})",
            soft_wrap=False,
        )
    if s.failed and not s.dry_run:
        err.print(
            f"  {plural(s.failed, 'failed session')}: run the same command again to retry "
            "them (each up to --max-attempts tries over all runs)",
            soft_wrap=False,
        )
    for text in s.notes:
        note(text)
    if s.verified or s.verify_error:
        err.print(
            f"  read back from Langfuse: {plural(s.verified, 'session')}"
            + (f" — read-back failed: {s.verify_error}" if s.verify_error else ""),
            soft_wrap=False,
        )
    if s.incomplete:
        err.print(
            "  incomplete sessions are stored locally; run the same command again or "
            "`scorer scores push` to finish their Langfuse scores",
            soft_wrap=False,
        )
    if s.escalated or s.calibration:
        err.print(
            f"  queued for review: {len(s.escalated)} escalated, {len(s.calibration)} calibration",
            soft_wrap=False,
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
            f"{p.reached:%Y-%m-%d %H:%M} ({p.fraction:.0%} of the window), {plural(p.requests, 'request')}"
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
    judge: Annotated[
        BackfillJudge,
        typer.Option(
            help="llm, claude-code (your Claude Code login), heuristic, or auto (llm when "
            "ANTHROPIC_API_KEY is set)."
        ),
    ] = BackfillJudge.auto,
    model: Annotated[
        str | None,
        typer.Option(callback=model_option, help="Judge model (default: SCORER_MODEL)."),
    ] = None,
    effort: EffortOption = None,
    fallback_model: FallbackOption = None,
    second_opinions: SecondOpinionsOption = None,
    final_state: FinalStateOption = None,
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
    from scorer.jobs.score import choose_judge, judge_kind

    window = parse_when(start, "--from"), parse_when(end, "--to")
    check_window(*window)
    try:
        shard_range = parse_shard(shard)
    except ConfigError as exc:
        raise usage_error(str(exc)) from None
    route = choose_judge(judge.value)
    if route == "claude-code" and concurrency > CLAUDE_CODE_CONCURRENCY:
        note(f"--judge claude-code judges at most {CLAUDE_CODE_CONCURRENCY} sessions at once")
        concurrency = CLAUDE_CODE_CONCURRENCY
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
        judge=judge_kind(route),
        backend="claude-code" if route == "claude-code" else "api",
        model=model,
        effort=effort_value(effort),
        fallback_model=fallback_model,
        second_opinions=second_opinions,
        final_state=final_state,
        projects_root=projects_root,
        shard=shard_range,
        batch_api=batch_api,
        escalate_below=escalate_below,
        calibration_sample=calibration_sample,
        queue=queue,
        idle_minutes=idle_minutes,
        push=push,
        max_attempts=max_attempts,
        verify_sample=verify_sample,
    )
    check_combination(opts)
    show = progress and not (as_json or is_quiet())
    with discovery_status(err, enabled=show and source == BackfillSource.langfuse):
        try:
            summary = run_backfill(opts, progress=BackfillBar if show else None)
        except RunInterrupted as stopped:
            raise interrupted(stopped.summary, as_json=as_json) from None
    if as_json:
        print_json(summary.model_dump(mode="json"))
    else:
        render_summary(summary, max_cost)
    raise typer.Exit(exit_status(summary, dry_run=dry_run, max_cost=max_cost))


def interrupted_line(s: BackfillSummary) -> str:
    """What an interrupted run stored and spent, and how to go on, in one line."""
    stored = s.scored + s.incomplete + s.unscored
    done = f", {s.skipped} already done" if s.skipped else ""
    return (
        f"interrupted: {stored} of {plural(s.selected, 'session')} stored this run{done}, "
        f"{s.not_started} left; ${s.cost_usd:.4f} spent ({s.input_tokens:,} in / "
        f"{s.output_tokens:,} out tokens); run the same command again to resume"
    )


def interrupted(summary: BackfillSummary, *, as_json: bool) -> typer.Exit:
    """Ctrl-C: the one-line account (and the JSON summary with `--json`), exit 130."""
    if as_json:
        print_json(summary.model_dump(mode="json"))
    err.print(interrupted_line(summary), highlight=False)
    return typer.Exit(EXIT_INTERRUPTED)


def exit_status(summary: BackfillSummary, *, dry_run: bool, max_cost: float | None) -> int:
    """The exit code cron sees: 1 when nothing could be done, 6 when sessions were left
    failed or incomplete (the rest is done), 5 when the cost cap left sessions unstarted."""
    if (summary.failed or summary.incomplete) and not (summary.scored or summary.skipped):
        return EXIT_ERROR  # nothing at all could be done
    if dry_run:
        return EXIT_OK
    if summary.not_started:
        why = (
            f"the cost cap (--max-cost {max_cost:g}) was reached; raise it and " if max_cost else ""
        )
        err.print(
            f"[yellow]{plural(summary.not_started, 'session')} not started:[/] "
            f"{why}run the same command to go on",
            highlight=False,
        )
    if left_unfinished(summary):
        return EXIT_PARTIAL
    return EXIT_NOT_STARTED if summary.not_started else EXIT_OK


def main() -> None:
    """Console-script entry point for `score-backfill`."""
    from scorer.cli._conventions import entry_point

    entry_point(backfill_command, "score-backfill")


if __name__ == "__main__":
    main()
