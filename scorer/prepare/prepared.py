"""`Prepared`: a session made ready for a judge (the contract between prepare and judge).

`prepare()` redacts first, so nothing downstream (judge, store, output) ever sees a secret,
then renders, computes the objective signals and chunks by token budget. `Prepared` is
frozen: a re-chunk (`rechunk`) returns a new one with a note saying why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from scorer._gc import without_gc
from scorer.models import Chunk, Session
from scorer.prepare.chunk import chunk_events
from scorer.prepare.own_output import leave_out_own_output
from scorer.prepare.redact import RedactionReport, redact_session
from scorer.prepare.render import RenderedEvent, render_events, render_header
from scorer.prepare.signals import Signals, compute_signals
from scorer.prepare.signals_block import signals_block
from scorer.prepare.tokens import TokenCounter
from scorer.settings import DEFAULT_CHUNK_BUDGET, DEFAULT_CHUNK_OVERLAP, DEFAULT_TOKEN_SAFETY

if TYPE_CHECKING:
    from scorer.settings import Settings

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
    safety_factor: float = DEFAULT_TOKEN_SAFETY
    """The multiplier on tiktoken counts the chunks were planned with (`rechunk` keeps it)."""
    notes: tuple[str, ...] = ()
    """What happened while judging (a re-chunk); copied to the scorecard's `meta["notes"]`."""


@dataclass(frozen=True)
class PrepOptions:
    """How a run chunks its sessions, decided once at the edge (CLI, job entry points)."""

    budget: int = DEFAULT_CHUNK_BUDGET
    """Tokens per chunk (`SCORER_CHUNK_BUDGET`, `--budget`)."""
    overlap: int = DEFAULT_CHUNK_OVERLAP
    """Events repeated between chunks (`SCORER_CHUNK_OVERLAP`, `--overlap`)."""
    safety_factor: float = DEFAULT_TOKEN_SAFETY
    """Multiplier on tiktoken counts (`SCORER_TOKEN_SAFETY`)."""

    @classmethod
    def from_settings(
        cls, settings: Settings, *, budget: int | None = None, overlap: int | None = None
    ) -> PrepOptions:
        """The settings' chunking, with a command's `--budget` / `--overlap` over them."""
        return cls(
            budget=budget or settings.chunk_budget,
            overlap=settings.chunk_overlap if overlap is None else overlap,
            safety_factor=settings.token_safety_factor,
        )

    def run(self, session: Session) -> Prepared:
        """`prepare(session)` with these options."""
        return prepare(
            session, budget=self.budget, overlap=self.overlap, safety_factor=self.safety_factor
        )


@without_gc
def prepare(
    session: Session,
    *,
    budget: int = DEFAULT_CHUNK_BUDGET,
    overlap: int = DEFAULT_CHUNK_OVERLAP,
    safety_factor: float = DEFAULT_TOKEN_SAFETY,
) -> Prepared:
    """Redact, render, compute signals and chunk one session (pure: reads no settings).

    Our own commands' output (`/session-scorer:score` and its echo) is left out first,
    with a one-line marker (`prepare.own_output`): the judge never reads a scorecard.

    Args:
        session: The session as its source loaded it (secrets and all).
        budget: Tokens per chunk (the CLI and jobs pass `SCORER_CHUNK_BUDGET`).
        overlap: Events repeated between chunks (`SCORER_CHUNK_OVERLAP`).
        safety_factor: Token-estimate multiplier (`SCORER_TOKEN_SAFETY`).
    """
    counter = TokenCounter(safety_factor)
    clean, report = redact_session(leave_out_own_output(session))
    signals = compute_signals(clean)
    header = render_header(clean) + "\n\n" + signals_block(signals)
    events = render_events(clean)
    chunks = chunk_events(header, events, budget=budget, overlap=overlap, counter=counter)
    return Prepared(
        clean, header, tuple(events), signals, tuple(chunks), report, budget, overlap,
        safety_factor,
    )  # fmt: skip


def rechunk(prepared: Prepared, exc: TooLong) -> Prepared:
    """Shrink the budget so the offending request fits (Claude counts more than tiktoken).

    Returns:
        A new `Prepared` with smaller chunks and a note naming the new budget.
    """
    ratio = exc.limit / exc.tokens if exc.tokens else RECHUNK_SHRINK
    # Shrink from the largest chunk, not the budget: a session smaller than its budget
    # (one chunk) would otherwise be cut to the same single chunk again.
    base = min(prepared.budget, max((c.tokens for c in prepared.chunks), default=prepared.budget))
    floor = min(MIN_BUDGET, prepared.budget // 2)  # never grow; never shrink to nothing
    budget = max(floor, int(base * min(ratio, 1.0) * RECHUNK_SHRINK))
    counter = TokenCounter(prepared.safety_factor)  # what `prepare()` was given
    chunks = chunk_events(
        prepared.header,
        list(prepared.events),
        budget=budget,
        overlap=prepared.overlap,
        counter=counter,
    )
    note = f"re-chunked to a {budget:,}-token budget: {exc}"
    return replace(prepared, budget=budget, chunks=tuple(chunks), notes=(*prepared.notes, note))


def rebudget(prepared: Prepared, budget: int, note: str, *, safety: float) -> Prepared:
    """The same session chunked under a smaller `budget` (an account's rate limit), with
    `note` saying why; unchanged when its budget is already that small.

    Args:
        safety: The token-estimate multiplier the chunker counts with.
    """
    if prepared.budget <= budget:
        return prepared
    events = list(prepared.events)
    chunks = chunk_events(
        prepared.header,
        events,
        budget=budget,
        overlap=prepared.overlap,
        counter=TokenCounter(safety),
    )
    return replace(prepared, budget=budget, chunks=tuple(chunks), notes=(*prepared.notes, note))
