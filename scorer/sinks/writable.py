"""Is the score store writable? Asked before a paid judge call, not after it."""

from __future__ import annotations

import tempfile
from pathlib import Path

from scorer.errors import SinkError
from scorer.settings import get_settings

STORE_HINT = "set SCORER_HOME to a writable folder"
"""How to fix a store that cannot be written (every command that writes one)."""


def check_writable(
    path: Path | None = None, *, hint: str = f"{STORE_HINT} or pass --no-store"
) -> None:
    """Raise `SinkError` now, not after a paid judge call, when the store could not be
    written: its path is a folder, its folder cannot be made or written, or the file is
    read-only. Creates nothing but the folder (the store file appears with the card).

    Args:
        path: The store file (default: the settings' store).
        hint: How to fix it, ending the message (`score-session` can skip the store).
    """
    path = Path(path) if path else get_settings().store_path
    try:
        if path.exists() and not path.is_file():
            raise SinkError(f"score store {path} is not a file; {hint}")
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            with open(path, "ab"):
                pass
        else:
            with tempfile.TemporaryFile(dir=path.parent):
                pass
    except OSError as e:
        reason = (e.strerror or e.__class__.__name__).lower()
        raise SinkError(f"score store {path} is not writable ({reason}); {hint}") from None
