"""What one hook job did (`Outcome`), apart from the job so its helpers can name it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from scorer.models import Scorecard

OutcomeState = Literal[
    "scored", "unscored", "skipped", "capped", "failed", "refused", "busy", "unchanged",
    "superseded", "queued", "submitted",
]  # fmt: skip


@dataclass
class Outcome:
    """What one job did."""

    state: OutcomeState
    reason: str = ""
    session_id: str | None = None
    card: Scorecard | None = None
    pushed: list[str] = field(default_factory=list)
    """Where the card went besides the store (Langfuse URLs)."""
    push_error: str | None = None
    deferred: bool = False
    """The store could not take it: it waits in the retry folder for the next hook run."""
