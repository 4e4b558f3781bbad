"""Progress displays on stderr: the backfill bar and `score-session`'s stage spinner.

The run loop (`jobs.backfill.run_backfill`) only knows the `Tracker` protocol; `BackfillBar`
is the CLI's implementation, passed as `progress=BackfillBar`. The spinner listens to
`scorer.stages` reports. Both draw only on a terminal (rich also honours
`TTY_COMPATIBLE=1` / `FORCE_COLOR=1` to force one), never on a pipe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from scorer.jobs.account_limits import PacingStatus
from scorer.jobs.run_state import SessionResult
from scorer.stages import Stage, StageListener

STAGE_TEXT = {
    "fetch": "fetching the session",
    "prepare": "redacting, rendering and chunking",
    "judge": "judging",
    "chunk": "chunk notes",
    "final": "final scoring call",
    "store": "saving to the local store",
}


def stage_text(stage: Stage) -> str:
    """`chunk notes 2/5`, `final scoring call`, ... for the spinner."""
    text = STAGE_TEXT.get(stage.name, stage.name)
    return text if stage.total is None else f"{text} {stage.done}/{stage.total}"


def spinner_text(label: str, stage: Stage) -> str:
    """The stage first, then what is scored: a narrow terminal cuts the end of the line,
    and a long path must not push the stage out of sight."""
    return f"{stage_text(stage)}… {label}"


@contextmanager
def stage_spinner(console: Console, label: str, *, enabled: bool) -> Iterator[StageListener | None]:
    """A spinner showing the scoring stage; yields the listener for `score_session`.

    Yields None (draws nothing) when disabled or when `console` is not a terminal.
    """
    if not (enabled and console.is_terminal):
        yield None
        return
    status = console.status(f"{label}…", spinner="dots")

    def show(stage: Stage) -> None:
        status.update(spinner_text(label, stage))

    status.start()
    try:
        yield show
    finally:
        status.stop()


def cost_progress(*extra: ProgressColumn, remaining: ProgressColumn | None = None) -> Progress:
    """A rich progress on stderr: description, bar, done/total, ETA, running cost (+ extra)."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        remaining or TimeRemainingColumn(),
        TextColumn("{task.fields[cost]}"),
        *extra,
        console=Console(stderr=True),
        transient=False,
    )


class PacingColumn(ProgressColumn):
    """The account limit pacing the run, `input tokens 92% of 450k/min`, polled from the
    run's limiter at every refresh (empty until the first reply names the limits)."""

    def __init__(self, status: Callable[[], PacingStatus | None]) -> None:
        super().__init__()
        self.status = status

    def render(self, task: Task) -> Text:
        found = self.status()
        return Text(found.text() if found else "", style="cyan")


class PacedRemaining(TimeRemainingColumn):
    """The ETA: the sessions left at the pace of the binding limit when one binds (the
    run's average charge per session), else rich's estimate from the sessions' rate."""

    def __init__(self, status: Callable[[], PacingStatus | None]) -> None:
        super().__init__()
        self.status = status

    def render(self, task: Task) -> Text:
        found = self.status()
        left = (task.total or 0) - task.completed
        eta = found.eta(int(task.completed), int(left)) if found else None
        if eta is None:
            return super().render(task)
        minutes, seconds = divmod(int(eta), 60)
        hours, minutes = divmod(minutes, 60)
        return Text(f"{hours}:{minutes:02d}:{seconds:02d}", style="progress.remaining")


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
        self.not_started = 0
        self._progress: Any = None
        self._pacing: Callable[[], PacingStatus | None] | None = None

    def pacing(self) -> PacingStatus | None:
        """Where the account's limits stand (None: not paced, or nothing learned yet)."""
        return self._pacing() if self._pacing is not None else None

    def watch_pacing(self, status: Callable[[], PacingStatus | None]) -> None:
        """Show the binding limit, and an ETA at its pace (`Tracker`)."""
        self._pacing = status

    def __enter__(self) -> BackfillBar:
        self._progress = cost_progress(
            TextColumn("[yellow]{task.fields[skipped]}"),
            PacingColumn(self.pacing),
            remaining=PacedRemaining(self.pacing),
        )
        self._progress.start()
        label = "estimating" if self.dry_run else "scoring"
        self._task = self._progress.add_task(label, total=self.total, cost="$0.0000", skipped="")
        return self

    def advance(self, result: SessionResult) -> None:
        """Count one finished session and add its cost; a session left unstarted (cost
        cap, Ctrl-C) is counted apart, so the bar never shows it as done."""
        if result.outcome == "not_started":
            self.not_started += 1
            why = "cost cap" if result.reason == "cost cap reached" else "stopped"
            self._progress.update(self._task, skipped=f"{self.not_started} not started ({why})")
            return
        self.cost += result.cost_usd
        prefix = "est. " if self.dry_run else ""
        self._progress.update(self._task, advance=1, cost=f"{prefix}${self.cost:.4f}")

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()
