"""The hook's log: `$SCORER_HOME/logs/hook.log`, rotated, secrets redacted.

A hook must never write into the user's Claude Code session, so everything the hook and
its background worker have to say (and every warning of the scorer's own loggers while
they run) goes here instead. Both processes append to the same file; each line names
its process id.
"""

from __future__ import annotations

import logging
from logging.handlers import RotatingFileHandler
from pathlib import Path

LOG_NAME = "hook.log"
MAX_BYTES = 1_000_000
BACKUPS = 3
"""hook.log plus three rotated files: at most about 4 MB."""

log = logging.getLogger("scorer.hook")


class _Redact(logging.Filter):
    """Redacts secrets from every message (an error text may quote a key or a URL)."""

    def filter(self, record: logging.LogRecord) -> bool:
        from scorer.prepare.redact import redact_text

        record.msg = redact_text(record.getMessage())[0]
        record.args = None
        return True


def log_path(home: Path) -> Path:
    return home / "logs" / LOG_NAME


def start_logging(home: Path, *, level: int = logging.INFO, redact: bool = True) -> Path | None:
    """Send the `scorer` loggers to the hook log only (never to stdout or stderr).

    Args:
        home: The scorer's data dir (`SCORER_HOME`).
        level: The lowest level written.
        redact: Pass every line through the redactor. The hook's own foreground lines
            (ids, paths, event names) skip it: importing it costs 0.2 s there.

    Returns:
        The log file, or None when it cannot be opened (then nothing is logged at all).
    """
    root = logging.getLogger("scorer")
    for handler in list(root.handlers):
        root.removeHandler(handler)
    root.propagate = False  # keep the CLI's console handler (if any) out of it
    path = log_path(home)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = RotatingFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS)
    except OSError:
        root.addHandler(logging.NullHandler())
        return None
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s", "%Y-%m-%d %H:%M:%S")
    )
    if redact:
        handler.addFilter(_Redact())
    root.addHandler(handler)
    root.setLevel(level)
    return path
