"""`score-session ARG`: score one session (or `--dry-run` to see what would be sent)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from scorer.cli._common import (
    EXIT_ESCALATE,
    EXIT_UNSCORED,
    PushTarget,
    err,
    fail,
    handle_errors,
    one_line,
    out,
    print_json,
)
from scorer.cli.views import chunk_plan_table, scorecard_view, session_summary, signals_table
from scorer.errors import ConfigError
from scorer.jobs.score import Prepared, judge_and_store, prepare
from scorer.models import Scorecard
from scorer.sources.base import SessionSource

if TYPE_CHECKING:
    from scorer.sinks.langfuse import PushResult


class SourceName(StrEnum):
    auto = "auto"
    claude_code = "claude-code"
    stream_json = "stream-json"
    terminal = "terminal"
    asciinema = "asciinema"
    langfuse = "langfuse"
    tmux = "tmux"


class JudgeName(StrEnum):
    auto = "auto"
    llm = "llm"
    heuristic = "heuristic"


def build_source(
    arg: str,
    source: SourceName,
    *,
    projects_root: Path | None,
    task: str | None,
    enrich_local: bool = False,
    repo: Path | None = None,
    since: datetime | None = None,
    base: str | None = None,
    lines: int = 2000,
    tmux_socket: str | None = None,
) -> SessionSource:
    """Pick the source for ARG: local files/ids first, Langfuse and tmux when asked."""
    from scorer.settings import get_settings
    from scorer.sources import resolve

    if source == SourceName.tmux:
        from scorer.sources.tmux import TmuxSource

        return TmuxSource(
            arg,
            repo=repo,
            since=since,
            base=base,
            prompt=task,
            lines=lines,
            socket_name=tmux_socket,
        )
    if source == SourceName.langfuse or (
        source == SourceName.auto
        and get_settings().langfuse_configured
        and not Path(arg).exists()
        and not _found_locally(arg, projects_root)
    ):
        from scorer.sources.langfuse import LangfuseSource

        return LangfuseSource(arg, enrich_local=enrich_local, projects_root=projects_root)
    forced = None if source == SourceName.auto else source.value
    return resolve(arg, source=forced, projects_root=projects_root, task=task)


def _found_locally(arg: str, projects_root: Path | None) -> bool:
    from scorer.errors import SourceError
    from scorer.sources import resolve

    try:
        resolve(arg, projects_root=projects_root)
    except SourceError:
        return False
    return True


def read_task(prompt: str | None, prompt_file: Path | None) -> str | None:
    if prompt and prompt_file:
        raise ConfigError("give either --prompt or --prompt-file, not both")
    if prompt_file:
        return prompt_file.read_text(encoding="utf-8")
    return prompt


def dry_run_payload(prepared: Prepared) -> dict:
    s = prepared.session
    return {
        "session_id": s.session_id,
        "source": s.source.value,
        "origin": s.origin,
        "n_events": s.n_events,
        "started_at": s.started_at,
        "ended_at": s.ended_at,
        "models": s.models,
        "usage": s.usage.model_dump(),
        "signals": prepared.signals.model_dump(mode="json"),
        "chunks": [c.tokens for c in prepared.chunks],
        "chunk_budget": prepared.budget,
        "redactions": prepared.redactions.model_dump(),
    }


def scorecard_payload(card: Scorecard) -> dict:
    data = card.model_dump(mode="json")
    data["scores"] = {name: (s.label or s.value) for name, s in card.scores.items()}
    data["details"] = {name: s.model_dump(mode="json") for name, s in card.scores.items()}
    data["usage"] = card.usage.model_dump()
    return data


@handle_errors
def score_session_command(
    arg: Annotated[
        str,
        typer.Argument(help="Transcript, pane capture or .cast path; session id; or tmux session."),
    ],
    source: Annotated[
        SourceName, typer.Option(help="Where to read the session.")
    ] = SourceName.auto,
    judge: Annotated[JudgeName, typer.Option(help="llm, heuristic, or auto.")] = JudgeName.auto,
    model: Annotated[
        str | None, typer.Option(help="Judge model (default claude-sonnet-5-5).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show summary, signals, chunk plan.")
    ] = False,
    render: Annotated[bool, typer.Option("--render", help="Print the rendered timeline.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    budget: Annotated[int | None, typer.Option(help="Chunk token budget.")] = None,
    overlap: Annotated[int | None, typer.Option(help="Events repeated between chunks.")] = None,
    projects_root: Annotated[
        Path | None,
        typer.Option(envvar="SCORER_CLAUDE_PROJECTS", help="Claude projects root for ids."),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="The task, when the source lacks it.")] = None,
    prompt_file: Annotated[Path | None, typer.Option(help="Read the task from a file.")] = None,
    store: Annotated[bool, typer.Option(help="Save to the local score store.")] = True,
    push: Annotated[
        bool | None, typer.Option(help="Write scores to Langfuse (default: when read from it).")
    ] = None,
    target: Annotated[
        PushTarget, typer.Option(help="Langfuse score target: session or trace.")
    ] = PushTarget.session,
    enrich_local: Annotated[bool, typer.Option(help="Langfuse: use the local JSONL too.")] = False,
    repo: Annotated[
        Path | None, typer.Option(help="tmux: the git repo the agent works on.")
    ] = None,
    since: Annotated[datetime | None, typer.Option(help="tmux: git progress since (ISO).")] = None,
    base: Annotated[str | None, typer.Option(help="tmux: git progress since this commit.")] = None,
    lines: Annotated[int, typer.Option(help="tmux: scrollback lines to capture.")] = 2000,
    tmux_socket: Annotated[
        str | None,
        typer.Option(help="tmux: server socket name (tmux -L), default server if unset."),
    ] = None,
    escalate_below: Annotated[
        float | None, typer.Option(help="Exit 4 with an escalation when overall < N (0..1).")
    ] = None,
) -> None:
    """Score one coding-agent session on six dimensions plus a weighted overall."""
    task = read_task(prompt, prompt_file)
    src = build_source(
        arg,
        source,
        projects_root=projects_root,
        task=task,
        enrich_local=enrich_local,
        repo=repo,
        since=since,
        base=base,
        lines=lines,
        tmux_socket=tmux_socket,
    )
    session = src.load()
    if task and not session.task:
        session.task = task
    prepared = prepare(session, budget=budget, overlap=overlap)
    if render:
        from scorer.prepare.render import render_timeline

        out.print(render_timeline(prepared.session), markup=False, highlight=False)
        return
    if dry_run:
        if as_json:
            print_json(dry_run_payload(prepared))
            return
        out.print(session_summary(prepared))
        out.print(signals_table(prepared.signals))
        out.print(chunk_plan_table(prepared))
        return

    card = judge_and_store(prepared, judge=judge.value, model=model, store=store)
    if session.extra.get("from_cache"):
        err.print(f"note: tmux session {arg!r} has ended; scored its last cached capture")
    if source == SourceName.tmux and repo is not None:
        from scorer.jobs.resume import save_evaluation

        if save_evaluation(repo, prepared, card) is None:
            err.print(f"note: {repo} is not a git repository; no evaluation saved in it")

    if as_json:
        print_json(scorecard_payload(card))
    else:
        out.print(scorecard_view(card))
    should_push = push if push is not None else session.source.value == "langfuse"
    if should_push and card.status == "scored":
        _push(card, target, stored=store)
    if card.status != "scored":
        raise fail(f"session not scored: {card.unscored_reason}", EXIT_UNSCORED)
    if escalate_below is not None and (card.overall or 0.0) < escalate_below:
        err.print(
            f"[bold yellow]ESCALATE:[/] overall {card.overall:.2f} < {escalate_below:.2f} "
            f"(recommendation: {card.recommendation})"
        )
        raise typer.Exit(EXIT_ESCALATE)


def _push(card: Scorecard, target: PushTarget, *, stored: bool = True) -> None:
    """Push to Langfuse; on failure keep the judgement in the store, record why, exit 1.

    The scorecard is printed before this runs, and with `--no-store` it is saved anyway
    when the push fails, so `scorer scores push` can send it later.
    """
    from scorer.errors import CredentialsError, SinkError
    from scorer.sinks.langfuse import push_scorecard
    from scorer.sinks.store import ScoreStore

    kind: Literal["session", "trace"] = "trace" if target == PushTarget.trace else "session"
    try:
        result = push_scorecard(card, target=kind)
        problem = None if result.ok else push_problem(result)
    except (SinkError, CredentialsError) as exc:
        result, problem = None, one_line(exc)
    with ScoreStore() as db:
        if problem is None:
            db.mark_pushed(card.session_id, card.judge, card.model, card.rubric_version)
        else:
            if not stored:
                db.save(card)
            db.mark_pushed(
                card.session_id, card.judge, card.model, card.rubric_version, error=problem
            )
    if problem is not None:
        raise fail(
            f"Langfuse push failed ({problem}); the scorecard is kept in the local store: "
            "run `scorer scores push` later"
        )
    if result is not None and result.url:
        err.print(f"Langfuse: {result.url}")


def push_problem(result: PushResult) -> str:
    """One line naming the scores Langfuse rejected (a partial push is not a push)."""
    bits = [f"{name}: {msg}" for name, msg in result.rejected.items()]
    bits += result.unattributed_errors
    return "rejected " + "; ".join(bits)


def main() -> None:
    """Console-script entry point for `score-session`."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    app.command()(score_session_command)
    app()
