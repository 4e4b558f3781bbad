"""Small file-system helpers shared by stages that write files users read."""

from __future__ import annotations

import errno
import os
import select
import stat
import tempfile
import time
from pathlib import Path

from scorer.errors import ConfigError


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` (or bytes) to `path` via a temp file + rename (atomic on POSIX).

    The rename never replaces what is not a regular file: a symbolic link is followed
    (its target is written, the link stays), a character device (`/dev/null`,
    `/dev/stdout`) or a FIFO (`-o /dev/stdout` into a pipe) is written through, and a
    directory, socket or block device is refused with `ConfigError` naming it. A FIFO
    nobody reads within `PIPE_WAIT_SECONDS` is refused rather than waited on forever.
    """
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:  # a symlink loop, a file where a directory should be
        raise ConfigError(f"{path}: {(exc.strerror or str(exc)).lower()}") from None
    try:
        _write(path, target, mode, text)
    except OSError as exc:  # a full disk (`-o /dev/full`), an I/O error: name the file
        if exc.filename is None:
            exc.filename = str(path)
        raise


def _write(path: Path, target: Path, mode: int | None, text: str | bytes) -> None:
    if mode is not None and not stat.S_ISREG(mode):
        if stat.S_ISCHR(mode):
            with open(target, "wb") as device:
                device.write(text.encode() if isinstance(text, str) else text)
            return
        if stat.S_ISFIFO(mode):
            _write_fifo(path, target, text.encode() if isinstance(text, str) else text)
            return
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise ConfigError(f"{path}: {kind}; give a file path to write")
    _replace(target, text)


def _write_fifo(path: Path, target: Path, data: bytes) -> None:
    deadline = time.monotonic() + PIPE_WAIT_SECONDS
    while True:
        try:  # non-blocking open fails with ENXIO while the pipe has no reader
            fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
            break
        except OSError as exc:
            if exc.errno != errno.ENXIO:
                raise ConfigError(f"{path}: {(exc.strerror or str(exc)).lower()}") from None
            if time.monotonic() >= deadline:
                raise ConfigError(
                    f"{path}: a named pipe nobody reads (waited {PIPE_WAIT_SECONDS:.0f} s)"
                ) from None
            time.sleep(0.05)
    os.set_blocking(fd, True)
    with os.fdopen(fd, "wb") as pipe:
        pipe.write(data)


def _replace(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode() if isinstance(text, str) else text)
            fh.flush()
            os.fsync(fh.fileno())
        if path.exists():  # keep the mode of the file being replaced
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


PIPE_WAIT_SECONDS = 10.0
"""How long a named pipe the user gave us may stay without a writer before we give up."""


def read_user_text(path: Path, what: str) -> str:
    """A UTF-8 text file the user named (`--prompt-file`, a label file); a BOM is dropped.

    A named pipe (`<(cmd)`, `mkfifo`) is read only when a writer shows up within
    `PIPE_WAIT_SECONDS`: without one, opening it would block forever.

    Args:
        path: The file.
        what: How to name it in an error (`--prompt-file`).

    Raises:
        ConfigError: One line naming the file: missing, a directory, a pipe without a
            writer, unreadable, or not UTF-8.
    """
    try:
        mode = path.stat().st_mode
        if stat.S_ISDIR(mode):
            raise ConfigError(f"{what} {path}: is a directory, not a file")
        data = _read_pipe(path, what) if stat.S_ISFIFO(mode) else path.read_bytes()
    except OSError as exc:
        reason = (exc.strerror or exc.__class__.__name__).lower()
        raise ConfigError(f"{what} {path}: {reason}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{what} {path}: not UTF-8 text (bad byte at offset {exc.start})"
        ) from None


def _read_pipe(path: Path, what: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # returns at once, writer or not
    with os.fdopen(fd, "rb") as pipe:
        ready, _, _ = select.select([fd], [], [], PIPE_WAIT_SECONDS)
        if not ready:
            raise ConfigError(
                f"{what} {path}: a named pipe with no writer (waited {PIPE_WAIT_SECONDS:g} s)"
            )
        os.set_blocking(fd, True)
        return pipe.read()
