"""Saved terminal output as a session: a pane capture (plain text) or an asciinema cast.

`score-session capture.txt` and `score-session run.cast` read what a terminal showed
after the fact, without tmux or git:

- a pane capture (`tmux capture-pane -p > capture.txt`, a terminal log) is cleaned with
  `clean_terminal` (escape sequences, `\\r` redraws, progress bars);
- an asciinema v2 recording is replayed through the `pyte` terminal emulator
  (`load_cast`), since its cursor movement cannot be undone by regexes.

Both are then split into TERMINAL events exactly like a live tmux pane, with the same
terminal signals and progress estimate in `Session.extra`, and a SYSTEM note telling the
judge that there is no git evidence.

The session id is the file's name and a digest of its bytes (`sources._ids`). Its times
are a recording's own, else the run folder's `label.json` (a Terminal-Bench pane), else
the file's modification time as a labelled fallback.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scorer.errors import EmptySessionError, SourceError
from scorer.live.terminal import clean_terminal, is_cast_header, load_cast
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.sources._common import number_events
from scorer.sources._ids import capture_id, file_digest
from scorer.sources._run_label import label_times
from scorer.sources._screen import screen_identity
from scorer.sources.tmux import NO_GIT_NOTE, terminal_events

_BINARY_PROBE = 8192


def looks_like_cast(path: Path, first_record: dict[str, Any] | None) -> bool:
    """A `.cast` file, or any file whose first JSON line is an asciinema v2 header."""
    return path.suffix.lower() == ".cast" or is_cast_header(first_record)


class TerminalFileSource:
    """A saved pane capture or terminal log (plain text, escapes allowed).

    A file that turns out to be an asciinema v2 recording is replayed as one, so
    `--source terminal` works for both.
    """

    kind = SourceKind.TERMINAL
    format = "pane capture"

    def __init__(self, path: Path, task: str | None = None) -> None:
        self.path = Path(path)
        self.task = task
        self._identity: dict[str, Any] = {}
        """`times_from` / `file_mtime` / `warnings`: where the session's times come from."""
        self._digest = ""
        """SHA-256 of the file's bytes (hex), for the session id."""
        self._width: int | None = None
        """The recording's terminal width (its wrapped lines are joined back)."""

    def load(self) -> Session:
        """Read, clean and split the file into a terminal-only session.

        Raises:
            SourceError: The file cannot be read, is binary, or is a broken recording.
            EmptySessionError: The file holds no visible text.
        """
        started, ended, title, text = self._read()
        if not text.strip():
            raise EmptySessionError(f"{self.path} shows no terminal text")
        terminal = terminal_events(text)
        from scorer.live.progress import estimate_progress, extract_signals  # casts only

        signals = extract_signals("\n".join(e.text for e in terminal))
        estimate = estimate_progress(signals)
        note = Event(
            index=0,
            kind=EventKind.SYSTEM,
            text=f"Saved terminal output ({self.format}: {self.path.name}). {NO_GIT_NOTE}",
            meta={"git": False},
        )
        return Session(
            session_id=capture_id(self.path.name, self._digest),
            source=SourceKind.TERMINAL,
            origin=str(self.path),
            title=title,
            started_at=started,
            ended_at=ended,
            task=self.task,
            events=number_events([note, *terminal]),
            extra={
                **self._identity,
                "screen": screen_identity("\n".join(e.text for e in terminal), self._width),
                "format": self.format,
                "git": None,
                "git_available": False,
                "terminal_only": True,
                "terminal_signals": signals.model_dump(mode="json"),
                "progress_percent": estimate.percent,
                "phase": estimate.phase,
                "progress_parts": estimate.parts,
            },
        )

    def _read(self) -> tuple[datetime | None, datetime | None, str | None, str]:
        """(started_at, ended_at, title, cleaned text)."""
        try:
            raw = self.path.read_bytes()
            mtime = datetime.fromtimestamp(self.path.stat().st_mtime, UTC)
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        if b"\x00" in raw[:_BINARY_PROBE]:
            raise SourceError(f"{self.path} is a binary file, not terminal text")
        if raw.lstrip().startswith(b"{") and self._is_cast(raw):
            self.format = CastSource.format
            return self._cast(hashlib.sha256(raw).hexdigest())
        self._digest = hashlib.sha256(raw).hexdigest()
        text = clean_terminal(raw.removeprefix(b"\xef\xbb\xbf").decode("utf-8", errors="replace"))
        # A capture has no clock of its own: its run's label, else the file's time.
        label = label_times(self.path)
        self._identity = {"file_mtime": mtime.isoformat()}
        if label.warning:
            self._identity["warnings"] = [label.warning]
        if label.started is not None:
            self._identity["times_from"] = "label"
        return label.started, label.ended, None, text

    def _cast(
        self, digest: str | None = None
    ) -> tuple[datetime | None, datetime | None, str | None, str]:
        try:
            self._digest = digest or file_digest(self.path)
        except OSError as exc:
            raise SourceError(f"cannot read {self.path}: {exc.strerror or exc}") from exc
        header, text = load_cast(self.path)
        self._width = header.width
        ended = None
        if header.started_at is not None and header.duration is not None:
            ended = header.started_at + timedelta(seconds=header.duration)
        self._identity = {"times_from": "recording"}
        return header.started_at, ended, header.title or header.command, text

    @staticmethod
    def _is_cast(raw: bytes) -> bool:
        try:
            return is_cast_header(json.loads(raw.split(b"\n", 1)[0]))
        except ValueError:
            return False


class CastSource(TerminalFileSource):
    """An asciinema v2 recording (`.cast`), replayed through a terminal emulator."""

    format = "asciinema recording"

    def _read(self) -> tuple[datetime | None, datetime | None, str | None, str]:
        return self._cast()
