"""Which process holds a backfill attempt, and whether it is still alive.

A backfill counts an attempt when it starts judging a session (`Ledger.bump_attempts`)
and writes its lease token on the row. A run that is killed (`kill -9`, OOM, a reboot)
leaves that token behind; the next start of the same command gives those sessions their
attempt back (`Ledger.reclaim`), so dead runs never use up `--max-attempts`.

Liveness is an advisory lock the kernel drops when its holder dies, however it dies:
every process that leases holds an exclusive `flock` on its own file under
`<store dir>/.scorer-runs/` for its whole life. A process id alone would not do: a
container's first process has the same small pid every time, so a dead run's pid is
often the live pid of the next one. The file is created and locked under a temporary
name and then renamed, so nobody ever sees it unlocked while its owner lives. Without
`fcntl` (Windows) the pid in the token is checked instead.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import uuid
from pathlib import Path
from typing import IO

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

_DIR = ".scorer-runs"
_held: dict[str, tuple[str, IO[bytes]]] = {}
"""Lease folder → (this process's token, its locked file), one per folder."""
_guard = threading.Lock()


def _folder(store: Path) -> Path:
    return Path(store).resolve().parent / _DIR


def my_token(store: Path) -> str:
    """This process's lease token next to `store`, taking the lease on first use."""
    folder = _folder(store)
    with _guard:
        held = _held.get(str(folder))
        if held is None:
            held = _held[str(folder)] = _take(folder)
        return held[0]


def _take(folder: Path) -> tuple[str, IO[bytes]]:
    token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    staging = folder / f".{token}.tmp"
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            handle = staging.open("wb")
            break
        except FileNotFoundError:  # the last other holder removed the folder meanwhile
            continue
    if fcntl is not None:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    staging.rename(folder / token)
    atexit.register(_release, folder / token, handle)
    return token, handle


def _release(path: Path, handle: IO[bytes]) -> None:
    """Drop the lease at a normal exit; the folder goes too once nobody else holds one,
    so a finished run leaves only the store beside the store."""
    with contextlib.suppress(OSError):
        path.unlink()
    handle.close()
    with contextlib.suppress(OSError):  # not empty: another process's lease
        path.parent.rmdir()


def is_alive(store: Path, token: str) -> bool:
    """Whether the process that took `token` next to `store` still runs."""
    folder = _folder(store)
    with _guard:
        mine = _held.get(str(folder))
    if mine is not None and mine[0] == token:
        return True
    path = folder / token
    if fcntl is None:  # pragma: no cover - Windows
        return path.exists() and _pid_alive(token)
    try:
        handle = path.open("rb")
    except FileNotFoundError:
        return False
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        # Nobody holds it: its owner is gone. Unlink while we hold it (a later reader
        # finds no file, which means the same).
        with contextlib.suppress(OSError):
            path.unlink()
        return False


def _pid_alive(token: str) -> bool:  # pragma: no cover - Windows
    try:
        os.kill(int(token.split("-", 1)[0]), 0)
    except (ProcessLookupError, ValueError):
        return False
    except PermissionError:
        return True
    return True
