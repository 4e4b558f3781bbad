"""Sources: anything that can produce a `Session`, and `resolve(arg)` to pick one.

File-based sources live in a small registry (`FILE_SOURCES`); Langfuse and tmux sources
need more than a path and are constructed by the CLI directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scorer.errors import ConfigError, SourceError
from scorer.settings import get_settings
from scorer.sources._common import number_events
from scorer.sources.base import SessionSource
from scorer.sources.claude_code import ClaudeCodeSource, is_transcript
from scorer.sources.stream_json import StreamJsonSource, is_stream_json
from scorer.sources.terminal import CastSource, TerminalFileSource, looks_like_cast

SourceFactory = Callable[[Path, str | None], SessionSource]

FILE_SOURCES: dict[str, SourceFactory] = {
    "claude-code": ClaudeCodeSource,
    "stream-json": StreamJsonSource,
    "terminal": TerminalFileSource,
    "asciinema": CastSource,
}
"""Source name → factory taking `(path, task)`. Add new file formats here."""

_SNIFF_LINES = 50
_SESSION_ID = re.compile(r"^[0-9a-fA-F-]{6,36}$")


def resolve(
    arg: str,
    *,
    source: str | None = None,
    projects_root: Path | None = None,
    task: str | None = None,
) -> SessionSource:
    """Turn a CLI argument (a file path or a session UUID) into a source.

    Args:
        arg: A transcript path, or a Claude Code session id (a unique prefix works),
            searched as `<projects_root>/*/<id>.jsonl`.
        source: Force a format (`claude-code`, `stream-json`, `terminal`, `asciinema`)
            instead of sniffing.
        projects_root: Where to look for session ids (default: settings'
            `claude_projects`, env `SCORER_CLAUDE_PROJECTS`).
        task: Explicit task statement handed to the source.

    Raises:
        ConfigError: `source` names no file-based source.
        SourceError: The file or session id cannot be found, or its format is unknown.
    """
    if source is not None and source not in FILE_SOURCES:
        known = ", ".join(sorted(FILE_SOURCES))
        raise ConfigError(f"unknown file source {source!r} (choose one of: {known})")
    path = Path(arg).expanduser()
    if not path.exists():
        path = find_session(arg, projects_root or get_settings().claude_projects)
    if path.is_dir():
        raise SourceError(
            f"{path} is a directory; pass a transcript, pane capture or .cast file, or a session id"
        )
    return FILE_SOURCES[source or sniff_format(path)](path, task)


def find_session(session_id: str, projects_root: Path) -> Path:
    """Find `<projects_root>/*/<session_id>.jsonl` (exact id first, then a unique prefix)."""
    looked = f"{projects_root}/*/{session_id}.jsonl"
    if not _SESSION_ID.match(session_id):
        raise SourceError(f"no such file: {session_id} (and it is not a session id)")
    if not projects_root.is_dir():
        raise SourceError(f"session {session_id} not found: {projects_root} does not exist")
    exact = sorted(projects_root.glob(f"*/{session_id}.jsonl"))
    if exact:
        return exact[0]
    matches = sorted(projects_root.glob(f"*/{session_id}*.jsonl"))
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise SourceError(f"session id prefix {session_id} is ambiguous ({len(matches)} matches)")
    raise SourceError(f"session {session_id} not found (looked for {looked})")


def sniff_format(path: Path) -> str:
    """Name of the file source that can read `path`, from its first JSON lines."""
    records = _head_records(path)
    if looks_like_cast(path, records[0] if records else None):
        return "asciinema"
    if not records:
        # not JSON lines: saved terminal text, unless it is empty or claims to be JSONL
        # (then the native source says what is wrong with it)
        return "claude-code" if _json_or_empty(path) else "terminal"
    if is_stream_json(records):
        return "stream-json"
    if is_transcript(records):
        return "claude-code"
    raise SourceError(f"{path} is neither a Claude Code transcript nor a stream-json run")


def _json_or_empty(path: Path) -> bool:
    if path.suffix.lower() in (".jsonl", ".json"):
        return True
    with path.open("rb") as handle:
        return not handle.read(8192).strip()


def _head_records(path: Path) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    try:
        with path.open("rb") as handle:
            head = handle.read(8192)
            if b"\x00" in head:
                raise SourceError(f"{path} is a binary file, not a JSONL transcript")
            handle.seek(0)
            for raw in handle:
                if len(records) >= _SNIFF_LINES:
                    break
                try:
                    obj = json.loads(raw) if raw.strip() else None
                except (ValueError, UnicodeDecodeError):
                    continue
                if isinstance(obj, dict):
                    records.append(obj)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return records


__all__ = [
    "FILE_SOURCES",
    "CastSource",
    "ClaudeCodeSource",
    "SessionSource",
    "StreamJsonSource",
    "TerminalFileSource",
    "find_session",
    "number_events",
    "resolve",
    "sniff_format",
]
