"""A live session read from a tmux pane, plus git and machine evidence.

The pane text is cleaned and split into TERMINAL events at command boundaries (shell
prompts, Claude Code `⏺`/`●` markers, `❯`/`>` input lines), with long blocks cut to a
manageable size. Git progress and a resource snapshot come first as SYSTEM events, so the
judge sees what changed on disk as well as what was printed.

The session id is the tmux session's name and a digest of the target, the session's
creation time and the repository (`sources._ids`); the session ran from its creation to
the capture.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer.errors import EmptySessionError
from scorer.live.progress import estimate_progress, extract_signals
from scorer.live.terminal import clean_terminal
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.sources._common import number_events
from scorer.sources._ids import tmux_id
from scorer.sources._screen import screen_identity

if TYPE_CHECKING:
    from scorer.live.git import GitProgress
    from scorer.live.tmux import Capture

# A new block starts at a prompt that carries a command, or at a TUI message marker.
_BOUNDARY = re.compile(
    r"^(?:"
    r"(?:\([\w.-]+\) )?[\w.-]+@[\w.-]+(?::\S*)?\s?[$#%] \S"  # user@host:/path$ cmd
    r"|bash-[\d.]+[$#] \S"
    r"|[$#%❯>] \S"  # bare prompts: `$ ls`, `❯ claude`, `> fix the bug`
    r"|[⏺●] "  # Claude Code message / tool-call markers
    r")"
)
MAX_BLOCK_LINES = 150
MAX_BLOCK_CHARS = 8_000
NO_GIT_NOTE = (
    "No git repository is available for this session: judge progress from the terminal "
    "output only (file changes cannot be verified)."
)


def _cut(block: list[str]) -> list[list[str]]:
    """Cut one block into pieces of at most MAX_BLOCK_LINES lines / MAX_BLOCK_CHARS chars."""
    pieces: list[list[str]] = [[]]
    size = 0
    for line in block:
        if pieces[-1] and (
            len(pieces[-1]) >= MAX_BLOCK_LINES or size + len(line) > MAX_BLOCK_CHARS
        ):
            pieces.append([])
            size = 0
        pieces[-1].append(line[:MAX_BLOCK_CHARS])
        size += len(line) + 1
    return pieces


def split_blocks(text: str) -> list[str]:
    """Split cleaned terminal text into command/message blocks of manageable size."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if not blocks or _BOUNDARY.match(line):
            blocks.append([])
        blocks[-1].append(line)
    pieces = [piece for block in blocks for piece in _cut(block)]
    return [t for piece in pieces if (t := "\n".join(piece).strip("\n")).strip()]


def terminal_events(text: str, *, pane: str | None = None) -> list[Event]:
    """TERMINAL events for one pane's cleaned text (unnumbered)."""
    events = []
    for block in split_blocks(text):
        signals = extract_signals(block)
        meta: dict[str, Any] = {"first_line": block.splitlines()[0][:200]}
        if pane:
            meta["pane"] = pane
        if signals.tests:
            meta["tests"] = signals.tests.model_dump(exclude_none=True)
        if signals.error_lines:
            meta["errors"] = signals.error_lines[:5]
        is_error = bool(signals.tracebacks or signals.error_lines)
        is_error = is_error or bool(signals.tests and not signals.tests.ok)
        events.append(
            Event(index=0, kind=EventKind.TERMINAL, text=block, is_error=is_error, meta=meta)
        )
    return events


def _system(text: str, **meta: Any) -> Event:
    return Event(index=0, kind=EventKind.SYSTEM, text=text, meta=meta)


class TmuxSource:
    """A live (or recently finished) session: tmux pane text + git + resources."""

    kind = SourceKind.TMUX

    def __init__(
        self,
        target: str,
        *,
        repo: Path | None,
        since: datetime | None = None,
        base: str | None = None,
        prompt: str | None = None,
        lines: int = 2000,
        all_panes: bool = False,
        socket_name: str | None = None,
    ) -> None:
        self.target = target
        self.repo = repo
        self.since = since
        self.base = base
        self.prompt = prompt
        self.lines = lines
        self.all_panes = all_panes
        self.socket_name = socket_name

    def load(self) -> Session:
        """Capture, clean and split the pane(s); add git and resource evidence.

        Raises:
            SourceError: The tmux session is gone and was never captured, or `base` is
                not a ref of the repository.
            EmptySessionError: The capture holds no text at all.
        """
        # GitPython, libtmux and psutil load here, not when the terminal-file source
        # imports this module's helpers on every `score-session` start.
        from scorer.live.git import git_progress
        from scorer.live.resources import snapshot
        from scorer.live.tmux import capture

        cap = capture(
            self.target, lines=self.lines, all_panes=self.all_panes, socket_name=self.socket_name
        )
        terminal = self._terminal(cap)
        if not terminal:
            raise EmptySessionError(f"tmux target {self.target!r} shows no text")
        git = git_progress(self.repo, since=self.since, base=self.base) if self.repo else None
        resources = snapshot(self.repo or Path.cwd())
        signals = extract_signals("\n".join(e.text for e in terminal))
        has_git = git is not None and git.status != "no_git"
        estimate = estimate_progress(signals, files_touched=git.touched if git else 0)

        evidence = [
            self._git_event(git),
            _system(f"Machine: {resources.one_line()}", resources=True),
        ]
        if cap.from_cache:
            stamp = cap.captured_at.isoformat(timespec="seconds")
            evidence.append(
                _system(f"The tmux session has ended; terminal text is the last capture ({stamp}).")
            )
        events = number_events([*evidence, *terminal])
        return Session(
            session_id=tmux_id(self.target, cap.session_created, self.repo),
            source=SourceKind.TMUX,
            origin=f"tmux {cap.socket}: {self.target}",
            cwd=str(self.repo) if self.repo else cap.panes[0].current_path,
            git_branches=[git.branch] if git and git.branch else [],
            started_at=cap.session_created,
            ended_at=cap.captured_at,
            task=self.prompt,
            events=events,
            extra={
                "git": git.model_dump(mode="json") if git else None,
                "git_available": has_git,
                "terminal_only": not has_git,
                "resources": resources.model_dump(mode="json"),
                "terminal_signals": signals.model_dump(mode="json"),
                "progress_percent": estimate.percent,
                "phase": estimate.phase,
                "progress_parts": estimate.parts,
                "from_cache": cap.from_cache,
                "panes": [p.label for p in cap.panes],
                "times_from": "capture",
                "screen": screen_identity("\n".join(e.text for e in terminal)),
            },
        )

    def _terminal(self, cap: Capture) -> list[Event]:
        events: list[Event] = []
        for pane in cap.panes:
            label = pane.label if len(cap.panes) > 1 else None
            events.extend(terminal_events(clean_terminal(pane.text), pane=label))
        return events

    def _git_event(self, git: GitProgress | None) -> Event:
        if git is None or git.status == "no_git":
            reason = f"{git.repo}: {git.reason}" if git else "no repository was given"
            return _system(f"{NO_GIT_NOTE} ({reason})", git=False)
        return _system(git.summary(), git=True)
