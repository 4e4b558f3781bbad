"""Read-only git, bounded: every command with a timeout and an output cap.

The final state (`live.final_state`) reads the user's repository with these commands
only, after the session is over; nothing of the session is run again:

    rev-parse   for-each-ref   reflog   rev-list   merge-base --is-ancestor
    status --porcelain=v1 -z   diff-index / diff-tree --numstat -z
    hash-object --stdin (no -w: nothing is stored)

Each runs as `git --no-optional-locks -c core.fsmonitor=false …`: `status` then never
refreshes the index (which would write `.git/index`) and no fsmonitor program configured
in the repository is started; the diff stat comes from the plumbing (`git diff` would
refresh the index), with `--no-ext-diff --no-textconv`, so no external diff or textconv
driver runs; `status` does not enter submodules' work trees. The
caller's `GIT_*` variables are dropped (a hook may run with `GIT_DIR` set) and prompts
are off. A command that fails, times out or prints more than its cap is reported in its
`GitOutput`, never raised; a timed-out command's process group is killed.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

DEFAULT_TIMEOUT = 5.0
"""Seconds one git command may take."""
SMALL = 64 * 1024
LARGE = 256 * 1024
"""Output caps (bytes) of a one-line answer and of a listing."""
_SAFE = ("--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "core.quotePath=false")
_ERR_CAP = 4096


@dataclass(frozen=True)
class GitOutput:
    """What one git command printed, and whether it worked."""

    ok: bool
    out: str = ""
    truncated: bool = False
    """It printed more than its cap: `out` is the start, and the process was stopped."""
    error: str = ""
    """Why it failed: git's first line of complaint, `timed out after N s`, or that git
    could not be started."""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", GIT_PAGER="cat")
    return env


def _read_bounded(proc: subprocess.Popen[bytes], deadline: float, limit: int) -> tuple[
    bytes, bytes, bool, bool
]:  # fmt: skip
    """(stdout, stderr, truncated, timed out) of a running process, reading at most
    about `limit` bytes of its output before the deadline."""
    out, err = bytearray(), bytearray()
    truncated = timed_out = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ, out)  # type: ignore[arg-type]
        sel.register(proc.stderr, selectors.EVENT_READ, err)  # type: ignore[arg-type]
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                else:
                    key.data.extend(chunk)
            del err[_ERR_CAP:]
            if len(out) > limit:
                truncated = True
                break
    return bytes(out[:limit]), bytes(err), truncated, timed_out


def run_git(
    cwd: Path, args: list[str], *, timeout: float = DEFAULT_TIMEOUT, limit: int = SMALL
) -> GitOutput:
    """Run one read-only git command in `cwd` (see the module docstring)."""
    deadline = time.monotonic() + timeout
    try:
        proc = subprocess.Popen(
            ["git", *_SAFE, *args], cwd=cwd, env=_env(), stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        return GitOutput(False, error=f"git could not be started: {exc.strerror or exc}")
    with proc:
        out, err, truncated, timed_out = _read_bounded(proc, deadline, limit)
        if truncated or timed_out:
            _kill(proc)
        code = _wait(proc, deadline)
    if timed_out or code is None:
        return GitOutput(False, error=f"git {args[0]} timed out after {timeout:g} s")
    text = out.decode("utf-8", "replace")
    if truncated:
        return GitOutput(True, text, truncated=True)
    if code != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return GitOutput(False, text, error=lines[0] if lines else f"git {args[0]} failed")
    return GitOutput(True, text)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop the command and anything it started (its own process group)."""
    with contextlib.suppress(OSError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> int | None:
    try:
        return proc.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        _kill(proc)
        proc.wait()
        return None


class GitReader:
    """The reads the final state makes of one repository, each bounded and made once.

    Args:
        cwd: A directory inside the repository (the session's working directory).
        timeout: Seconds each command may take.
    """

    def __init__(self, cwd: Path, *, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.cwd, self.timeout = cwd, timeout
        self._seen: dict[tuple[str, ...], GitOutput] = {}
        self.timed_out = False
        """A command timed out: the later ones are not run (a read waits one timeout)."""

    def run(self, *args: str, limit: int = SMALL) -> GitOutput:
        """One read-only command (`run_git`); asked again, its first answer (one read of
        the repository asks for HEAD, its branch and its reflog more than once)."""
        if args not in self._seen:
            if self.timed_out:  # a repository that slow: no more waiting on it
                return GitOutput(False, error="not run: an earlier git command timed out")
            done = run_git(self.cwd, list(args), timeout=self.timeout, limit=limit)
            self.timed_out = done.error.endswith(f"timed out after {self.timeout:g} s")
            self._seen[args] = done
        return self._seen[args]

    def line(self, *args: str) -> str | None:
        """The first line a command printed, or None when it failed or printed nothing."""
        done = self.run(*args)
        first = done.out.strip().splitlines()[:1] if done.ok else []
        return first[0] if first else None

    def toplevel(self) -> GitOutput:
        """The work tree's top directory (`rev-parse --show-toplevel`)."""
        return self.run("rev-parse", "--show-toplevel")

    def commit(self, ref: str) -> str | None:
        """The full hash of the commit `ref` names, or None."""
        return self.line(
            "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"
        )

    def branches(self) -> tuple[set[str], str | None]:
        """The local branches, and the checked-out one (None: a detached HEAD)."""
        done = self.run("for-each-ref", "--format=%(HEAD)%(refname:short)", "refs/heads/",
                        limit=LARGE)  # fmt: skip
        rows = done.out.splitlines() if done.ok else []
        current = next((r[1:] for r in rows if r.startswith("*")), None)
        return {r[1:] for r in rows if r}, current

    def reflog(self) -> list[tuple[str, datetime]]:
        """HEAD's reflog, newest first: (commit, when HEAD moved there). Empty when there
        is none; the oldest entries are missing when it is longer than the cap."""
        done = self.run("reflog", "show", "--date=unix", "--format=%H %gd", "HEAD", limit=LARGE)
        entries = []
        for row in done.out.splitlines() if done.ok else []:
            sha, _, selector = row.partition(" ")
            stamp = selector.rpartition("@{")[2].rstrip("}")
            if stamp.isdigit():
                entries.append((sha, datetime.fromtimestamp(int(stamp), UTC)))
        return entries

    def newest_before(self, when: datetime) -> str | None:
        """The newest first-parent commit of HEAD committed at or before `when`."""
        return self.line("rev-list", "-1", "--first-parent", f"--before={_epoch(when)}", "HEAD")

    def oldest_time(self) -> datetime | None:
        """When the oldest root commit of HEAD's history was committed."""
        done = self.run("log", "--max-parents=0", "--format=%ct", "HEAD")
        stamps = [int(s) for s in done.out.split() if s.isdigit()] if done.ok else []
        return datetime.fromtimestamp(min(stamps), UTC) if stamps else None

    def count(self, span: str, *, after: datetime | None = None) -> int | None:
        """Commits in `span` (`a..b`), only those committed after `after` when given."""
        since = [f"--since={_epoch(after) + 1}"] if after else []
        found = self.line("rev-list", "--count", *since, span)
        return int(found) if found and found.isdigit() else None

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.run("merge-base", "--is-ancestor", older, newer).ok

    def empty_tree(self) -> str | None:
        """The empty tree's id in this repository's hash (nothing is written)."""
        return self.line("hash-object", "-t", "tree", "--stdin")

    def status(self) -> GitOutput:
        """`git status` of the work tree, machine-readable (untracked folders as one)."""
        return self.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=normal",
            "--ignore-submodules=dirty", limit=LARGE,
        )  # fmt: skip

    def numstat(self, start: str, end: str | None = None) -> GitOutput:
        """Per-file line counts from `start` to `end` (None: the work tree's tracked files).

        Plumbing (`diff-index`, `diff-tree`): unlike `git diff`, which refreshes and
        rewrites the index even under `--no-optional-locks`, it only reads.
        """
        command = ["diff-tree", "-r", start, end] if end else ["diff-index", start]
        return self.run(
            *command[:1], "--numstat", "-z", "-M", "--no-ext-diff", "--no-textconv",
            *command[1:], "--", limit=LARGE,
        )  # fmt: skip


def _epoch(when: datetime) -> int:
    return int(when.timestamp())
