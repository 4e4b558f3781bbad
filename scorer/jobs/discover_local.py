"""Find local session files to score: `<root>/<folder>/<file>.jsonl`, finished ones only.

Ids. A file is filed under the id its source reports (what `score-session FILE` stores):
a Claude Code transcript named `<uuid>.jsonl` is that uuid (the Claude Code layout, read
without opening the file); any other name, such as `<task>/session.jsonl` in a
Terminal-Bench-style folder of runs, is opened and the first `sessionId` /
`session_id` of its first lines is used (the file's name when it has none).

Finished or still running. A file not modified within the idle threshold is finished.
A recently modified one (freshly copied, say) is looked into before it is called active:
a headless run that wrote its final `result` line is finished, and so is a transcript
whose last event is older than the threshold; one with no clock of its own is active
only while a process holds it open (checked on Linux; elsewhere it is taken as active).
Every skip says why and how to include it.
"""

from __future__ import annotations

import os
import re
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scorer.errors import SourceError
from scorer.jobs.discovery import Discovery, SessionRef, in_window

__all__ = ["discover_local", "file_session_id"]

_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)
_HEAD_BYTES = 64 * 1024
_TAIL_BYTES = 64 * 1024
_ID = re.compile(rb'"(?:sessionId|session_id)"\s*:\s*"([^"\\]{1,200})"')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"([0-9T:.+\-Z]{10,40})"')
_RESULT = re.compile(rb'^\{\s*"type"\s*:\s*"result"', re.MULTILINE)


def discover_local(
    root: Path,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    idle: timedelta = timedelta(minutes=30),
    now: datetime | None = None,
) -> Discovery:
    """Session files under a Claude Code projects root (or any folder of run folders),
    by modification time.

    Args:
        root: The projects root (`~/.claude/projects`), or a folder of one folder per run.
        start: Inclusive lower bound on the file's mtime.
        end: Exclusive upper bound on the file's mtime.
        project: Only folders whose name contains this text.
        idle: A file modified and active less than this long ago is left for later.
        now: The current time (tests pin it).

    Returns:
        The sessions, oldest first.
    """
    if not root.is_dir():
        raise SourceError(f"projects root not found: {root}")
    now = now or datetime.now(UTC)
    found = Discovery(idle_minutes=idle.total_seconds() / 60)
    newest: dict[str, SessionRef] = {}
    open_files = _OpenFiles()
    for path in sorted(root.glob("*/*.jsonl")):
        if path.name.startswith("agent-") or (project and project not in path.parent.name):
            continue
        mtime = _regular_mtime(path, found)
        if mtime is None:
            continue
        clamped = mtime > now
        if clamped:
            found.future_mtime.append(str(path))
            mtime = now
        if not in_window(mtime, start, end):
            continue
        sid = file_session_id(path)
        why = None if clamped or now - mtime >= idle else _still_active(path, now, idle, open_files)
        if why is not None:
            found.active.append(sid)
            found.active_why[sid] = why
            continue
        ref = SessionRef(sid, "claude-code", str(path), mtime, meta={"project": path.parent.name})
        _keep_newest(newest, ref, found)
    found.sessions = sorted(newest.values(), key=lambda r: (r.last_activity, r.session_id))
    return found


def file_session_id(path: Path) -> str:
    """The id the file's source reports: a uuid file name as it is (Claude Code names its
    transcripts by session id), else the first session id in the file's first lines."""
    if _UUID.match(path.stem):
        return path.stem
    try:
        with path.open("rb") as fh:
            head = fh.read(_HEAD_BYTES)
    except OSError:
        return path.stem
    match = _ID.search(head)
    return match.group(1).decode("utf-8", "replace") if match else path.stem


def _still_active(path: Path, now: datetime, idle: timedelta, open_files: _OpenFiles) -> str | None:
    """Why a recently modified file is a running session, or None when it is finished."""
    tail = _tail(path)
    if _RESULT.search(tail):
        return None  # a headless run that reported its result
    last = _last_timestamp(tail)
    if last is not None:
        age = now - last
        return None if age >= idle else f"its last event was {_minutes(age)} ago"
    held = open_files.holds(path)
    if held is False:
        return None  # no clock of its own, and nothing is writing it
    return "it was modified recently and has no final result yet"


def _tail(path: Path) -> bytes:
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL_BYTES))
            return fh.read()
    except OSError:
        return b""


def _last_timestamp(tail: bytes) -> datetime | None:
    for match in reversed(list(_TIMESTAMP.finditer(tail))):
        try:
            when = datetime.fromisoformat(match.group(1).decode().replace("Z", "+00:00"))
        except ValueError:
            continue
        return when if when.tzinfo else when.replace(tzinfo=UTC)
    return None


def _minutes(age: timedelta) -> str:
    minutes = max(0, int(age.total_seconds() // 60))
    return "less than a minute" if minutes < 1 else f"{minutes} min"


class _OpenFiles:
    """Which files some process holds open (Linux `/proc/<pid>/fd`), read once, lazily."""

    def __init__(self) -> None:
        self._held: set[tuple[int, int]] | None = None

    def holds(self, path: Path) -> bool | None:
        """True or False; None where this cannot be known (no `/proc`)."""
        if self._held is None:
            self._held = _scan_proc()
        if not self._held and not Path("/proc/self/fd").is_dir():
            return None
        try:
            info = path.stat()
        except OSError:
            return None
        return (info.st_dev, info.st_ino) in self._held


def _scan_proc() -> set[tuple[int, int]]:
    held: set[tuple[int, int]] = set()
    proc = Path("/proc")
    if not proc.is_dir():
        return held
    me = os.getpid()
    for pid in proc.iterdir():
        if not pid.name.isdigit() or int(pid.name) == me:
            continue
        try:
            fds = list((pid / "fd").iterdir())
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            try:
                info = fd.stat()
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                held.add((info.st_dev, info.st_ino))
    return held


def _regular_mtime(path: Path, found: Discovery) -> datetime | None:
    """The file's mtime, or None (recorded in `found`) when it is no regular file."""
    try:
        info = path.stat()
    except OSError as exc:  # a dangling symlink or a symlink loop
        found.skipped_files.append(f"{path}: {exc.strerror or exc}")
        return None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would block the reader forever
        found.skipped_files.append(f"{path}: not a regular file")
        return None
    return datetime.fromtimestamp(info.st_mtime, UTC)


def _keep_newest(newest: dict[str, SessionRef], ref: SessionRef, found: Discovery) -> None:
    """One ref per session id: the same id in two folders is one session."""
    other = newest.get(ref.session_id)
    if other is None:
        newest[ref.session_id] = ref
        return
    newer = ref.last_activity and other.last_activity and ref.last_activity > other.last_activity
    keep, drop = (ref, other) if newer else (other, ref)
    newest[ref.session_id] = keep
    found.clashes.append(f"{ref.session_id} in {drop.origin} and {keep.origin}; scoring the newer")
