"""Small file-system helpers shared by stages that write files users read."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` via a temp file + rename (atomic on POSIX).

    A path that exists and is no regular file (`/dev/null`, `/dev/stdout`, a FIFO) is
    written to as it is: renaming over it would replace the device with a file.
    """
    if _is_special(path):
        with path.open("w", encoding="utf-8") as fh:
            fh.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _is_special(path: Path) -> bool:
    try:
        return not stat.S_ISREG(path.stat().st_mode) and not path.is_dir()
    except OSError:  # missing (written fresh) or unreadable (the write will say why)
        return False
