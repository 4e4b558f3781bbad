"""Sources: anything that can produce a `Session`, and `resolve(arg)` to pick one.

`resolve` is the only resolver. File formats live in `FILE_SOURCES` (factories taking a
path and a task); every source, files, Langfuse and tmux, is registered in `SOURCES`
(factories taking the argument and a `SourceOptions`). `source="auto"` reads a path or a
local Claude Code session id first and falls back to Langfuse when it is configured.
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from scorer.errors import ConfigError, SourceError
from scorer.settings import get_settings
from scorer.sources._common import number_events
from scorer.sources._jsonl import parse_json_line, require_regular_file
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


@dataclass(frozen=True)
class SourceOptions:
    """What a source may need besides its argument (the CLI fills this from its flags)."""

    projects_root: Path | None = None
    """Claude projects root for session ids (default: `SCORER_CLAUDE_PROJECTS`)."""
    task: str | None = None
    """The task statement, when the source lacks it."""
    enrich_local: bool = False
    """Langfuse: also read the local Claude Code transcript of the session."""
    repo: Path | None = None
    """tmux: the git repository the agent works in."""
    since: datetime | None = None
    """tmux: git progress since this time."""
    base: str | None = None
    """tmux: git progress since this commit."""
    lines: int = 2000
    """tmux: scrollback lines to capture."""
    tmux_socket: str | None = None
    """tmux: server socket name (`tmux -L`)."""


def _file_source(name: str) -> Callable[[str, SourceOptions], SessionSource]:
    def make(arg: str, opts: SourceOptions) -> SessionSource:
        return resolve_file(arg, source=name, projects_root=opts.projects_root, task=opts.task)

    return make


def _langfuse(arg: str, opts: SourceOptions) -> SessionSource:
    from scorer.sources.langfuse import LangfuseSource

    return LangfuseSource(arg, enrich_local=opts.enrich_local, projects_root=opts.projects_root)


def _tmux(arg: str, opts: SourceOptions) -> SessionSource:
    from scorer.sources.tmux import TmuxSource

    return TmuxSource(
        arg,
        repo=opts.repo,
        since=opts.since,
        base=opts.base,
        prompt=opts.task,
        lines=opts.lines,
        socket_name=opts.tmux_socket,
    )


SOURCES: dict[str, Callable[[str, SourceOptions], SessionSource]] = {
    **{name: _file_source(name) for name in FILE_SOURCES},
    "langfuse": _langfuse,
    "tmux": _tmux,
}
"""Source name → factory taking `(arg, SourceOptions)`. Add new sources here."""

_SNIFF_LINES = 50
_SESSION_ID = re.compile(r"^[0-9a-fA-F-]{6,36}$")


def resolve(
    arg: str,
    *,
    source: str | None = None,
    projects_root: Path | None = None,
    task: str | None = None,
    options: SourceOptions | None = None,
) -> SessionSource:
    """Turn a CLI argument (a path, a session id, a tmux session) into a source.

    Args:
        arg: A transcript path, a session id (local Claude Code or Langfuse) or a tmux
            session name.
        source: A name in `SOURCES`; None or `"auto"`: a local path or session id first,
            then Langfuse when it is configured.
        projects_root: Shorthand for `options.projects_root`.
        task: Shorthand for `options.task`.
        options: Everything else a source may need.

    Raises:
        ConfigError: `source` names no known source.
        SourceError: The session cannot be found, or its format is unknown.
    """
    opts = options or SourceOptions()
    if projects_root is not None or task is not None:
        opts = replace(
            opts, projects_root=projects_root or opts.projects_root, task=task or opts.task
        )
    if source not in (None, "auto"):
        if source not in SOURCES:
            known = ", ".join(sorted(SOURCES))
            raise ConfigError(f"unknown source {source!r} (choose one of: {known})")
        return SOURCES[source](arg, opts)
    try:
        return resolve_file(arg, projects_root=opts.projects_root, task=opts.task)
    except SourceError:
        # a path that fails (missing, dangling, looping) is a file error, never a
        # Langfuse session id: ids have no `/` and name nothing on disk
        if looks_like_path(arg) or not get_settings().langfuse_configured:
            raise
    return SOURCES["langfuse"](arg, opts)


def looks_like_path(arg: str) -> bool:
    """Whether `arg` names a file-system path (it has a `/`, starts with `~` or `.`, or
    something, even a dangling symlink, is there)."""
    if "/" in arg or os.sep in arg or arg.startswith(("~", ".")):
        return True
    try:
        os.lstat(arg)
    except FileNotFoundError:
        return False
    except OSError:  # ENOTDIR, ELOOP, EACCES: something is there, or was meant to be
        return True
    return True


def resolve_file(
    arg: str,
    *,
    source: str | None = None,
    projects_root: Path | None = None,
    task: str | None = None,
) -> SessionSource:
    """A file source for a path or a local Claude Code session UUID.

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
    if not path.exists() and not path.is_symlink():
        if looks_like_path(arg):
            raise SourceError(_missing(path, arg))
        path = find_session(arg, projects_root or get_settings().claude_projects)
    if path.is_dir():
        raise SourceError(
            f"{path} is a directory; pass a transcript, pane capture or .cast file, or a session id"
        )
    require_regular_file(path)  # before sniffing: opening a FIFO would block forever
    return FILE_SOURCES[source or sniff_format(path)](path, task)


def _missing(path: Path, shown: str) -> str:
    """Why `path` cannot be opened, in words (a part of it is a file, a loop, missing);
    the message shows the argument as given (`Path` would fold a URL's `//`)."""
    try:
        path.stat()
    except OSError as exc:
        reason = {
            errno.ENOTDIR: "a part of the path is a file, not a directory",
            errno.ELOOP: "too many levels of symbolic links",
            errno.ENOENT: "no such file or directory",
        }.get(exc.errno or 0, (exc.strerror or str(exc)).lower())
        return f"{shown}: {reason}"
    return f"{shown}: cannot be read"


def open_file(path: Path) -> SessionSource:
    """The source of a file found on disk (a backfill's discovered file), its format
    sniffed; never searched for as a session id.

    Raises:
        SourceError: The file is gone, no regular file, or of an unknown format.
    """
    require_regular_file(path)  # before sniffing: opening a FIFO would block forever
    return FILE_SOURCES[sniff_format(path)](path, None)


def find_session(session_id: str, projects_root: Path) -> Path:
    """Find `<projects_root>/*/<session_id>.jsonl` (exact id first, then a unique prefix)."""
    looked = f"{projects_root}/*/{session_id}.jsonl"
    if not _SESSION_ID.match(session_id):
        raise SourceError(f"no such file: {session_id} (and it is not a session id)")
    if not projects_root.is_dir():
        raise SourceError(f"session {session_id} not found: {projects_root} does not exist")
    exact = sorted(projects_root.glob(f"*/{session_id}.jsonl"))
    if len(exact) > 1:  # the same id in two project folders: say so, pick none
        folders = ", ".join(p.parent.name for p in exact)
        raise SourceError(
            f"session {session_id} is in {len(exact)} project folders ({folders}); "
            "pass the transcript path instead"
        )
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
                obj = parse_json_line(raw) if raw.strip() else None
                if isinstance(obj, dict):
                    records.append(obj)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return records


__all__ = [
    "FILE_SOURCES",
    "SOURCES",
    "CastSource",
    "ClaudeCodeSource",
    "SessionSource",
    "SourceOptions",
    "StreamJsonSource",
    "TerminalFileSource",
    "find_session",
    "number_events",
    "open_file",
    "resolve",
    "resolve_file",
    "sniff_format",
]
