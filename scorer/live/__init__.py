"""Live sessions: tmux capture, terminal cleaning, git progress, machine resources and
progress signals. `scorer.sources.tmux.TmuxSource` puts them together into a `Session`."""

from scorer.live.git import FileCategory, FileChange, GitProgress, categorize, git_progress
from scorer.live.progress import (
    ProgressEstimate,
    TerminalSignals,
    estimate_progress,
    extract_signals,
    parse_tests,
)
from scorer.live.resources import Resources, snapshot
from scorer.live.terminal import clean_terminal, render_cast
from scorer.live.tmux import Capture, PaneCapture, capture

__all__ = [
    "Capture",
    "FileCategory",
    "FileChange",
    "GitProgress",
    "PaneCapture",
    "ProgressEstimate",
    "Resources",
    "TerminalSignals",
    "capture",
    "categorize",
    "clean_terminal",
    "estimate_progress",
    "extract_signals",
    "git_progress",
    "parse_tests",
    "render_cast",
    "snapshot",
]
