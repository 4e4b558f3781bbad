"""Small file-system helpers shared by stages that write files users read."""

from __future__ import annotations

import errno
import os
import re
import select
import stat
import sys
import tempfile
import time
from pathlib import Path

from scorer.errors import ConfigError


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` (or bytes) to `path` via a temp file + rename (atomic on POSIX).

    The rename never replaces what is not a regular file: a symbolic link is followed
    (its target is written, the link stays), a character device (`/dev/null`) or a FIFO
    is written through, and a directory, socket or block device is refused with
    `ConfigError` naming it. A FIFO nobody reads within `PIPE_WAIT_SECONDS` is refused
    rather than waited on forever. `/dev/stdout`, `/dev/stderr` and `/dev/fd/N` are
    written to the descriptor this process already holds, whatever it is (a pipe, a
    terminal, a file opened with `>` or `>>`), never reopened or replaced.

    Raises:
        OSError: Naming `path` as given, never the temp file beside it.
        ConfigError: `path` is a directory or another file we may not replace.
    """
    data = text.encode() if isinstance(text, str) else text
    try:
        fd = _own_descriptor(path)
        if fd is not None:
            _write_descriptor(fd, data)
            return
        mode = _mode(path)
        if mode is not None and not stat.S_ISREG(mode):
            _write_special(path, mode, data)
            return
        _replace(Path(os.path.realpath(path)) if path.is_symlink() else path, data)
    except OSError as exc:  # a full disk (`-o /dev/full`), a read-only file: name the user's
        raise _naming(exc, path) from None


_DESCRIPTOR = re.compile(r"/dev/(?:std(out|err)|fd/(\d+))|/proc/self/fd/(\d+)")


def _own_descriptor(path: Path) -> int | None:
    """The descriptor a `/dev/stdout`-like path names in this process (None: a file)."""
    match = _DESCRIPTOR.fullmatch(str(path))
    if match is None:
        return None
    stream, number, proc = match.groups()
    return {"out": 1, "err": 2}[stream] if stream else int(number or proc)


def _write_descriptor(fd: int, data: bytes) -> None:
    for stream in (sys.stdout, sys.stderr):  # what was printed before goes first
        if stream is not None and not stream.closed:
            stream.flush()
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _mode(path: Path) -> int | None:
    """`path`'s file type, links followed; None when nothing is there yet."""
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:  # a symlink loop, a file where a directory should be
        raise ConfigError(f"{path}: {(exc.strerror or str(exc)).lower()}") from None


def _naming(exc: OSError, path: Path) -> OSError:
    """The same error about `path` (the rename's or mkstemp's names are our temp file)."""
    if exc.errno is None:
        exc.filename, exc.filename2 = str(path), None
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def _write_special(path: Path, mode: int, data: bytes) -> None:
    if stat.S_ISCHR(mode):
        with open(path, "wb") as device:
            device.write(data)
        return
    if stat.S_ISFIFO(mode):
        _write_fifo(path, data)
        return
    kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    raise ConfigError(f"{path}: {kind}; give a file path to write")


def _write_fifo(path: Path, data: bytes) -> None:
    deadline = time.monotonic() + PIPE_WAIT_SECONDS
    while True:
        try:  # non-blocking open fails with ENXIO while the pipe has no reader
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
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


def _replace(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
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
