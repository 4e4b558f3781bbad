"""Live sessions: tmux capture, terminal cleaning, git progress, machine resources and
progress signals. `scorer.sources.tmux.TmuxSource` puts them together into a `Session`."""

from __future__ import annotations

import importlib
from typing import Any

# Names load on first use (PEP 562): importing one submodule, as the terminal-file
# source does on every `score-session` start, must not pull in GitPython, libtmux,
# psutil and pyte (about 0.1 s).
_HOME = {
    "FileCategory": "git",
    "FileChange": "git",
    "GitProgress": "git",
    "categorize": "git",
    "git_progress": "git",
    "ProgressEstimate": "progress",
    "TerminalSignals": "progress",
    "estimate_progress": "progress",
    "extract_signals": "progress",
    "parse_tests": "progress",
    "Resources": "resources",
    "snapshot": "resources",
    "clean_terminal": "terminal",
    "render_cast": "terminal",
    "Capture": "tmux",
    "PaneCapture": "tmux",
    "capture": "tmux",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
    globals()[name] = value
    return value


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
