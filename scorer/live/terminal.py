"""Terminal text → plain text a judge can read.

Two entry points:

- `clean_terminal(text)` (pure) for captured pane text or logs: drops escape sequences
  and control bytes, applies carriage-return / backspace / erase-line overwrites the way a
  terminal line would, collapses progress-bar redraws to their final state and strips
  trailing whitespace. It is idempotent: cleaning clean text changes nothing.
- `render_cast(path)` for raw asciinema v2 recordings, which move the cursor around the
  whole screen; regexes cannot undo that, so the output is replayed through the `pyte`
  terminal emulator and the scrollback history plus the final screen are returned.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel

from scorer.errors import SourceError

# One token per escape sequence or control byte; everything between tokens is text.
_TOKEN = re.compile(
    r"""
    (?P<osc>\x1b\][^\x07\x1b]*(?:\x07|\x1b\\|(?=\x1b)|$))       # OSC, BEL/ST-terminated
  | (?P<string>\x1b[PX^_][\s\S]*?(?:\x1b\\|$))                   # DCS, SOS, PM, APC
  | (?P<csi>(?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~]))
  | (?P<esc>\x1b[ -/]*[0-~])                                     # single-char, charset
  | (?P<ctl>[\x00-\x08\x0b-\x1f\x7f])                             # other C0 (incl. \r \b)
    """,
    re.VERBOSE,
)
# Progress-bar states: a percentage, a block/heavy-line bar, or a bracketed ASCII bar.
_PROGRESS = re.compile(
    r"\d{1,3}(?:\.\d+)?\s?%|[█▉▊▋▌▍▎▏▓▒░━■]{2,}|\[[#=>\-. ]{4,}\]",
)
_BAR_CHARS = frozenset("█▉▊▋▌▍▎▏▓▒░━■")
# Cheap pre-checks: most captured text has no control bytes and few progress lines.
_ANY_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")
_MAX_BLANK_RUN = 2


class _Line:
    """One terminal line being written: a character buffer and a cursor column."""

    def __init__(self) -> None:
        self.buf: list[str] = []
        self.col = 0

    def write(self, text: str) -> None:
        if self.col > len(self.buf):
            self.buf.extend(" " * (self.col - len(self.buf)))
        # Slice assignment overwrites what is under the cursor and extends past the end.
        self.buf[self.col : self.col + len(text)] = text
        self.col += len(text)

    def control(self, ch: str) -> None:
        if ch == "\r":
            self.col = 0
        elif ch == "\b":
            self.col = max(0, self.col - 1)
        # Other C0 controls (BEL, NUL, SO/SI, lone ESC, ...) print nothing.

    def csi(self, params: str, final: str) -> None:
        n = _first_int(params)
        if final == "K":  # erase in line: 0 = to end, 1 = to start, 2 = whole line
            if n in (None, 0):
                del self.buf[self.col :]
            elif n == 1:
                self.buf[: self.col] = " " * min(self.col, len(self.buf))
            else:
                self.buf = []
        elif final == "G":  # cursor to absolute column
            self.col = max(0, (n or 1) - 1)
        elif final == "C":
            self.col += n or 1
        elif final == "D":
            self.col = max(0, self.col - (n or 1))
        # Vertical movement and screen erases need an emulator (see render_cast).

    def text(self) -> str:
        return "".join(self.buf).rstrip()


def _first_int(params: str) -> int | None:
    head = params.split(";", 1)[0].lstrip("?")
    return int(head) if head.isdigit() else None


def _apply_controls(text: str) -> list[str]:
    """Play `text` onto terminal lines; return them with escapes gone and overwrites done."""
    lines: list[str] = []
    line = _Line()

    def write_text(chunk: str) -> None:
        nonlocal line
        parts = chunk.split("\n")
        for i, part in enumerate(parts):
            if i:
                lines.append(line.text())
                line = _Line()
            line.write(part)

    pos = 0
    for m in _TOKEN.finditer(text):
        write_text(text[pos : m.start()])
        pos = m.end()
        if m.group("csi"):
            line.csi(m.group("params"), m.group("final"))
        elif m.group("ctl"):
            line.control(m.group("ctl"))
    write_text(text[pos:])
    lines.append(line.text())
    return lines


def _progress_key(line: str) -> str | None:
    """The label before a progress state (`Downloading x` in `Downloading x 40%`), or None."""
    if "%" not in line and "[" not in line and _BAR_CHARS.isdisjoint(line):
        return None
    m = _PROGRESS.search(line)
    return line[: m.start()].rstrip() if m else None


def _collapse_progress(lines: list[str]) -> list[str]:
    """Keep only the last of adjacent progress lines that share the same label."""
    out: list[str] = []
    prev_key: str | None = None
    for line in lines:
        key = _progress_key(line)
        if key is not None and key == prev_key and out:
            out[-1] = line
        else:
            out.append(line)
        prev_key = key
    return out


def _collapse_blanks(lines: list[str]) -> list[str]:
    out: list[str] = []
    blank_run = 0
    for line in lines:
        blank_run = blank_run + 1 if not line else 0
        if blank_run <= _MAX_BLANK_RUN:
            out.append(line)
    while out and not out[-1]:
        out.pop()
    while out and not out[0]:
        out.pop(0)
    return out


def clean_terminal(text: str) -> str:
    """Turn raw terminal output into plain text.

    Removes CSI, OSC (BEL- or ST-terminated), DCS/SOS/PM/APC strings, single-character
    and charset-selection escapes and other C0 controls (tabs and newlines stay). `\\r`,
    `\\b`, erase-line (`ESC[K`) and horizontal cursor moves are applied with terminal
    overwrite semantics (`50%\\r100%` → `100%`, `abc\\b\\bX` → `aXc`). Adjacent progress
    lines with the same label keep only their final state; runs of more than two blank
    lines shrink to two; trailing whitespace and surrounding blank lines go.

    Args:
        text: Raw terminal text (a pane capture, a log with escapes, ...).

    Returns:
        Clean text without escape or control characters other than `\\n` and `\\t`.
    """
    text = text.replace("\r\n", "\n")
    if _ANY_CONTROL.search(text):
        lines = _apply_controls(text)
    else:  # already plain (most tmux captures): nothing to play back
        lines = [line.rstrip() for line in text.split("\n")]
    lines = _collapse_progress(lines)
    return "\n".join(_collapse_blanks(lines))


class CastHeader(BaseModel):
    """What an asciinema v2 recording says about itself (header line and event times)."""

    width: int = 80
    height: int = 24
    started_at: datetime | None = None
    """The header's `timestamp` (Unix seconds), when present."""
    duration: float | None = None
    """Seconds: the header's `duration`, else the time of the last event."""
    title: str | None = None
    command: str | None = None


def is_cast_header(record: object) -> bool:
    """Whether a decoded first line is an asciinema v2 header."""
    return (
        isinstance(record, dict)
        and record.get("version") == 2
        and isinstance(record.get("width"), int)
        and isinstance(record.get("height"), int)
    )


def _header(raw: dict, last_time: float | None) -> CastHeader:
    stamp = raw.get("timestamp")
    duration = raw.get("duration")
    return CastHeader(
        width=int(raw.get("width") or 80),
        height=int(raw.get("height") or 24),
        started_at=datetime.fromtimestamp(stamp, UTC) if isinstance(stamp, int | float) else None,
        duration=float(duration) if isinstance(duration, int | float) else last_time,
        title=raw.get("title") if isinstance(raw.get("title"), str) else None,
        command=raw.get("command") if isinstance(raw.get("command"), str) else None,
    )


def _read_cast(path: Path) -> tuple[CastHeader, list[str]]:
    last_time: float | None = None
    try:
        with path.open(encoding="utf-8") as fh:
            header = json.loads(fh.readline())
            chunks = []
            for line in fh:
                if not line.strip():
                    continue
                event = json.loads(line)
                last_time = float(event[0])
                if event[1] == "o":
                    chunks.append(event[2])
    except (OSError, ValueError, IndexError, TypeError, KeyError) as exc:
        raise SourceError(f"cannot read asciinema cast {path}: {exc}") from exc
    if not isinstance(header, dict) or header.get("version") != 2:
        raise SourceError(f"{path} is not an asciinema v2 cast (bad header line)")
    return _header(header, last_time), chunks


def render_cast(path: Path, *, columns: int | None = None, rows: int | None = None) -> str:
    """Replay an asciinema v2 recording through a terminal emulator and return its text.

    Args:
        path: The `.cast` file (header JSON line, then `[time, "o", data]` events).
        columns: Screen width; defaults to the header's `width` (else 80).
        rows: Screen height; defaults to the header's `height` (else 24).

    Returns:
        Everything that scrolled off the top (history) followed by the final screen,
        passed through `clean_terminal`.

    Raises:
        SourceError: The file is missing or is not an asciinema v2 recording.
    """
    return load_cast(path, columns=columns, rows=rows)[1]


def load_cast(
    path: Path, *, columns: int | None = None, rows: int | None = None
) -> tuple[CastHeader, str]:
    """Like `render_cast`, and also return the recording's header (size, start, duration)."""
    header, chunks = _read_cast(path)
    columns = columns or header.width
    rows = rows or header.height
    from scorer.live._screen import ScrollbackScreen, replay, row_text  # pyte: casts only

    screen = ScrollbackScreen(columns, rows)
    replay(screen, "".join(chunks))
    visible = [row_text(screen.buffer[y], columns) for y in range(rows)]
    return header, clean_terminal("\n".join(screen.scrollback + visible))
