"""What every command has: `-h`, `--version`, `-q`/`-v`, an example and the exit codes.

Typer builds the click commands; `ScorerGroup` (the `scorer` umbrella) and `ScorerCommand`
(the single-command entry points) add the shared options to themselves and to every
command below them, and fill each command's epilog with its example and the exit-code
table. Shell completion is typer's (`--install-completion`, `--show-completion`).

In a terminal narrower than `NARROW_HELP` columns, help is click's plain layout (option,
then its help wrapped beside or under it) instead of typer's six-column rich tables,
which cut cells (`--install-compl…`, `--sample/--fract…`) when they share 80 columns.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
import textwrap
from typing import Annotated, Any

import typer
from rich.text import Text
from typer._click.formatting import HelpFormatter
from typer.core import TyperCommand, TyperGroup

from scorer._gc import freeze_at_exit
from scorer.cli._common import EXIT_CODES, set_verbosity

CONTEXT = {"help_option_names": ["-h", "--help"]}
NARROW_HELP = 120
"""Below this terminal width help uses the plain layout (the rich one cuts cells)."""

EXAMPLES = {
    "scorer": "scorer session examples/demo-session.jsonl · scorer scores list · scorer view",
    "score-session": "score-session examples/demo-session.jsonl --judge heuristic\n"
    "cat run.jsonl | score-session - --prompt-file task.md --json",
    "session": "scorer session examples/demo-session.jsonl --dry-run",
    "score-backfill": "score-backfill --from 2026-11-01 --to 2026-11-22 --max-cost 20",
    "backfill": "scorer backfill --source langfuse --from 2026-11-01 --dry-run",
    "score-calibrate": "score-calibrate --ground-truth terminal-bench --judge heuristic",
    "calibrate": "scorer calibrate --ground-truth labels.csv --format html",
    "scores": "scorer scores list --limit 20",
    "list": "scorer scores list --limit 20 --judge llm",
    "show": "scorer scores show 0d3e5f1a --json",
    "push": "scorer scores push --dry-run",
    "verify": "scorer scores verify --since 2026-11-01",
    "export": "scorer scores export --format csv -o scores.csv --since 2026-11-01",
    "configs": "scorer configs sync --dry-run",
    "sync": "scorer configs sync --dry-run",
    "resume-prompt": "scorer resume-prompt ~/src/project",
    "assess": "scorer assess ~/src/project --json",
    "view": "scorer view -o scores.html --since 2026-11-01",
    "trends": "scorer trends --by week --project spotter",
    "schema": "scorer schema > scorecard.schema.json",
    "hook": "scorer hook --transcript run.jsonl --session-id $ID --wait\n"
    "scorer hook --now --session-id $CLAUDE_SESSION_ID",
    "scorer hook": 'echo \'{"session_id": "…", "transcript_path": "…"}\' | scorer hook',
}


def _show_version(value: bool) -> None:
    if value:
        from scorer._version import package_version

        typer.echo(f"session-scorer {package_version()}")
        raise typer.Exit()


def _quiet(ctx: typer.Context, value: bool) -> bool:
    ctx.meta["scorer_quiet"] = value or ctx.meta.get("scorer_quiet", False)
    return value


def _verbose(ctx: typer.Context, value: int) -> int:
    quiet = ctx.meta.get("scorer_quiet", False)
    level = max(value, ctx.meta.get("scorer_verbose", 0))
    ctx.meta["scorer_verbose"] = level
    set_verbosity(quiet=quiet and not level, verbose=level)
    return value


def _shared_options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            expose_value=False,
            help="Print the version and exit.",
        ),
    ] = False,
    quiet: Annotated[
        bool,
        typer.Option(
            "-q",
            "--quiet",
            callback=_quiet,
            is_eager=True,
            expose_value=False,
            help="Only errors and warnings on stderr: no notes, no progress.",
        ),
    ] = False,
    verbose: Annotated[
        int,
        typer.Option(
            "-v",
            "--verbose",
            count=True,
            callback=_verbose,
            expose_value=False,
            help="More on stderr: -v debug logs, -vv also the HTTP libraries'.",
        ),
    ] = 0,
) -> None:
    """A signature typer turns into the shared click options (never called)."""


def _params(*, version: bool) -> list[Any]:
    holder = typer.Typer(add_completion=False)
    holder.command()(_shared_options)
    params = list(typer.main.get_command(holder).params)
    return [p for p in params if version or p.name != "version"]


def _epilog(name: str | None, existing: str | None) -> str:
    example = EXAMPLES.get(name or "")
    parts = [existing] if existing else []
    if example:
        parts.append("[bold]Example:[/]\n" + example)
    parts.append(EXIT_CODES)
    return "\n\n".join(parts)


def _plain(markup: str) -> str:
    """The epilog without rich markup; a paragraph of several lines (the examples) is
    marked for click to keep its lines as they are (`\\b`), the rest is wrapped."""
    paragraphs = Text.from_markup(markup).plain.split("\n\n")
    return "\n\n".join(f"\b\n{p}" if "\n" in p else p for p in paragraphs)


def _wrap(text: str, width: int) -> list[str]:
    """Lines of at most `width`, broken between words only (never at a hyphen, so
    `--calibration-sample` and `claude-sonnet-4-6` stay whole)."""
    return textwrap.wrap(
        " ".join(text.split()), max(width, 20), break_on_hyphens=False, break_long_words=False
    )


class _PlainHelp(HelpFormatter):
    """Click's two-column help, wrapping between words only."""

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        rows = list(rows)
        column = min(max((len(term) for term, _ in rows), default=0), col_max) + col_spacing
        margin = " " * (self.current_indent + column)
        for term, text in rows:
            self.write(" " * self.current_indent + term)
            lines = _wrap(text, self.width - self.current_indent - column) if text else []
            if lines and len(term) <= column - col_spacing:
                self.write(" " * (column - len(term)) + lines.pop(0))
            self.write("\n" + "".join(f"{margin}{line}\n" for line in lines))

    def write_text(self, text: str) -> None:
        indent = " " * self.current_indent
        for i, paragraph in enumerate(text.split("\n\n")):
            kept = paragraph.startswith("\b\n")
            lines = (
                paragraph[2:].splitlines() if kept else _wrap(paragraph, self.width - len(indent))
            )
            self.write("\n" * bool(i) + "".join(f"{indent}{line}\n" for line in lines))


def _format_help(cmd: Any, ctx: Any, formatter: Any) -> None:
    """Typer's rich help on a wide terminal; click's plain layout on a narrow one."""
    rich_help, columns = type(cmd).format_help, shutil.get_terminal_size().columns
    if columns >= NARROW_HELP:
        return rich_help(cmd, ctx, formatter)
    plain = _PlainHelp(width=max(columns - 2, 40), max_width=columns)
    mode, epilog = cmd.rich_markup_mode, cmd.epilog
    cmd.rich_markup_mode, cmd.epilog = None, _plain(epilog or "")
    try:
        rich_help(cmd, ctx, plain)
    finally:
        cmd.rich_markup_mode, cmd.epilog = mode, epilog
    formatter.write(plain.getvalue())
    return None


def adopt(cmd: Any, *, root: bool) -> None:
    """Add the shared options, the epilog and the width-aware help to `cmd` and every
    command below it; a group given no command prints its help."""
    cmd.params.extend(_params(version=root))
    cmd.epilog = _epilog(cmd.name, cmd.epilog)
    cmd.format_help = lambda ctx, formatter: _format_help(cmd, ctx, formatter)
    if hasattr(cmd, "commands"):
        _help_when_bare(cmd)
    for sub in getattr(cmd, "commands", {}).values():
        adopt(sub, root=False)


def _help_when_bare(group: Any) -> None:
    """`scorer` or `scorer scores` alone: the group's help on stderr, exit 2 (click's
    `no_args_is_help`, which typer's error printer drops, so nothing was shown)."""
    parse = group.parse_args

    def parse_args(ctx: Any, args: list[str]) -> list[str]:
        if not args and group.no_args_is_help and not ctx.resilient_parsing:
            with contextlib.redirect_stdout(sys.stderr):  # the rich layout prints itself
                text = ctx.get_help()
            if text:  # the plain layout returns it
                typer.echo(text, err=True)
            ctx.exit(2)
        return parse(ctx, args)

    group.parse_args = parse_args


class ScorerGroup(TyperGroup):
    """The `scorer` umbrella: conventions for itself and every sub-command."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["name"] = kwargs.get("name") or "scorer"
        super().__init__(**kwargs)
        adopt(self, root=True)


class ScorerCommand(TyperCommand):
    """A single-command entry point (`score-session`, ...): the same conventions."""

    def __init__(self, name: str | None, **kwargs: Any) -> None:
        super().__init__(name, **kwargs)
        adopt(self, root=True)


def entry_point(command: Any, name: str) -> None:
    """Run `command` as the console script `name` (help, version, completion, -q/-v)."""
    app = typer.Typer(context_settings=CONTEXT, pretty_exceptions_enable=False)
    app.command(name, cls=ScorerCommand, help=command.__doc__)(command)
    freeze_at_exit()
    app(prog_name=name)
