"""A report's files written as one set: readers see the old report or the new one, whole.

The report folder (`score-calibrate --out`) holds one report: `calibration.json`, the
Markdown or HTML page and, for Markdown, `plots/*.png`. Replacing those files one by one
would leave a mix after a crash (a new page beside old plots, or an old page beside a
new `calibration.json`), so the new set is written in full into a hidden folder beside
the report folder and then takes its place in one step: on Linux the two folders are
exchanged atomically (`renameat2(RENAME_EXCHANGE)`); elsewhere the old folder is renamed
aside and the new one into its place, two renames during which the folder is absent
(never mixed). The old set is then deleted.

Taking the folder's place means the folder holds nothing else: a folder with other files
in it (the current directory, a home folder) is refused with a one-line `ConfigError`
rather than swapped away or written into.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import tempfile
from pathlib import Path

from scorer.errors import ConfigError

__all__ = ["REPORT_FILES", "check_folder", "write_set"]

REPORT_FILES = frozenset({"calibration.json", "calibration.md", "calibration.html", "plots"})
"""What a report folder may hold (besides the hidden folders of a write under way)."""


def write_set(out_dir: Path, files: dict[str, bytes]) -> None:
    """Make `out_dir` hold exactly `files` (relative path → bytes), all at once.

    Raises:
        ConfigError: `out_dir` is not a folder of its own for the report.
        OSError: The new set could not be written; the old one is untouched.
    """
    folder = check_folder(out_dir)
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new-", dir=folder.parent))
    try:
        _write_files(staging, files)
        _commit(staging, folder)
    finally:
        with contextlib.suppress(OSError):  # after the commit: the old set, if any
            shutil.rmtree(staging)


def check_folder(out_dir: Path) -> Path:
    """The report folder, resolved; refused (`ConfigError`) when it holds other things or
    is (above) the current directory, which the swap would take away from under the
    shell. Commands check it before any work, so a paid run never ends refused."""
    folder = Path(out_dir).resolve()
    if folder == Path(folder.anchor) or Path.cwd().resolve().is_relative_to(folder):
        raise ConfigError(f"--out {out_dir}: give a folder of its own for the report")
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {out_dir}: not a folder")
    folder.parent.mkdir(parents=True, exist_ok=True)
    if folder.is_dir():
        others = sorted(p.name for p in folder.iterdir() if p.name not in REPORT_FILES)
        if others:
            shown = ", ".join(others[:3]) + (", …" if len(others) > 3 else "")
            raise ConfigError(
                f"--out {out_dir} holds other files ({shown}): give a folder of its own for "
                "the report (it is replaced as a whole)"
            )
    return folder


def _write_files(staging: Path, files: dict[str, bytes]) -> None:
    staging.chmod(0o755)  # a report is meant to be shared (mkdtemp makes it owner-only)
    folders = {staging}
    for rel, data in files.items():
        path = staging / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        folders.add(path.parent)
        with path.open("wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        path.chmod(0o644)
    for folder in folders:  # the names too, before the set takes the old one's place
        _fsync_dir(folder)


def _commit(staging: Path, folder: Path) -> None:
    """Put `staging` in `folder`'s place; the old set ends up at `staging`."""
    if not folder.exists():
        staging.rename(folder)
    elif not _exchange(staging, folder):
        aside = folder.with_name(f".{folder.name}.old-{staging.name.rsplit('-', 1)[1]}")
        folder.rename(aside)
        staging.rename(folder)
        aside.rename(staging)  # deleted with the staging folder
    _fsync_dir(folder.parent)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux `renameat2` with `RENAME_EXCHANGE`); False where
    the system cannot, so the caller falls back to two renames."""
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):  # not glibc / not Linux
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):  # old kernel, or the file system
        return False
    raise OSError(code, os.strerror(code), str(b))


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every system can open a folder
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
