"""The backfill progress bar: a rich bar on stderr with ETA and running cost.

The run loop (`jobs.backfill.run_backfill`) only knows the `Tracker` protocol; this is the
CLI's implementation, passed as `progress=BackfillBar`.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from scorer.jobs.run_state import SessionResult


def cost_progress() -> Progress:
    """A rich progress on stderr: description, bar, done/total, ETA, running cost."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[cost]}"),
        console=Console(stderr=True),
        transient=False,
    )


class CostBar:
    """A rich bar on stderr: sessions done of total, ETA and running USD; silent when
    `enabled` is False (not a terminal), so a pipe gets no control characters."""

    def __init__(self, total: int, label: str, *, enabled: bool = True) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self._progress: Any = None

    def __enter__(self) -> CostBar:
        if self.enabled and self.total:
            self._progress = cost_progress()
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=self.total, cost="$0.0000")
        return self

    def advance(self, total_cost: float) -> None:
        """One more session finished; `total_cost` is the USD spent so far."""
        if self._progress is not None:
            self._progress.update(self._task, advance=1, cost=f"${total_cost:.4f}")

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()


class BackfillBar:
    """A `Tracker` drawing one bar: sessions done of total, ETA, spent (or estimated) USD."""

    def __init__(self, total: int, dry_run: bool) -> None:
        self.total, self.dry_run = total, dry_run
        self.cost = 0.0
        self._progress: Any = None

    def __enter__(self) -> BackfillBar:
        self._progress = cost_progress()
        self._progress.start()
        label = "estimating" if self.dry_run else "scoring"
        self._task = self._progress.add_task(label, total=self.total, cost="$0.0000")
        return self

    def advance(self, result: SessionResult) -> None:
        """Count one finished session and add its cost."""
        self.cost += result.cost_usd
        prefix = "est. " if self.dry_run else ""
        self._progress.update(self._task, advance=1, cost=f"{prefix}${self.cost:.4f}")

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
