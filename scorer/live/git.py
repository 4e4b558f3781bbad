"""What a live session has done to its git repository (GitPython).

`git_progress` never raises for a missing or empty repository: it returns a
`GitProgress` whose `status` says so (`no_git`, `no_commits`), so a judge prompt can
state plainly that git evidence is absent.

Range: with `base`, commits in `base..HEAD` and the diff `base...HEAD` (from the merge
base); with `since`, commits newer than `since` and the diff from the parent of the
oldest of them to HEAD; with neither, the whole history (diff from the empty tree).

File categories (first rule that matches wins):

1. test: a `test`/`tests`/`__tests__`/`spec`/`testing` directory, or a name like
   `test_*.py`, `*_test.py`, `*_test.go`, `*.test.ts`, `*.spec.js`, `*Test.java`.
2. config: `.toml .yaml .yml .json .ini .cfg .conf .lock .env`, `requirements*.txt`,
   `Dockerfile`, `Makefile`, dotfiles such as `.gitignore`, anything under `.github/`.
3. docs: `.md .rst .txt .adoc`, a `docs`/`doc` directory, `README*`, `CHANGELOG*`,
   `LICENSE*`.
4. source: a programming-language extension (`.py .js .ts .go .rs .java .c .sh`, ...).
5. other: everything else (images, data, binaries, ...).

Untracked build and cache output (`__pycache__/`, `*.pyc`, `.pytest_cache/`,
`node_modules/`, `.venv/`, `*.egg-info/`, ...) is not the agent's work: a test run
leaves it behind in repositories without a `.gitignore`. It is left out of `untracked`
and only counted in `artifacts`.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import git
from pydantic import BaseModel, Field

from scorer._text import plural
from scorer.errors import SourceError
from scorer.live.gitparse import (
    FileCategory,
    FileChange,
    categorize,
    is_artifact,
    parse_numstat,
    parse_porcelain,
)

__all__ = [
    "CommitInfo",
    "FileCategory",
    "FileChange",
    "GitProgress",
    "categorize",
    "git_progress",
    "is_artifact",
    "parse_numstat",
    "parse_porcelain",
    "repo_problem",
]

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


class CommitInfo(BaseModel):
    hexsha: str
    subject: str
    committed_at: datetime


class GitProgress(BaseModel):
    """Commits, diff stats and working-tree state of a repository over a range."""

    status: Literal["ok", "no_git", "no_commits"]
    repo: str
    reason: str | None = None
    """Why there is no git evidence (for `no_git`)."""
    branch: str | None = None
    base: str | None = None
    since: datetime | None = None
    commits: int = 0
    insertions: int = 0
    deletions: int = 0
    files_changed: int = 0
    files: list[FileChange] = Field(default_factory=list)
    categories: dict[str, int] = Field(default_factory=dict)
    """Changed files per category (source, test, config, docs, other)."""
    last_commit: CommitInfo | None = None
    staged: list[str] = Field(default_factory=list)
    unstaged: list[str] = Field(default_factory=list)
    untracked: list[str] = Field(default_factory=list)
    """New files, without build/cache output (see `artifacts`)."""
    artifacts: int = 0
    """Untracked build/cache files (`__pycache__/`, `node_modules/`, ...) left out."""

    @property
    def uncommitted(self) -> list[str]:
        """Staged and unstaged paths, each once."""
        return sorted(set(self.staged) | set(self.unstaged))

    @property
    def renames(self) -> list[FileChange]:
        return [f for f in self.files if f.old_path]

    @property
    def binary_files(self) -> list[str]:
        return [f.path for f in self.files if f.binary]

    @property
    def touched(self) -> int:
        """Distinct files committed, changed or created in the range."""
        return len({f.path for f in self.files} | set(self.uncommitted) | set(self.untracked))

    def summary(self) -> str:
        """One paragraph for a judge prompt."""
        if self.status == "no_git":
            return (
                f"No git repository at {self.repo} ({self.reason}); rely on terminal output only."
            )
        work = _worktree_phrase(self)
        if self.status == "no_commits":
            return f"Git repository at {self.repo} has no commits yet. {work}"
        scope = f"since {self.base}" if self.base else ""
        if self.since:
            scope = f"since {self.since.isoformat(timespec='minutes')}"
        parts = [
            f"Git ({self.branch or 'detached HEAD'}{', ' + scope if scope else ''}): "
            f"{plural(self.commits, 'commit')} changing {plural(self.files_changed, 'file')} "
            f"(+{self.insertions}/-{self.deletions})"
        ]
        if self.categories:
            parts.append(", ".join(f"{n} {c}" for c, n in self.categories.items()))
        text = "; ".join(parts) + "."
        if self.renames:
            text += (
                " Renamed: " + ", ".join(f"{f.old_path} -> {f.path}" for f in self.renames) + "."
            )
        if self.binary_files:
            text += " Binary: " + ", ".join(self.binary_files) + "."
        if self.last_commit:
            c = self.last_commit
            text += (
                f' Last commit {c.hexsha[:8]} "{c.subject}" at '
                f"{c.committed_at.isoformat(timespec='minutes')}."
            )
        return f"{text} {work}"


def _worktree_phrase(progress: GitProgress) -> str:
    def some(paths: list[str]) -> str:
        shown = ", ".join(paths[:5])
        return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")

    bits = []
    if progress.uncommitted:
        bits.append(
            f"Uncommitted: {plural(len(progress.uncommitted), 'file')} "
            f"({len(progress.staged)} staged, {len(progress.unstaged)} unstaged): "
            f"{some(progress.uncommitted)}."
        )
    if progress.untracked:
        bits.append(
            f"Untracked: {plural(len(progress.untracked), 'file')}: {some(progress.untracked)}."
        )
    if bits:
        bits.append(
            f"In all {plural(progress.touched, 'file')} changed (committed, uncommitted or new)."
        )
    if progress.artifacts:
        bits.append(f"({plural(progress.artifacts, 'untracked build/cache file')} ignored.)")
    return " ".join(bits) or "Working tree clean."


def _open(path: Path) -> git.Repo | str:
    try:
        return git.Repo(path, search_parent_directories=True)
    except git.NoSuchPathError:
        return f"{path} does not exist"
    except git.InvalidGitRepositoryError:
        return "not a git repository"
    except git.GitCommandNotFound:
        return "git is not installed"


def repo_problem(path: Path) -> str | None:
    """Why `path` is not inside a usable git repository, or None when it is."""
    opened = _open(Path(path))
    if isinstance(opened, str):
        return opened
    opened.close()
    return None


def _range(repo: git.Repo, since: datetime | None, base: str | None) -> tuple[list[str], str]:
    """(rev-list args, diff start) for the requested range."""
    if base:
        return [f"{base}..HEAD"], repo.git.merge_base(base, "HEAD")
    if since:
        shas = repo.git.rev_list(f"--since={since.isoformat()}", "HEAD").split()
        if not shas:
            return [f"--since={since.isoformat()}", "HEAD"], "HEAD"
        oldest = repo.commit(shas[-1])
        start = oldest.parents[0].hexsha if oldest.parents else EMPTY_TREE
        return [f"--since={since.isoformat()}", "HEAD"], start
    return ["HEAD"], EMPTY_TREE


def _branch(repo: git.Repo) -> str | None:
    try:
        return repo.active_branch.name
    except TypeError:  # detached HEAD
        return None


def git_progress(
    repo: Path, *, since: datetime | None = None, base: str | None = None
) -> GitProgress:
    """Commits, numstat diff and working-tree state of the repository holding `repo`.

    Args:
        repo: A directory inside the repository.
        since: Count only commits newer than this (timezone-aware preferred).
        base: Compare against this ref (branch, tag or sha) instead.

    Returns:
        A `GitProgress`; `status` is `no_git` or `no_commits` instead of raising.

    Raises:
        SourceError: `base` is not a ref of the repository.
    """
    opened = _open(Path(repo))
    if isinstance(opened, str):
        return GitProgress(status="no_git", repo=str(repo), reason=opened)
    with opened as r:
        root = r.working_tree_dir or str(repo)
        staged, unstaged, untracked = parse_porcelain(
            r.git.status("--porcelain=v1", "-z", "--untracked-files=all")
        )
        work = [p for p in untracked if not is_artifact(p)]
        common: dict[str, Any] = {
            "repo": root,
            "staged": staged,
            "unstaged": unstaged,
            "untracked": work,
            "artifacts": len(untracked) - len(work),
        }
        if not r.head.is_valid():
            return GitProgress(status="no_commits", branch=_branch(r), **common)
        try:
            revs, start = _range(r, since, base)
        except git.GitCommandError as exc:
            raise SourceError(
                f"git: cannot compare {root} against {base!r}: not a known ref"
            ) from exc
        files = parse_numstat(r.git.diff("--numstat", "-z", "-M", start, "HEAD"))
        head = r.head.commit
        categories: dict[str, int] = {}
        for f in files:
            categories[f.category.value] = categories.get(f.category.value, 0) + 1
        return GitProgress(
            status="ok",
            branch=_branch(r),
            base=base,
            since=since,
            commits=int(r.git.rev_list("--count", *revs)),
            insertions=sum(f.insertions for f in files),
            deletions=sum(f.deletions for f in files),
            files_changed=len(files),
            files=files,
            categories=categories,
            last_commit=CommitInfo(
                hexsha=head.hexsha,
                subject=head.summary if isinstance(head.summary, str) else head.summary.decode(),
                committed_at=head.committed_datetime,
            ),
            **common,
        )
