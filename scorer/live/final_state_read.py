"""Read a session's workspace now: history, status, diff stat and deliverables (I/O,
read-only and bounded; never raises for the workspace). See `final_state`."""

from __future__ import annotations

from datetime import UTC, datetime

from scorer._identity import session_times
from scorer.live.deliverables import read_deliverable
from scorer.live.final_state_model import (
    MAX_DELIVERABLES,
    PREVIEW_BUDGET,
    PREVIEW_LINES,
    FinalState,
    FinalStateOptions,
    StatusEntry,
)
from scorer.live.gitparse import FileChange, is_artifact, parse_numstat
from scorer.live.workspace import At, Workspace, find_workspace, head_at, local_dir
from scorer.models import Session
from scorer.prepare.artefacts import task_artefacts


def read_final_state(
    session: Session, options: FinalStateOptions, *, now: datetime | None = None
) -> FinalState:
    """Read the workspace of `session` (module docstring); never raises for it."""
    now = now or datetime.now(UTC)
    started, ended, _ = session_times(session.started_at, session.ended_at, session.extra)
    since, base_ref = _tmux_range(session)
    started, ended = _aware(since or started), _aware(ended)
    base = FinalState(read=False, read_at=now, ended_at=ended)
    cwd = local_dir(session)
    if isinstance(cwd, str):
        return base.model_copy(update={"reason": cwd, "absent": True})
    if ended is not None and now - ended > options.max_age:
        hours = options.max_age.total_seconds() / 3600
        return base.model_copy(update={"reason": (
            f"the session ended more than {hours:g} h before it was scored "
            "(SCORER_FINAL_STATE_MAX_AGE): its workspace has likely moved on"
        )})  # fmt: skip
    found = find_workspace(session, cwd, ended=ended, timeout=options.timeout)
    if isinstance(found, str):
        return base.model_copy(update={"reason": found})
    state = base.model_copy(update={"read": True, "repo": str(found.root)})
    _history(state, found, started, ended, base_ref)
    _status(state, found)
    _diff(state, found)
    _deliverables(state, found, session.task_text)
    return state


def _aware(when: datetime | None) -> datetime | None:
    """A time without an offset is taken as UTC (Claude Code writes UTC, with `Z`)."""
    return when.replace(tzinfo=UTC) if when is not None and when.tzinfo is None else when


def _tmux_range(session: Session) -> tuple[datetime | None, str | None]:
    """tmux's `--since` / `--base` (kept in its git evidence): where the session began."""
    git = session.extra.get("git")
    if not isinstance(git, dict):
        return None, None
    since, base = git.get("since"), git.get("base")
    when = datetime.fromisoformat(since) if isinstance(since, str) else None
    if when is not None and when.tzinfo is None:
        when = when.astimezone()  # a naive --since is local time, as git reads it
    return when, base if isinstance(base, str) and base else None


def _history(
    state: FinalState, ws: Workspace, started: datetime | None, ended: datetime | None,
    base: str | None,
) -> None:  # fmt: skip
    git = ws.git
    state.branch, state.head = git.branches()[1], git.commit("HEAD")
    start = head_at(git, started, "the session's start")
    if base:  # tmux --base: the start the user named
        sha = git.commit(base)
        start = At(sha, f"--base {base}") if sha else At(None, f"--base {base} is not a commit")
    end = head_at(git, ended, "the session's end")
    state.start, state.end = start, end
    if end.commit and not end.empty and state.head:
        state.head_moved = end.commit != state.head
        state.commits_since = 0
        if state.head_moved:  # later commits, or a checkout or reset (then not counted)
            ancestor = git.is_ancestor(end.commit, state.head)
            state.commits_since = git.count(f"{end.commit}..HEAD") if ancestor else None
    elif state.head and ended is not None:
        state.commits_since = git.count("HEAD", after=ended)
        state.head_moved = bool(state.commits_since)
    if start.commit and not start.empty and end.commit and not end.empty:
        state.commits_in_session = git.count(f"{start.commit}..{end.commit}")
    elif start.commit and state.head:  # from the empty tree: every commit up to the end
        span = end.commit if end.commit and not end.empty else "HEAD"
        state.commits_in_session = git.count(span)


def _status(state: FinalState, ws: Workspace) -> None:
    done = ws.git.status()
    if not done.ok:
        state.problems.append(f"git status: {done.error}")
        return
    entries = parse_status(done.out)
    if done.truncated and entries:
        entries.pop()  # the last entry read may be cut
    kept = [e for e in entries if not (e.code == "??" and is_artifact(e.path))]
    state.status, state.artifacts, state.status_cut = kept, len(entries) - len(kept), done.truncated


def parse_status(raw: str) -> list[StatusEntry]:
    """`git status --porcelain=v1 -z` entries (a rename's source path follows it)."""
    fields = raw.split("\0")
    out: list[StatusEntry] = []
    i = 0
    while i < len(fields):
        entry = fields[i]
        i += 1
        if len(entry) < 4:
            continue
        old = None
        if entry[0] in "RC" and i < len(fields):
            old, i = fields[i], i + 1
        out.append(StatusEntry(code=entry[:2], path=entry[3:], old_path=old))
    return out


def _diff(state: FinalState, ws: Workspace) -> None:
    start, end = state.start, state.end
    if start is None or start.commit is None:
        return
    to_worktree = not state.head_moved
    target = None if to_worktree else (end.commit if end and not end.empty else None)
    if not to_worktree and target is None:
        return  # HEAD moved and where it was at the end is unknown: no honest range
    done = ws.git.numstat(start.commit, target)
    if not done.ok:
        state.problems.append(f"git diff: {done.error}")
        return
    changes = _numstat(done.out, cut=done.truncated)
    state.diff, state.diff_cut, state.diff_to_worktree = changes, done.truncated, to_worktree


def _numstat(raw: str, *, cut: bool) -> list[FileChange]:
    """`parse_numstat`, on output that may end mid-record when it was cut at its cap."""
    fields = raw.split("\0")[:-1] if cut else raw.split("\0")
    for drop in range(3 if cut else 1):  # a rename's record spans three fields
        try:
            return parse_numstat("\0".join(fields[: len(fields) - drop]))
        except (ValueError, IndexError):
            continue
    return []


def _deliverables(state: FinalState, ws: Workspace, task: str | None) -> None:
    names = [name for kind, name in task_artefacts(task) if kind == "path"]
    budget = PREVIEW_BUDGET
    for name in names[:MAX_DELIVERABLES]:
        found = read_deliverable(name, ws.cwd, ws.root, max_lines=min(PREVIEW_LINES, budget))
        budget -= len(found.lines)
        if found.kind == "text" and not found.lines:
            spent = f"lines not shown: the section shows at most {PREVIEW_BUDGET} lines of files"
            found = found.model_copy(update={"note": "; ".join(filter(None, (found.note, spent)))})
        state.deliverables.append(found)
