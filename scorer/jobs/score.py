"""Score one session end to end: load → redact → render → chunk → judge → overall → store.

The stages themselves are pure functions elsewhere; this module only wires them and
decides which judge runs.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from scorer.judge.rubric import Rubric, default_rubric
from scorer.models import Chunk, Scorecard, Session
from scorer.prepare.chunk import chunk_events
from scorer.prepare.redact import RedactionReport, redact_session
from scorer.prepare.render import RenderedEvent, render_events, render_header
from scorer.prepare.signals import Signals, compute_signals
from scorer.prepare.tokens import TokenCounter
from scorer.settings import get_settings
from scorer.sources.base import SessionSource

JudgeChoice = Literal["auto", "llm", "heuristic"]
RECHUNK_ATTEMPTS = 2
RECHUNK_SHRINK = 0.8
MIN_BUDGET = 8_000


@dataclass
class Prepared:
    """A session made ready for a judge: redacted, rendered, measured and chunked."""

    session: Session
    """The redacted session (never the raw one)."""
    header: str
    events: list[RenderedEvent]
    signals: Signals
    chunks: list[Chunk]
    redactions: RedactionReport
    budget: int
    overlap: int
    notes: list[str] = field(default_factory=list)


def prepare(
    session: Session,
    *,
    budget: int | None = None,
    overlap: int | None = None,
    safety_factor: float | None = None,
) -> Prepared:
    """Redact first, so nothing downstream (judge, store, output) ever sees a secret."""
    settings = get_settings()
    budget = budget or settings.chunk_budget
    overlap = settings.chunk_overlap if overlap is None else overlap
    counter = TokenCounter(safety_factor or settings.token_safety_factor)
    clean, report = redact_session(session)
    signals = compute_signals(clean)
    header = render_header(clean) + "\n\n" + signals_block(signals)
    events = render_events(clean)
    chunks = chunk_events(header, events, budget=budget, overlap=overlap, counter=counter)
    return Prepared(clean, header, events, signals, chunks, report, budget, overlap)


def signals_block(s: Signals) -> str:
    """The objective signals as a short text block the judge reads with the task."""

    def refs(items: list[int], n: int = 12) -> str:
        return " ".join(f"#{i}" for i in items[:n]) + (" …" if len(items) > n else "")

    tools = ", ".join(f"{k}×{v}" for k, v in s.calls_per_tool.items()) or "none"
    lines = [
        "## Objective signals (computed from the events, not from claims)",
        f"- tool calls: {s.tool_calls} ({tools})",
        f"- tool errors: {s.tool_errors}"
        + (f" ({s.tool_error_rate:.0%}) at {refs(s.error_events)}" if s.tool_errors else ""),
        f"- repeated identical failing calls: {len(s.repeated_failures)}; "
        f"blind retries: {len(s.retries)} {refs(s.retries)}",
        f"- test runs: {len(s.test_runs)}"
        + (
            f"; last: {s.last_test_run.framework} ok={s.last_test_run.ok} "
            f"passed={s.last_test_run.passed} failed={s.last_test_run.failed} "
            f"at #{s.last_test_run.result_event}"
            if s.last_test_run
            else ""
        ),
        f"- files written/edited: {len(s.files_written)}",
        f"- compactions: {len(s.compactions)}; interruptions: {len(s.interruptions)}; "
        f"API errors: {len(s.api_errors)}; subagents: {s.subagents}",
        f"- final message claims success: {s.claims_success}",
    ]
    return "\n".join(lines)


def choose_judge(choice: JudgeChoice) -> Literal["llm", "heuristic"]:
    """`auto` means the LLM judge when a key is set, else the heuristic (announced)."""
    if choice != "auto":
        return choice
    if get_settings().anthropic_api_key or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return "llm"
    print(
        "note: ANTHROPIC_API_KEY is not set: using the offline heuristic judge "
        "(scores are stored as judge=heuristic).",
        file=sys.stderr,
    )
    return "heuristic"


def judge_prepared(
    prepared: Prepared,
    kind: Literal["llm", "heuristic"],
    *,
    model: str | None = None,
    rubric: Rubric | None = None,
    client=None,
) -> Scorecard:
    """Run the chosen judge on a prepared session; input problems go into `meta`."""
    card = _run_judge(prepared, kind, model=model, rubric=rubric, client=client)
    warnings = prepared.session.extra.get("warnings")
    if warnings:  # lines of the input that were skipped or decoded with replacements
        card.meta.setdefault("input_warnings", list(warnings))
    return card


def _run_judge(
    prepared: Prepared,
    kind: Literal["llm", "heuristic"],
    *,
    model: str | None,
    rubric: Rubric | None,
    client: Any,
) -> Scorecard:
    rubric = rubric or default_rubric()
    session = prepared.session
    if kind == "heuristic":
        from scorer.judge.heuristic import HeuristicJudge

        return HeuristicJudge(rubric=rubric).judge(session, prepared.signals, prepared.chunks)
    from scorer.judge.anthropic import AnthropicJudge, ContextWindowExceeded

    judge = AnthropicJudge(client, model=model or get_settings().model, rubric=rubric)
    for _ in range(RECHUNK_ATTEMPTS):
        try:
            return judge.judge(
                prepared.header,
                prepared.chunks,
                session_id=session.session_id,
                source=session.source.value,
            )
        except ContextWindowExceeded as exc:
            rechunk(prepared, exc)
    return judge.judge(
        prepared.header, prepared.chunks, session_id=session.session_id, source=session.source.value
    )


def rechunk(prepared: Prepared, exc) -> None:
    """Shrink the budget so the offending request fits (Claude counts more than tiktoken)."""
    ratio = exc.limit / exc.tokens if exc.tokens else RECHUNK_SHRINK
    floor = min(MIN_BUDGET, prepared.budget // 2)  # never grow; never shrink to nothing
    prepared.budget = max(floor, int(prepared.budget * min(ratio, 1.0) * RECHUNK_SHRINK))
    counter = TokenCounter(get_settings().token_safety_factor)
    prepared.chunks = chunk_events(
        prepared.header,
        prepared.events,
        budget=prepared.budget,
        overlap=prepared.overlap,
        counter=counter,
    )
    prepared.notes.append(f"re-chunked to a {prepared.budget:,}-token budget: {exc}")


def judge_and_store(
    prepared: Prepared,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    store: bool = True,
    client=None,
) -> Scorecard:
    """Judge a prepared session, stamp provenance, and save it to the local store."""
    card = judge_prepared(prepared, choose_judge(judge), model=model, client=client)
    card.meta.setdefault("redactions", prepared.redactions.total)
    if prepared.session.origin:
        card.meta.setdefault("origin", prepared.session.origin)
    if store:
        from scorer.sinks.store import ScoreStore

        ScoreStore().save(card)
    return card


def score_session(
    source: SessionSource,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    budget: int | None = None,
    overlap: int | None = None,
    store: bool = True,
    client=None,
) -> tuple[Prepared, Scorecard]:
    """Load, prepare, judge and (unless `store=False`) save one session."""
    prepared = prepare(source.load(), budget=budget, overlap=overlap)
    card = judge_and_store(prepared, judge=judge, model=model, store=store, client=client)
    return prepared, card
