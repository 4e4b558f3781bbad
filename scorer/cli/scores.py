"""`scorer scores ...`: browse the local score store."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from scorer.cli._common import fail, handle_errors, out, print_json
from scorer.cli.views import scorecard_view
from scorer.errors import SourceError
from scorer.sinks.store import RunSummary, ScoreStore

app = typer.Typer(
    help="Browse stored scores (the local SQLite store under $SCORER_HOME).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def runs_table(runs: list[RunSummary]) -> Table:
    """One row per stored run (pure: builds the table, never prints)."""
    table = Table(title=f"{len(runs)} stored run(s)", header_style="bold")
    for col in (
        "session",
        "judge",
        "model",
        "overall",
        "goal",
        "recommendation",
        "cost",
        "created",
    ):
        table.add_column(col, justify="right" if col in ("overall", "cost") else "left")
    for r in runs:
        overall = f"{r.overall:.2f}" if r.overall is not None else f"[red]{r.status}[/]"
        table.add_row(
            r.session_id,
            r.judge,
            r.model or "-",
            overall,
            r.goal or "-",
            r.recommendation or "-",
            f"${r.cost_usd:.4f}",
            r.created_at.strftime("%Y-%m-%d %H:%M"),
        )
    return table


@app.command("list")
@handle_errors
def list_command(
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many runs.")] = 50,
    session: Annotated[str | None, typer.Option(help="Only this session id.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only this judge kind (llm/heuristic).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List stored runs, newest first."""
    with ScoreStore() as store:
        runs = store.list_runs(limit=limit, session_id=session, judge=judge)
    if as_json:
        print_json([r.model_dump(mode="json") for r in runs])
    else:
        out.print(runs_table(runs))


def resolve_session(store: ScoreStore, session: str) -> str:
    """An exact stored session id, or the only one starting with `session`.

    Raises:
        SourceError: No stored session matches, or the prefix is ambiguous.
    """
    matches = store.find_sessions(session)
    if session in matches:
        return session
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SourceError(f"no stored scores for session {session!r} (see `scorer scores list`)")
    shown = ", ".join(matches[:5]) + (" …" if len(matches) > 5 else "")
    raise SourceError(f"session prefix {session!r} is ambiguous: {shown}")


@app.command("show")
@handle_errors
def show_command(
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    judge: Annotated[str | None, typer.Option(help="Only this judge kind (llm/heuristic).")] = None,
    model: Annotated[str | None, typer.Option(help="Only runs by this model.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show the latest stored scorecard of a session."""
    with ScoreStore() as store:
        session_id = resolve_session(store, session)
        card = store.latest(session_id, judge=judge, model=model)
    if card is None:
        raise fail(f"no stored run of {session_id} for judge={judge or '*'} model={model or '*'}")
    if as_json:
        print_json(card.model_dump(mode="json"))
    else:
        out.print(scorecard_view(card))
