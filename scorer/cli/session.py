"""`score-session ARG`: score one session (or `--dry-run` to see what would be sent)."""

from __future__ import annotations

import sys
import tempfile
from contextlib import ExitStack
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.markup import escape

from scorer._text import plural
from scorer.cli._common import (
    EXIT_ESCALATE,
    EXIT_UNSCORED,
    EffortOption,
    FallbackOption,
    FinalStateOption,
    PushTarget,
    SecondOpinionsOption,
    effort_value,
    err,
    fail,
    handle_errors,
    is_quiet,
    model_option,
    note,
    out,
    print_json,
)
from scorer.cli._validate import (
    in_range,
    positive,
    unit_interval,
    usage_error,
)
from scorer.settings import MAX_BUDGET, MAX_OVERLAP, MIN_BUDGET

if TYPE_CHECKING:  # imported where used, so `--help` starts fast
    from scorer.models import Scorecard, Session
    from scorer.prepare import Prepared
    from scorer.sinks.base import Published, ScoreSink
    from scorer.sources.base import SessionSource


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
    claude_code = "claude-code"
    heuristic = "heuristic"


def _show_plan(
    src: SessionSource,
    task: str | None,
    *,
    budget: int | None,
    overlap: int | None,
    render: bool,
    as_json: bool,
    estimate: dict | None = None,
    final_state: bool | None = None,
) -> None:
    """`--render` (the timeline) or `--dry-run` (summary, signals, chunk plan, estimate)."""
    from scorer.jobs.setup import run_settings
    from scorer.live.final_state import FinalStateOptions, add_final_state
    from scorer.prepare import PrepOptions

    settings = run_settings()
    session = src.load()
    _warn_input(session)
    if task and not session.task:
        session.task = task
    session = add_final_state(
        session, FinalStateOptions.from_settings(settings, enabled=final_state)
    )
    prepared = PrepOptions.from_settings(settings, budget=budget, overlap=overlap).run(session)
    if render:
        from scorer.prepare.render import render_timeline

        out.print(render_timeline(prepared.session), markup=False, highlight=False)
        return
    est = _estimate(prepared, **estimate) if estimate is not None else None
    why_none = None if est is not None else NO_ESTIMATE[_key_configured()]
    if as_json:
        print_json({**dry_run_payload(prepared), "estimate": est, "no_estimate": why_none})
        return
    from scorer.cli.views import chunk_plan_table, session_summary, signals_table

    out.print(session_summary(prepared), soft_wrap=False)
    out.print(signals_table(prepared.signals))
    out.print(chunk_plan_table(prepared))
    if est is not None:
        out.print(
            f"LLM judge estimate ({est['model']}, effort {est['effort']}): "
            f"~{est['input_tokens']:,} input + ~{est['output_tokens']:,} output tokens in "
            f"{plural(est['requests'], 'request')}, ~${est['cost_usd']:.4f}\n"
            f"  input basis: {est['input_basis']}\n  output basis: {est['output_basis']}",
            markup=False,
            highlight=False,
            soft_wrap=False,
        )
        if not _key_configured():
            out.print(f"  {NO_COUNT_TOKENS}", markup=False, highlight=False, soft_wrap=False)
    else:
        out.print(f"no cost estimate: {why_none}", markup=False, highlight=False, soft_wrap=False)


NO_ESTIMATE = {
    False: "ANTHROPIC_API_KEY is not set, so this would run the offline heuristic judge, "
    "which makes no API calls ($0); --judge llm --dry-run prices the LLM judge",
    True: "the heuristic judge makes no API calls ($0); --judge llm --dry-run prices the LLM judge",
}
"""Why a dry run shows no estimate (the judge that would run is the heuristic one), by
whether a key is set."""
NO_COUNT_TOKENS = (
    "ANTHROPIC_API_KEY is not set: the input was counted locally (cl100k), not by Claude's "
    "count_tokens"
)


def _estimate(prepared: Prepared, *, model: str | None, effort: str | None) -> dict:
    """What the LLM judge would spend on this session, and how that was estimated
    (Claude's `count_tokens` when a key is set: the judge then has a client)."""
    from dataclasses import asdict

    from scorer.jobs.estimate import estimate_prepared
    from scorer.jobs.setup import run_settings
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.client import make_client
    from scorer.judge.config import JudgeConfig
    from scorer.judge.token_counts import TokenCountCache

    settings = run_settings()
    config = JudgeConfig.from_settings(settings, model=model, effort=effort)
    client = make_client(settings) if settings.anthropic_configured else None
    judge = AnthropicJudge(client, config, verify_tokens=False)
    est = estimate_prepared(prepared, judge, counts=TokenCountCache(settings.token_counts_path))
    return {"model": config.model, "effort": config.effort, **asdict(est)}


def _key_configured() -> bool:
    from scorer.jobs.setup import run_settings

    return run_settings().anthropic_configured


def _warn_input(session: Session) -> None:
    """Lines of the input that were skipped or decoded with replacements, on stderr."""
    for warning in session.extra.get("warnings") or []:
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


def read_task(prompt: str | None, prompt_file: Path | None) -> str | None:
    """The task from `--prompt`, or `--prompt-file` (`-`: standard input).

    Raises:
        typer.Exit: Code 2 when both are given.
    """
    if prompt and prompt_file:
        raise usage_error("give either --prompt or --prompt-file, not both")
    if prompt_file is not None and str(prompt_file) == "-":
        return sys.stdin.read()
    if prompt_file:
        from scorer._fs import read_user_text

        return read_user_text(prompt_file, "--prompt-file")
    return prompt


def stdin_file(folder: str) -> str:
    """Standard input saved as `<folder>/stdin`, so the format is sniffed as for a file."""
    path = Path(folder) / "stdin"
    path.write_bytes(sys.stdin.buffer.read())
    return str(path)


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
        "warnings": s.extra.get("warnings") or [],
    }


def scorecard_payload(card: Scorecard) -> dict:
    """The one scorecard JSON shape (see `scorer schema`)."""
    return card.model_dump(mode="json")


@handle_errors
def score_session_command(
    arg: Annotated[
        str,
        typer.Argument(
            help="Transcript, pane capture or .cast path (- reads standard input); "
            "session id; or tmux session."
        ),
    ],
    source: Annotated[
        SourceName, typer.Option(help="Where to read the session.")
    ] = SourceName.auto,
    judge: Annotated[
        JudgeName,
        typer.Option(help="llm, claude-code (your Claude Code login), heuristic, or auto."),
    ] = JudgeName.auto,
    model: Annotated[
        str | None,
        typer.Option(callback=model_option, help="Judge model (default claude-sonnet-5-5)."),
    ] = None,
    effort: EffortOption = None,
    fallback_model: FallbackOption = None,
    second_opinions: SecondOpinionsOption = None,
    final_state: FinalStateOption = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show summary, signals, chunk plan.")
    ] = False,
    render: Annotated[bool, typer.Option("--render", help="Print the rendered timeline.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
    budget: Annotated[
        int | None,
        typer.Option(callback=in_range(MIN_BUDGET, MAX_BUDGET), help="Chunk token budget."),
    ] = None,
    overlap: Annotated[
        int | None,
        typer.Option(callback=in_range(0, MAX_OVERLAP), help="Events repeated between chunks."),
    ] = None,
    projects_root: Annotated[
        Path | None,
        typer.Option(help="Claude projects root for ids."),
    ] = None,
    prompt: Annotated[str | None, typer.Option(help="The task, when the source lacks it.")] = None,
    prompt_file: Annotated[
        Path | None, typer.Option(help="Read the task from a file (- reads standard input).")
    ] = None,
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
    lines: Annotated[
        int, typer.Option(callback=positive, help="tmux: scrollback lines to capture.")
    ] = 2000,
    tmux_socket: Annotated[
        str | None,
        typer.Option(help="tmux: server socket name (tmux -L), default server if unset."),
    ] = None,
    escalate_below: Annotated[
        float | None,
        typer.Option(
            callback=unit_interval, help="Exit 4 with an escalation when overall < N (0..1)."
        ),
    ] = None,
) -> None:
    """Score one coding-agent session on six dimensions plus a weighted overall."""
    if arg == "-" and prompt_file is not None and str(prompt_file) == "-":
        raise usage_error("standard input can feed the transcript or --prompt-file, not both")
    shown = "standard input" if arg == "-" else arg
    stdin_dir = None  # removed (with the copy of stdin) when the command returns
    if arg == "-":
        stdin_dir = tempfile.TemporaryDirectory(prefix="scorer-stdin-")
        arg = stdin_file(stdin_dir.name)
    from scorer.sources import SourceOptions, resolve

    task = read_task(prompt, prompt_file)
    src = resolve(
        arg,
        source=source.value,
        options=SourceOptions(
            projects_root=projects_root,
            task=task,
            enrich_local=enrich_local,
            repo=repo,
            since=since,
            base=base,
            lines=lines,
            tmux_socket=tmux_socket,
        ),
    )
    if render or dry_run:
        # The LLM estimate when the LLM judge would run: asked for, or `auto` with a key.
        wanted = dry_run and (
            judge in (JudgeName.llm, JudgeName.claude_code)
            or (judge == JudgeName.auto and _key_configured())
        )
        estimate = {"model": model, "effort": effort_value(effort)} if wanted else None
        _show_plan(
            src, task, budget=budget, overlap=overlap, render=render, as_json=as_json,
            estimate=estimate, final_state=final_state,
        )  # fmt: skip
        return
    from scorer.cli.progress import stage_spinner
    from scorer.cli.views import scorecard_view
    from scorer.jobs.score import score_session

    spinner = stage_spinner(err, f"scoring {shown}", enabled=not (as_json or is_quiet()))
    with ExitStack() as opened:  # the store is closed (its WAL folded back) on the way out
        sinks = _sinks(opened, store=store, push=push, target=target, src=src)
        with spinner as on_stage:
            prepared, card, published = score_session(
                src,
                judge=judge.value,
                model=model,
                task=task,
                budget=budget,
                overlap=overlap,
                sinks=sinks,
                effort=effort_value(effort),
                fallback_model=fallback_model,
                second_opinions=second_opinions,
                final_state=final_state,
                on_stage=on_stage,
            )
    session = prepared.session
    _warn_input(session)
    if session.extra.get("from_cache"):
        note(f"tmux session {arg!r} has ended; scored its last cached capture")
    if source == SourceName.tmux and repo is not None:
        from scorer.jobs.resume import save_evaluation

        if save_evaluation(repo, prepared, card) is None:
            note(f"{repo} is not a git repository; no evaluation saved in it")

    if as_json:
        print_json(scorecard_payload(card))
    else:
        out.print(scorecard_view(card, out.width), soft_wrap=False)
    _report_push(published)
    if card.status != "scored":
        raise fail(f"session not scored: {card.unscored_reason}", EXIT_UNSCORED)
    if escalate_below is not None and (card.overall or 0.0) < escalate_below:
        err.print(
            f"[bold yellow]ESCALATE:[/] overall {card.overall:.2f} < {escalate_below:.2f} "
            f"(recommendation: {card.recommendation})"
        )
        raise typer.Exit(EXIT_ESCALATE)


def _sinks(
    opened: ExitStack, *, store: bool, push: bool | None, target: PushTarget, src: SessionSource
) -> list[ScoreSink]:
    """Where the card goes: the local store (unless `--no-store`), then Langfuse with
    `--push` (by default when the session is read from Langfuse). One `publish` writes
    them all; a card whose push fails is kept in the store even with `--no-store`, so
    `scorer scores push` can send it later."""
    sinks: list[ScoreSink] = []
    if store:
        from scorer.sinks.store import ScoreStore

        sinks.append(opened.enter_context(ScoreStore(open_now=False)))  # opened to write
    from scorer.models import SourceKind

    if push if push is not None else src.kind == SourceKind.LANGFUSE:
        from scorer.sinks.langfuse import LangfuseSink

        kind: Literal["session", "trace"] = "trace" if target == PushTarget.trace else "session"
        sinks.append(LangfuseSink(target=kind))
    return sinks


def _report_push(published: Published) -> None:
    """On a failed push, exit 1 (the card is printed and kept locally); else its URLs."""
    if "langfuse" in published.errors:
        raise fail(
            f"Langfuse push failed ({published.problem()}); the scorecard is kept in the "
            "local store: run `scorer scores push` later"
        )
    for url in published.locations:
        if url.startswith("http"):
            err.print(f"Langfuse: {url}")


def main() -> None:
    """Console-script entry point for `score-session`."""
    from scorer.cli._conventions import entry_point

    entry_point(score_session_command, "score-session")
