"""The workspace's final state, read when a session is scored, for the judge to cite.

When the repository a session worked in is here (`live.workspace.find_workspace` says
how that is decided), session-scorer reads, read-only and bounded (`live.gitread`,
`live.deliverables`), and without re-running anything the session ran:

- `git status` (porcelain): what is modified, staged and untracked now;
- the diff stat since the session's first commit (HEAD when it started): committed and
  uncommitted changes when HEAD has not moved since the session ended, else only up to
  HEAD at the end (later commits are counted, not shown);
- for each file the task names as a deliverable: whether it exists, its size and its
  first lines.

`add_final_state` appends them as SYSTEM events after the session's last event, each
saying it was observed by session-scorer at scoring time, not by the agent, and when
(`read 3 min after the session ended; 2 commits since`). They are ordinary events from
then on: `prepare` redacts them with the rest, the renderer fences them, the judge cites
them by number. A session whose working directory is here but whose state is not read
(another repository at that path, too long ago) keeps its events and gets the reason in
`extra["final_state"]` (the card's `meta.final_state`); one whose workspace is not on this
machine at all is left as it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from scorer.live.final_state_model import FinalState, FinalStateOptions, StatusEntry
from scorer.live.final_state_read import read_final_state
from scorer.live.final_state_text import final_state_events
from scorer.models import Session

__all__ = [
    "FinalState",
    "FinalStateOptions",
    "StatusEntry",
    "add_final_state",
    "read_final_state",
    "summary",
]


def add_final_state(
    session: Session, options: FinalStateOptions | None, *, now: datetime | None = None
) -> Session:
    """`session` with its final-state events appended (a copy); or a copy whose
    `extra["final_state"]` says why not, when its working directory is here; else
    `session` itself (turned off, or nothing of the workspace is here).

    Args:
        session: The session as its source loaded it (before `prepare`).
        options: None or disabled: do nothing.
        now: The read time (tests pin it).
    """
    if options is None or not options.enabled:
        return session
    try:
        state = read_final_state(session, options, now=now)
    except (OSError, ValueError) as exc:  # an add-on: never what sinks the session's score
        reason = f"the workspace could not be read: {exc}"
        return session.model_copy(update={
            "extra": {**session.extra, "final_state": {"read": False, "reason": reason}}
        })  # fmt: skip
    if state.absent:
        return session
    extra = {**session.extra, "final_state": summary(state)}
    if not state.read:
        return session.model_copy(update={"extra": extra})
    first = max((e.index for _, e in session.iter_events()), default=0) + 1
    events = final_state_events(state, first)
    extra["final_state"]["events"] = [events[0].index, events[-1].index]
    return session.model_copy(update={"events": [*session.events, *events], "extra": extra})


def summary(state: FinalState) -> dict[str, Any]:
    """What a card keeps of the final state (`meta.final_state`)."""
    if not state.read:
        return {"read": False, "reason": state.reason}
    return {
        "read": True,
        "read_at": state.read_at.isoformat(timespec="seconds"),
        "repo": state.repo,
        "start": state.start.how if state.start else None,
        "commits_since": state.commits_since,
        "head_moved": state.head_moved,
        "deliverables": len(state.deliverables),
    }
