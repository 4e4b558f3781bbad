"""`scorer scores ...`: browse the local score store and push it to Langfuse."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from scorer._text import plural
from scorer.cli._common import (
    PushTarget,
    err,
    fail,
    handle_errors,
    one_line,
    out,
    print_json,
)
from scorer.cli._filters import (
    AllRuns,
    CollectionName,
    CollectionOpt,
    Judge,
    Model,
    Project,
    RubricVersion,
    Search,
    Since,
    Source,
    Until,
    run_filter,
)
from scorer.cli._validate import usage_error
from scorer.cli.tables import runs_table
from scorer.cli.views import scorecard_view
from scorer.errors import SourceError
from scorer.models import Scorecard
from scorer.sinks.store import RunFilter, ScoreStore

app = typer.Typer(
    help="Browse stored scores (the local SQLite store under $SCORER_HOME); push them to Langfuse.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)


@app.command("list")
@handle_errors
def list_command(
    limit: Annotated[int, typer.Option(min=1, help="Show at most this many runs.")] = 50,
    session: Annotated[str | None, typer.Option(help="Only this session id.")] = None,
    judge: Annotated[str | None, typer.Option(help="Only this judge kind (llm/heuristic).")] = None,
    project: Project = None,
    since: Since = None,
    until: Until = None,
    source: Source = None,
    search: Search = None,
    collection: CollectionOpt = CollectionName.production,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List stored runs, newest first, each led by its session's title."""
    where = run_filter(
        project=project, since=since, until=until, judge=judge, source=source, search=search,
        collection=collection, all_runs=True,
    ).model_copy(update={"session_id": session})  # fmt: skip
    with ScoreStore() as store:
        runs = store.list_runs(limit=limit, where=where)
        matching = store.count_runs(where)
        stored = matching or store.count_runs()
        path = store.path
        known = store.session_ids() if runs and not as_json else []
    if as_json:
        print_json([r.model_dump(mode="json") for r in runs])
        return
    if not runs:
        err.print(_nothing_listed(stored, path), highlight=False)
        return
    out.print(runs_table(runs, out, title=_list_title(len(runs), matching), among=known))


def _list_title(shown: int, matching: int) -> str:
    """`95 runs`, or `50 of 95 runs (newest first; --limit N for more)`."""
    if shown >= matching:
        return plural(matching, "run")
    return f"{shown} of {plural(matching, 'run')} (newest first; --limit N for more)"


def _nothing_listed(stored: int, path: Path) -> str:
    """What to do next when the list is empty: score something, or loosen the filters."""
    if stored:
        return (
            f"no runs match these filters ({plural(stored, 'run')} stored, calibration runs "
            "included; --collection all lists both)"
        )
    return (
        f"no scored sessions yet in {path}\n"
        "  score one:       score-session PATH  (a transcript; the repo has "
        "examples/demo-session.jsonl)\n"
        "  score them all:  score-backfill  (every finished session under ~/.claude/projects)"
    )


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
    """Show the latest stored scorecard of a session (its production run when it has one)."""
    with ScoreStore() as store:
        session_id = resolve_session(store, session)
        card = store.latest(
            session_id, judge=judge, model=model, collection="production"
        ) or store.latest(session_id, judge=judge, model=model)
    if card is None:
        raise fail(f"no stored run of {session_id} for judge={judge or '*'} model={model or '*'}")
    if as_json:
        print_json(card.model_dump(mode="json"))
    else:
        out.print(scorecard_view(card, out.width), soft_wrap=False)


def push_candidates(
    cards: list[Scorecard],
    push_errors: dict[tuple[str, str, str | None, str], str | None],
    *,
    session: str | None = None,
    everything: bool = False,
) -> list[Scorecard]:
    """Which unpushed scorecards to send (pure).

    Unscored cards are never sent. By default only cards meant for Langfuse are: ones
    judged from a Langfuse session, or whose earlier push failed (an error is recorded).
    `everything` adds local sessions never pushed; `session` narrows to one session id.
    """
    chosen = []
    for card in cards:
        if card.status != "scored":
            continue
        if session is not None and card.session_id != session:
            continue
        attempted = push_errors.get(_identity(card)) is not None
        if everything or session is not None or attempted or card.source == "langfuse":
            chosen.append(card)
    return chosen


def _identity(card: Scorecard) -> tuple[str, str, str | None, str]:
    return (card.session_id, card.judge, card.model, card.rubric_version)


def _push_errors(store: ScoreStore) -> dict[tuple[str, str, str | None, str], str | None]:
    """Why each unpushed production run's last push failed (None: never tried)."""
    runs = store.list_runs(limit=1_000_000, where=RunFilter())
    return {
        (r.session_id, r.judge, r.model, r.rubric_version): r.push_error
        for r in runs
        if r.pushed_at is None
    }


class Format(StrEnum):
    csv = "csv"
    jsonl = "jsonl"
    parquet = "parquet"


@app.command("export")
@handle_errors
def export_command(
    fmt: Annotated[Format, typer.Option("--format", "-f", help="csv, jsonl or parquet.")],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write here (default: stdout).")
    ] = None,
    project: Project = None,
    since: Since = None,
    until: Until = None,
    judge: Judge = None,
    model: Model = None,
    rubric_version: RubricVersion = None,
    source: Source = None,
    search: Search = None,
    collection: CollectionOpt = CollectionName.production,
    all_runs: AllRuns = False,
) -> None:
    """Export stored runs: CSV/Parquet with one column per score and session field; JSONL
    with one scorecard JSON (see `scorer schema`) per line. Nothing is sent anywhere."""
    from scorer.results.export import export_text, write_export

    where = run_filter(
        project=project,
        since=since,
        until=until,
        judge=judge,
        model=model,
        rubric_version=rubric_version,
        all_runs=all_runs,
        source=source,
        search=search,
        collection=collection,
    )
    if output is None and fmt == Format.parquet:
        raise usage_error("parquet is binary: give --output FILE")
    with ScoreStore() as store:
        runs = store.runs(where)
    if output is None:
        sys.stdout.write(export_text(runs, fmt.value))
        return
    write_export(runs, fmt.value, output)
    err.print(f"wrote {plural(len(runs), 'run')} to {output}", highlight=False)


@app.command("push")
@handle_errors
def push_command(
    session: Annotated[
        str | None, typer.Option(help="Only this session id (or a unique prefix).")
    ] = None,
    everything: Annotated[
        bool,
        typer.Option("--all", help="Also local sessions never meant for Langfuse."),
    ] = False,
    target: Annotated[
        PushTarget, typer.Option(help="Langfuse score target: session or trace.")
    ] = PushTarget.session,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would be pushed; send nothing.")
    ] = False,
) -> None:
    """Send stored scorecards that are not in Langfuse yet (e.g. after an outage).

    Each success is marked pushed; a failure is recorded on the run (it stays unpushed
    and is retried next time). Exits 1 when any push failed.
    """
    with ScoreStore() as store:
        session_id = resolve_session(store, session) if session else None
        cards = push_candidates(
            store.unpushed(), _push_errors(store), session=session_id, everything=everything
        )
        if not cards:
            err.print("nothing to push")
            return
        if dry_run:
            for card in cards:
                out.print(f"would push {_label(card)}", highlight=False)
            err.print(
                f"{plural(len(cards), 'scorecard')} would be pushed (--dry-run: nothing sent)"
            )
            return
        failed = _push_all(store, cards, target.value)
    pushed = len(cards) - failed
    err.print(f"pushed {pushed} of {plural(len(cards), 'scorecard')} to Langfuse")
    if failed:
        raise fail(
            f"{plural(failed, 'push')} failed and stay queued: run `scorer scores push` again"
        )


def _label(card: Scorecard) -> str:
    return f"{card.session_id} ({card.judge}{'/' + card.model if card.model else ''})"


def _push_all(store: ScoreStore, cards: list[Scorecard], target: str) -> int:
    """Publish each card to Langfuse (`sinks.base.publish`); returns how many failed.

    Missing or rejected credentials stop the loop: every other card would fail the same way.
    """
    from scorer.jobs.ledger import record_push
    from scorer.sinks.base import publish
    from scorer.sinks.langfuse import LangfuseSink

    sink = LangfuseSink(target=target)  # type: ignore[arg-type]
    failed = 0
    for i, card in enumerate(cards):
        done = publish(card, [sink], store=store)
        if done.fatal is not None:
            for rest in cards[i + 1 :]:
                store.mark_pushed(*_identity(rest), error=one_line(done.fatal))
            raise done.fatal
        if done.ok:
            record_push(store.path, *_identity(card))  # a backfill won't push it again
            out.print(f"pushed {_label(card)}", highlight=False)
        else:
            failed += 1
            err.print(f"[red]failed[/] {_label(card)}: {done.problem()}", highlight=False)
    return failed


@app.command("verify")
@handle_errors
def verify_command(
    since: Annotated[
        str | None, typer.Option(help="Only scorecards created since (ISO date/time, UTC).")
    ] = None,
    target: Annotated[
        PushTarget, typer.Option(help="Where the scores were pushed: session or trace.")
    ] = PushTarget.session,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
) -> None:
    """Read every pushed scorecard back from Langfuse (a 202 is not "stored").

    Scores Langfuse accepted but does not hold (e.g. dropped against an archived score
    config) are reported with the likely cause and marked unpushed, so `scorer scores
    push` sends them again (after fixing the config). Exits 1 when any is missing.
    """
    from scorer.cli.backfill import parse_when
    from scorer.sinks.langfuse.verify import verify_cards

    when = parse_when(since, "--since")
    with ScoreStore() as store:
        pushed = {
            (r.session_id, r.judge, r.model, r.rubric_version)
            for r in store.list_runs(limit=1_000_000, since=when, where=RunFilter())
            if r.pushed_at is not None and r.status == "scored"
        }
        cards = [c for c in store.scorecards(collection="production") if _identity(c) in pushed]
        waiting = sum(1 for error in _push_errors(store).values() if error)
        if waiting:
            err.print(f"{plural(waiting, 'scorecard')} wait for `scorer scores push` (not checked)")
        if not cards:
            err.print("nothing pushed to verify")
            return
        report = verify_cards(cards, target=target.value)
        for sid, reason in report.reasons.items():
            card = next(c for c in cards if c.session_id == sid)
            store.mark_pushed(*_identity(card), error=reason, lost=True)
    if as_json:
        print_json(
            {"checked": report.checked, "missing": report.missing, "reasons": report.reasons}
        )
    else:
        for reason in report.reasons.values():
            err.print(f"[red]missing[/] {reason}", highlight=False)
        err.print(
            f"verified {plural(report.checked, 'scorecard')}: {len(report.missing)} incomplete"
        )
    if report.missing:
        raise fail(
            f"{plural(len(report.missing), 'scorecard')} not fully in Langfuse: fix the cause, then "
            "run `scorer scores push`"
        )
