"""`scorer configs …`: keep Langfuse score configs in step with `score_configs/`."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from scorer.cli._common import handle_errors, out, print_json

if TYPE_CHECKING:
    from scorer.sinks.langfuse import SyncReport

app = typer.Typer(
    help="Manage the Langfuse score configs (score configs as code).", no_args_is_help=True
)


def _render(report: SyncReport) -> None:
    """One line per config, wrapped between words at the terminal's width."""
    prefix = "would " if report.dry_run else ""
    lines = [f"Langfuse score configs at {report.host}"]
    lines += [f"  [green]{prefix}create[/]  {name}" for name in report.created]
    lines += [
        f"  [yellow]{prefix}update[/]  {name} ({', '.join(fields)} drifted)"
        for name, fields in report.updated.items()
    ]
    lines += [f"  [yellow]{prefix}unarchive[/] {name}" for name in report.unarchived]
    lines += [f"  [dim]ok[/]      {name}" for name in report.unchanged]
    lines += [f"  [red]conflict[/] {name}: {why}" for name, why in report.conflicts.items()]
    for name in report.extra:
        done = " (archived)" if name in report.archived else ""
        lines.append(f"  [dim]extra[/]   {name}: not in the repo{done}")
    for line in lines:
        out.print(line, soft_wrap=False, highlight=False)


@app.command()
@handle_errors
def sync(
    archive_extra: bool = typer.Option(
        False, "--archive-extra", help="Archive server configs the repo does not define."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only show what would change."),
    json_out: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Create or update the seven score configs in Langfuse by name (idempotent)."""
    from scorer.sinks.langfuse import sync_configs  # the Langfuse SDK: 0.5 s to import

    report = sync_configs(archive_extra=archive_extra, dry_run=dry_run)
    if json_out:
        print_json(report.model_dump())
    else:
        _render(report)
    if report.conflicts:
        raise typer.Exit(1)
