"""Hook jobs the store could not take: a folder of small JSON files beside the store.

The hook ledger lives in the score store's SQLite file, so when that file is the trouble
(held locked past SQLite's wait by another process, not a database, on a full disk) the
ledger cannot record that a session is still to do. Such a job is written here instead,
one file per session, with the judged card when the judging was done and only the
storing failed (so the retry stores it and does not pay again); the next hook run's
worker retries it (`deferred.retry_deferred`).

    <store dir>/<store name>.hook-retry/<hash of the session>.json

Files are written atomically (a temporary file renamed), and a worker takes one by
renaming it to `…json.<pid>`, so two workers never retry the same job; a file taken by a
process that is gone is put back. A job that keeps failing waits longer each time (up to
`MAX_WAIT`) and is given up after `MAX_ATTEMPTS`, with a log line.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from scorer.jobs.hook.ledger import pid_alive
from scorer.jobs.hook.request import HookRequest

log = logging.getLogger("scorer.hook")

MAX_ATTEMPTS = 12
"""Retries before a job is given up (about a day of hook runs with the waits below)."""
FIRST_WAIT = 60.0
MAX_WAIT = 3600.0
"""A job that failed again waits 1, 2, 4 … minutes, at most an hour, for its next try."""


def retry_dir(store_path: Path) -> Path:
    """The retry folder of a store: beside it, named after it."""
    return store_path.with_name(f"{store_path.stem}.hook-retry")


@dataclass
class Deferred:
    """One job to retry."""

    session_id: str | None
    transcript: str | None
    event: str
    cwd: str | None = None
    reason: str | None = None
    enforce: bool = True
    """Apply the automatic-scoring policy (False: asked for by name)."""
    why: str = ""
    """Why it was deferred (the store's error)."""
    attempts: int = 1
    at: float = field(default_factory=time.time)
    """When it last failed (epoch seconds)."""
    fingerprint: str | None = None
    """The work the card below judged (`work_fingerprint`)."""
    card: dict[str, Any] | None = None
    """A card judged but not stored (its JSON), stored by the retry instead of judging."""

    @classmethod
    def of(cls, request: HookRequest, **fields: Any) -> Deferred:
        transcript = str(request.transcript) if request.transcript is not None else None
        return cls(request.session_id, transcript, request.event, request.cwd,
                   request.reason, **fields)  # fmt: skip

    def request(self) -> HookRequest:
        transcript = Path(self.transcript) if self.transcript else None
        return HookRequest(self.session_id, transcript, self.event, self.cwd, self.reason)

    def due(self, now: float) -> bool:
        """Time for another try: at once after the first failure, then backing off."""
        if self.attempts <= 1:
            return True
        return now - self.at >= min(FIRST_WAIT * 2 ** (self.attempts - 2), MAX_WAIT)


class RetryQueue:
    """The retry folder of one store (see the module doc)."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)

    def _path(self, job: Deferred) -> Path:
        key = job.session_id or job.transcript or "-"
        return self.folder / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.json"

    def add(self, job: Deferred) -> Path:
        """Write (or replace) the job's file. Keeps a card an earlier try had judged.

        Raises:
            OSError: The folder or the file cannot be written.
        """
        path = self._path(job)
        old = _read(path)
        if old is not None and job.card is None and old.card is not None:
            job.card, job.fingerprint = old.card, old.fingerprint
        self.folder.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        temporary.write_text(json.dumps(asdict(job)), encoding="utf-8")
        temporary.replace(path)
        return path

    def pending(self) -> list[Path]:
        """Every job file, those of vanished takers put back first."""
        if not self.folder.is_dir():
            return []
        for taken in self.folder.glob("*.json.*"):
            pid = taken.suffix.lstrip(".")
            if pid.isdigit() and not pid_alive(int(pid)):
                with contextlib.suppress(OSError):
                    taken.replace(taken.with_suffix(""))
        return sorted(self.folder.glob("*.json"), key=lambda p: p.stat().st_mtime)

    def take(self, path: Path, now: float | None = None) -> tuple[Deferred, Path] | None:
        """Take a due job for this process: the job and its taken file, which the caller
        removes when done (`release`); None when it is not due, gone or taken by another."""
        job = _read(path)
        if job is None or not job.due(time.time() if now is None else now):
            return None
        taken = path.with_name(f"{path.name}.{os.getpid()}")
        try:
            path.rename(taken)  # atomic: of two takers, one wins and one finds it gone
        except OSError:
            return None
        job = _read(taken)
        return (job, taken) if job is not None else None

    @staticmethod
    def release(taken: Path) -> None:
        """The taken job is done (or written back as a new try)."""
        with contextlib.suppress(OSError):
            taken.unlink()


def _read(path: Path) -> Deferred | None:
    try:
        return Deferred(**json.loads(path.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError) as exc:  # a damaged file: drop it, say so once
        log.warning("dropped an unreadable retry file %s: %s", path, exc)
        with contextlib.suppress(OSError):
            path.unlink()
        return None
