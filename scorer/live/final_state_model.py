"""The final state's contracts: how it is read (`FinalStateOptions`) and what was read
(`FinalState`), shared by `final_state_read` and `final_state_text` (see `final_state`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from scorer.live.deliverables import Deliverable
from scorer.live.gitparse import FileChange
from scorer.live.gitread import DEFAULT_TIMEOUT
from scorer.live.workspace import At

if TYPE_CHECKING:
    from scorer.settings import Settings

MAX_DELIVERABLES = 12
PREVIEW_LINES = 12
PREVIEW_BUDGET = 60
"""Lines of file content shown over all deliverables: the first files get
`PREVIEW_LINES` each, later ones only their facts once it is spent."""


@dataclass(frozen=True)
class FinalStateOptions:
    """Whether and how the final state is read, decided once at the edge."""

    enabled: bool = True
    """`SCORER_FINAL_STATE`, `--final-state/--no-final-state`."""
    max_age: timedelta = timedelta(hours=24)
    """A session that ended longer ago is not read (`SCORER_FINAL_STATE_MAX_AGE`, hours):
    its workspace has likely moved on."""
    timeout: float = DEFAULT_TIMEOUT
    """Seconds each git command may take."""

    @classmethod
    def from_settings(cls, settings: Settings, *, enabled: bool | None = None) -> FinalStateOptions:
        """The settings' choice, with a command's `--final-state/--no-final-state` over it."""
        return cls(
            enabled=settings.final_state if enabled is None else enabled,
            max_age=timedelta(hours=settings.final_state_max_age),
        )


class StatusEntry(BaseModel):
    """One line of `git status --porcelain`."""

    code: str
    """The two status letters (`M `, ` M`, `??`, `R `, …)."""
    path: str
    old_path: str | None = None


class FinalState(BaseModel):
    """What was read of the workspace (`read`), or why nothing was."""

    read: bool
    reason: str | None = None
    """Why it was not read."""
    absent: bool = False
    """Nothing of the workspace is here (a remote session, no working directory, or one
    that does not exist on this machine): not worth a note on the card."""
    read_at: datetime
    ended_at: datetime | None = None
    repo: str | None = None
    branch: str | None = None
    head: str | None = None
    start: At | None = None
    """HEAD when the session started."""
    end: At | None = None
    """HEAD when the session ended."""
    commits_in_session: int | None = None
    """Commits from the start commit to HEAD at the session's end."""
    commits_since: int | None = None
    """Commits on HEAD made since the session ended."""
    head_moved: bool = False
    """HEAD is not where the session left it (later commits, a checkout or a reset)."""
    status: list[StatusEntry] = Field(default_factory=list)
    status_cut: bool = False
    artifacts: int = 0
    """Untracked build/cache paths (`__pycache__/`, `node_modules/`, …) not listed."""
    diff: list[FileChange] = Field(default_factory=list)
    diff_cut: bool = False
    diff_to_worktree: bool = False
    """The diff runs to the work tree (uncommitted changes included), not to a commit."""
    deliverables: list[Deliverable] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    """Git commands that failed or timed out (what they would have shown is missing)."""


def ago(delta: timedelta) -> str:
    seconds = max(0, int(delta.total_seconds()))
    if seconds < 90:
        return f"{seconds} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"
