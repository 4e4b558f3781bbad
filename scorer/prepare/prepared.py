"""`Prepared`: a session made ready for a judge (the contract between prepare and judge).

`prepare()` redacts first, so nothing downstream (judge, store, output) ever sees a secret,
then renders, computes the objective signals and chunks by token budget. `Prepared` is
frozen: a re-chunk (`rechunk`) returns a new one with a note saying why.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Protocol

from scorer._gc import without_gc
from scorer.models import Chunk, Session
from scorer.prepare.chunk import chunk_events
from scorer.prepare.fence import one_line
from scorer.prepare.redact import RedactionReport, redact_session
from scorer.prepare.render import RenderedEvent, render_events, render_header
from scorer.prepare.signals import Signals, compute_signals
from scorer.prepare.tokens import TokenCounter
from scorer.settings import get_settings

RECHUNK_ATTEMPTS = 2
RECHUNK_SHRINK = 0.8
MIN_BUDGET = 8_000


class TooLong(Protocol):
    """What a re-chunk needs to know of a context-window overflow."""

    tokens: int | None
    limit: int


@dataclass(frozen=True)
class Prepared:
    """A session made ready for a judge: redacted, rendered, measured and chunked."""

    session: Session
    """The redacted session (never the raw one)."""
    header: str
    """Session header plus the objective-signals block, sent with every request."""
    events: tuple[RenderedEvent, ...]
    signals: Signals
    chunks: tuple[Chunk, ...]
    redactions: RedactionReport
    budget: int
    """Token budget per chunk."""
    overlap: int
    notes: tuple[str, ...] = ()
    """What happened while judging (a re-chunk); copied to the scorecard's `meta["notes"]`."""


@without_gc
def prepare(
    session: Session,
    *,
    budget: int | None = None,
    overlap: int | None = None,
    safety_factor: float | None = None,
) -> Prepared:
    """Redact, render, compute signals and chunk one session.

    Args:
        session: The session as its source loaded it (secrets and all).
        budget: Tokens per chunk (default `SCORER_CHUNK_BUDGET`).
        overlap: Events repeated between chunks (default `SCORER_CHUNK_OVERLAP`).
        safety_factor: Token-estimate multiplier (default `SCORER_TOKEN_SAFETY_FACTOR`).
    """
    settings = get_settings()
    budget = budget or settings.chunk_budget
    overlap = settings.chunk_overlap if overlap is None else overlap
    counter = TokenCounter(safety_factor or settings.token_safety_factor)
    clean, report = redact_session(session)
    signals = compute_signals(clean)
    header = render_header(clean) + "\n\n" + signals_block(signals)
    events = render_events(clean)
    chunks = chunk_events(header, events, budget=budget, overlap=overlap, counter=counter)
    return Prepared(clean, header, tuple(events), signals, tuple(chunks), report, budget, overlap)


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
        f"- final message claims success: {s.claims_success}"
        + (f"; hedges: {', '.join(s.final_caveats)}" if s.final_caveats else ""),
        *verification_lines(s),
    ]
    return "\n".join(lines)


def verification_lines(s: Signals) -> list[str]:
    """The final-verification and requirement-coverage signals, one bullet each."""
    fv = s.final_verification
    edit = f"#{fv.last_edit_event}" if fv.last_edit_event else "none"
    if fv.status == "missing":
        check = f"- final verification: none after the last edit ({edit})"
    else:
        check = (
            f"- final verification: {fv.status} ({fv.kind}) at #{fv.call_event}→"
            f"#{fv.result_event}, after the last edit ({edit}): {fv.command}"
        )
    if not s.requirements:
        return [check, "- task requirements: none listed"]
    counts = Counter(r.status for r in s.requirements)
    lines = [
        check,
        f"- task requirements: {len(s.requirements)} listed; {counts['covered']} touched by an "
        f"action, {counts['uncovered']} untouched, {counts['unchecked']} name nothing to match",
    ]
    lines += [one_line(f"  - untouched: {r.text} (key terms: {', '.join(r.terms)})") for r in
              s.uncovered_requirements[:10]]  # fmt: skip
    return lines


def rechunk(prepared: Prepared, exc: TooLong) -> Prepared:
    """Shrink the budget so the offending request fits (Claude counts more than tiktoken).

    Returns:
        A new `Prepared` with smaller chunks and a note naming the new budget.
    """
    ratio = exc.limit / exc.tokens if exc.tokens else RECHUNK_SHRINK
    floor = min(MIN_BUDGET, prepared.budget // 2)  # never grow; never shrink to nothing
    budget = max(floor, int(prepared.budget * min(ratio, 1.0) * RECHUNK_SHRINK))
    counter = TokenCounter(get_settings().token_safety_factor)
    chunks = chunk_events(
        prepared.header,
        list(prepared.events),
        budget=budget,
        overlap=prepared.overlap,
        counter=counter,
    )
    note = f"re-chunked to a {budget:,}-token budget: {exc}"
    return replace(prepared, budget=budget, chunks=tuple(chunks), notes=(*prepared.notes, note))
