"""Pure helpers for `models.SessionInfo.of`: a session's human title, its task text and
where its start/end times come from (no models, no I/O)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from pathlib import PurePath
from typing import Any, Literal

__all__ = [
    "TASK_CHARS",
    "TITLE_CHARS",
    "TimesFrom",
    "TitleFrom",
    "cut_text",
    "is_generic_name",
    "one_line",
    "path_title",
    "pick_title",
    "session_times",
]

TITLE_CHARS = 80
"""A title is at most this many characters (a cut one ends with `…`)."""
TASK_CHARS = 8_000
"""How much of the task text a scorecard keeps (the judge reads its own cut of it)."""
TitleFrom = Literal["session", "task", "first prompt", "screen", "folder", "file", "id"]
TimesFrom = Literal["events", "label", "recording", "capture", "file"]
_TEXT_ORDER: tuple[TitleFrom, ...] = ("session", "task", "first prompt", "screen")

_GENERIC_NAME = re.compile(
    r"^(?:claude code - )?turn \d+(?: \([0-9a-f]+\))?$|^conversational turn$|^claude response$",
    re.IGNORECASE,
)
"""Trace names the Langfuse Claude Code plugin gives every turn (not a session title)."""
_GENERIC_STEMS = frozenset(
    {"session", "transcript", "stream", "trace", "run", "output", "log", "events", "agent"}
)
"""File names that say nothing: `<task>/session.jsonl` is titled by its folder."""
_MARKUP = re.compile(r"</?[a-z][\w-]*>")


def one_line(text: str | None, limit: int = TITLE_CHARS) -> str | None:
    """The first line with words in it, whitespace collapsed, cut at a word to `limit`.

    Examples:
        >>> one_line("  Fix the login bug\\n\\nDetails: ...")
        'Fix the login bug'
        >>> one_line("x" * 100, limit=10)
        'xxxxxxxxx…'
    """
    for line in (text or "").splitlines():
        words = " ".join(_MARKUP.sub(" ", line).split())
        if any(ch.isalnum() for ch in words):
            return _cut_words(words, limit)
    return None


def _cut_words(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit - 1]
    space = head.rfind(" ")
    return (head[:space] if space > limit // 2 else head).rstrip(" ,.;:-") + "…"


def cut_text(text: str | None, limit: int) -> str | None:
    """`text` itself when short enough, else its first `limit` characters and a marker."""
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n… [{len(text) - limit:,} more characters not kept]"


def is_generic_name(name: str | None) -> bool:
    """True for the per-turn trace names of the Langfuse Claude Code plugin."""
    return not name or bool(_GENERIC_NAME.match(name.strip()))


def path_title(origin: str | None) -> tuple[str, TitleFrom] | None:
    """`(title, "folder")` for `<task>/session.jsonl`-style files, else `(file name,
    "file")`; None when `origin` is no file path (a URL, a tmux target)."""
    if not origin or "://" in origin or origin.startswith(("langfuse:", "tmux ", "tmux:")):
        return None
    path = PurePath(origin)
    if path.stem.lower() in _GENERIC_STEMS and path.parent.name:
        return path.parent.name, "folder"
    return (path.name, "file") if path.name else None


def pick_title(
    texts: tuple[str | None, str | None, str | None, str | None],
    origin: str | None,
    session_id: str,
) -> tuple[str, TitleFrom]:
    """The first line of the first of `texts` (the session's own title unless it is a
    generic trace name, the task, the first prompt, the prompt a terminal shows), else
    the folder or file name of `origin`, else the session id; and where it came from."""
    own, *rest = texts
    candidates = (None if is_generic_name(own) else own, *rest)
    for text, where in zip(candidates, _TEXT_ORDER, strict=True):
        if line := one_line(text):
            return line, where
    by_path = path_title(origin)
    return by_path if by_path is not None else (session_id, "id")


def session_times(
    started: datetime | None, ended: datetime | None, extra: dict[str, Any]
) -> tuple[datetime | None, datetime | None, TimesFrom | None]:
    """Start, end and their provenance: the session's own times (labelled by the source's
    `extra["times_from"]`, default `events`), else the file's modification time as the
    end and that minus the run's `duration_ms` as the start (`file`)."""
    if started or ended:
        return started, ended, extra.get("times_from", "events")
    mtime = extra.get("file_mtime")
    if not isinstance(mtime, str):
        return None, None, None
    end = datetime.fromisoformat(mtime)
    ms = extra.get("duration_ms")
    start = end - timedelta(milliseconds=ms) if isinstance(ms, int | float) else None
    return start, end, "file"
