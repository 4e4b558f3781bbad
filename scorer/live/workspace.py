"""Whether a session's workspace is here, and where its git history stood when it ran.

`local_dir` and `find_workspace` decide whether the repository on disk now is the one the
session worked in. The rule, each step a one-line reason when it fails:

1. The session was recorded on this machine: a Claude Code transcript, a stream-json
   run or a tmux pane (not a Langfuse trace: it may come from anywhere).
2. It names its working directory (tmux: the `--repo` given, whose git evidence was
   read), as an absolute path that is a directory now.
3. That directory is inside a git work tree (`git rev-parse --show-toplevel`).
4. The branches the transcript records (`gitBranch`; `HEAD` means detached and says
   nothing) are not all unknown to the repository: at least one is a local branch.
5. HEAD's history has a commit made before the session ended (with `CLOCK_SKEW`), or no
   commit at all: a history that starts after the session is a repository re-created
   at the same path, not the one the session saw.

Steps 1 and 2 (`local_dir`) say whether anything of the workspace is here at all; 3 to 5
(`find_workspace`) whether what is here is the session's.

`head_at` finds the commit HEAD was at at a given time: HEAD's reflog entry in force
then; when the reflog does not reach back that far, the newest first-parent commit
committed before it; when every commit is newer (the session made the first one), the
empty tree. `None` with the reason when it cannot be told (no time, no commits).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from scorer.live.gitread import GitReader
from scorer.models import Session, SourceKind

CLOCK_SKEW = timedelta(minutes=5)
"""Slack for the clocks of the transcript and of git's commit times."""
LOCAL_SOURCES = (SourceKind.CLAUDE_CODE, SourceKind.STREAM_JSON, SourceKind.TMUX)


@dataclass(frozen=True)
class Workspace:
    """The repository a session worked in, as it is on disk now."""

    root: Path
    """The work tree's top directory, resolved."""
    cwd: Path
    """The session's working directory, resolved."""
    git: GitReader


@dataclass(frozen=True)
class At:
    """The commit HEAD was at at some time, and how that was found."""

    commit: str | None
    """A commit hash, the empty tree's id (no commit yet then), or None (unknown)."""
    how: str
    """In words: `HEAD at the session's start, from the reflog`, or why it is unknown."""
    empty: bool = False
    """`commit` is the empty tree: the repository had no commit yet."""


def session_dir(session: Session) -> str | None:
    """The directory a session worked in: tmux's `--repo` (when its git was read), else
    the transcript's `cwd`."""
    if session.source == SourceKind.TMUX:
        git = session.extra.get("git")
        ok = session.extra.get("git_available") and isinstance(git, dict)
        return str(git.get("repo")) if ok and isinstance(git, dict) else None
    return session.cwd


def local_dir(session: Session) -> Path | str:
    """The session's working directory as it is on this machine (resolved), or why there
    is none here (rule steps 1 and 2: nothing of the workspace is here to read)."""
    if session.source not in LOCAL_SOURCES:
        return f"a {session.source.value} session may have run elsewhere"
    where = session_dir(session)
    if not where:
        why = "no --repo was given" if session.source == SourceKind.TMUX else "it names none"
        return f"no working directory ({why})"
    if not os.path.isabs(where) or not os.path.isdir(where):
        return f"its working directory {where} does not exist here"
    return Path(os.path.realpath(where))


def find_workspace(
    session: Session, cwd: Path, *, ended: datetime | None, timeout: float
) -> Workspace | str:
    """The repository holding `cwd` (`local_dir`) if it is the session's, or why it is
    not (rule steps 3 to 5 of the module docstring).

    Args:
        session: The session as its source loaded it.
        cwd: Its working directory here, resolved.
        ended: When it ended (checks that the history predates it; None: not checked).
        timeout: Seconds each git command may take.
    """
    git = GitReader(cwd, timeout=timeout)
    top = git.toplevel()
    if not top.ok or not top.out.strip():
        if "not a git repository" in top.error or not top.error:
            return f"{cwd} is not in a git repository"
        return f"git could not read {cwd} ({top.error})"  # timed out, refused, missing
    root = Path(os.path.realpath(top.out.strip()))
    problem = _other_branches(session, git) or _newer_history(git, ended, root)
    return problem or Workspace(root, cwd, git)


def _other_branches(session: Session, git: GitReader) -> str | None:
    recorded = [b for b in session.git_branches if b and b != "HEAD"]
    if not recorded:
        return None
    known, _ = git.branches()
    if known & set(recorded):
        return None
    return (
        f"none of the session's branches ({', '.join(recorded[:3])}) is a branch of "
        f"{git.cwd} now: another repository, or the branch is gone"
    )


def _newer_history(git: GitReader, ended: datetime | None, root: Path) -> str | None:
    if ended is None or git.commit("HEAD") is None:
        return None  # no time to compare, or no commit yet
    if any(at <= ended + CLOCK_SKEW for _, at in git.reflog()):
        return None  # HEAD was here before the session ended (the common case: no rev-list)
    if git.newest_before(ended + CLOCK_SKEW) is not None:
        return None
    return (
        f"every commit of {root} is newer than the session: a repository re-created at "
        "the same path, not the one it worked in"
    )


def head_at(git: GitReader, when: datetime | None, moment: str) -> At:
    """The commit HEAD was at at `when` (the module docstring says how it is found).

    Args:
        moment: What `when` is, in words (`the session's start`).
    """
    if when is None:
        return At(None, f"{moment} is not known")
    if git.commit("HEAD") is None:
        return At(None, "the repository has no commit")
    logged = next((sha for sha, at in git.reflog() if at <= when), None)
    if logged is not None:  # gc expires a reflog entry before it prunes its commit
        return At(logged, f"HEAD at {moment}, from the reflog")
    before = git.newest_before(when)
    if before is not None:
        return At(before, f"the newest commit before {moment} (the reflog does not reach it)")
    empty = git.empty_tree()
    if empty is None:
        return At(None, "the empty tree's id could not be read")
    return At(empty, f"no commit yet at {moment}: compared with the empty tree", empty=True)
