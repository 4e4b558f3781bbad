"""Reading JSONL files that may be broken, hostile or not files at all.

A bad line never sinks a transcript: a line that is not JSON (truncated, corrupt), not an
object, or nested thousands deep is skipped and counted; bytes that are not UTF-8 and
lone surrogate escapes are decoded with U+FFFD and counted. Anything but a regular file
(a FIFO would block `open` forever) is refused before it is opened.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import compress, count, islice, repeat
from operator import add
from pathlib import Path
from typing import Any

import orjson

from scorer.errors import SourceError

_BINARY_PROBE = 8192
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")

_BOM = b"\xef\xbb\xbf"
MAX_JSON_DEPTH = 200
"""Lines nested deeper than this are skipped: real transcript lines nest about 10 deep, and
deeper ones would exhaust the recursion limit of whatever walks them later."""


@dataclass
class JsonLines:
    """The decoded lines of a JSONL file and what could not be used as is."""

    records: list[dict[str, Any]] = field(default_factory=list)
    bad_lines: int = 0
    """Lines skipped: not JSON (truncated or corrupt), not an object, or nested too deep."""
    n_lines: int = 0
    deep_lines: int = 0
    """Of `bad_lines`, those nested deeper than `MAX_JSON_DEPTH`."""
    non_utf8_lines: int = 0
    """Lines that were not UTF-8, decoded with U+FFFD replacement characters and kept."""
    modified: str | None = field(default=None, compare=False)
    """The file's modification time (UTC, ISO): a session without timestamps of its own
    gets it as a labelled fallback end time (`SessionInfo.times_from == "file"`)."""

    def warnings(self) -> list[str]:
        """One sentence per kind of problem, for the dry run, the scorecard and stderr."""
        out = []
        if self.bad_lines:
            deep = f", {self.deep_lines} nested too deeply" if self.deep_lines else ""
            out.append(
                f"{self.bad_lines} of {self.n_lines} lines skipped "
                f"(not valid JSON objects: truncated or corrupt{deep})"
            )
        if self.non_utf8_lines:
            out.append(
                f"{self.non_utf8_lines} lines were not UTF-8 and were decoded with "
                "replacement characters"
            )
        return out


def json_depth_exceeds(obj: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when `obj` nests lists/dicts deeper than `limit` (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, dict | list))
    return False


def decode_line(raw: bytes) -> tuple[str, bool]:
    """UTF-8 text of one line, and whether it needed replacement characters."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError:
        return raw.decode("utf-8", errors="replace"), True


def parse_json_line(raw: bytes, stats: JsonLines | None = None) -> Any:
    """One JSONL line → its value, or None when it is unusable (counted in `stats`).

    Never raises: invalid JSON, a line nested thousands deep (`RecursionError` in the
    decoder) and non-UTF-8 bytes are all counted instead.

    orjson decodes the common case (valid UTF-8, no lone surrogate, no NaN) about 4x
    faster than `json`; anything it refuses goes through the standard library path,
    which keeps the lenient handling above.
    """
    if raw.startswith(_BOM):  # a file saved "with BOM" by an editor: its first line
        raw = raw[len(_BOM) :]
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _parse_lenient(raw, stats)
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth_exceeds(obj):
        if stats is not None:
            stats.deep_lines += 1
        return None
    return obj


def _parse_lenient(raw: bytes, stats: JsonLines | None) -> Any:
    """`parse_json_line` with the standard library: replacement decoding, lone surrogates."""
    text, replaced = decode_line(raw)
    if stats is not None and replaced:
        stats.non_utf8_lines += 1
    try:
        obj = json.loads(text)
        # Cheap count first: only a line with many brackets can nest deeply.
        deep = raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth_exceeds(obj)
    except RecursionError:
        deep, obj = True, None
    except ValueError:
        return None
    if deep:
        if stats is not None:
            stats.deep_lines += 1
        return None
    if _ESCAPED_SURROGATE.search(raw):  # `\ud800` alone decodes to a str no codec can write
        fixed = _replace_surrogates(obj)
        if fixed != obj and stats is not None:
            stats.non_utf8_lines += 1
        return fixed
    return obj


def _replace_surrogates(obj: Any) -> Any:
    """A copy of a decoded JSON value with lone surrogates replaced by U+FFFD."""
    if isinstance(obj, str):
        return _SURROGATE.sub("\ufffd", obj)
    if isinstance(obj, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_replace_surrogates(v) for v in obj]
    return obj


def decode_lines(lines: list[bytes], stats: JsonLines) -> list[Any]:
    """`parse_json_line` over many lines, with the common case kept in C.

    orjson decodes runs of good lines through `map`; a line it refuses goes through the
    lenient path alone and the run resumes after it. The depth guard then looks only at
    lines with enough brackets to nest too deeply.
    """
    objs: list[Any] = []
    while len(objs) < len(lines):
        try:
            # On a refused line, extend keeps what was decoded before it.
            objs.extend(map(orjson.loads, islice(lines, len(objs), None)))
        except orjson.JSONDecodeError:
            objs.append(_parse_lenient(lines[len(objs)], stats))
    openers = map(add, map(bytes.count, lines, repeat(b"[")), map(bytes.count, lines, repeat(b"{")))
    for i in compress(count(), map(MAX_JSON_DEPTH.__lt__, openers)):
        # A lenient line too deep is None already, so it is not counted twice.
        if json_depth_exceeds(objs[i]):
            stats.deep_lines += 1
            objs[i] = None
    return objs


def require_regular_file(path: Path) -> os.stat_result:
    """Refuse anything but a regular file (a FIFO would block `open` forever); returns
    its `stat`.

    Raises:
        SourceError: The path is missing, a dangling or looping symlink, or not a file.
    """
    try:
        info = path.stat()
    except OSError as exc:
        if path.is_symlink() and exc.errno == errno.ENOENT:
            raise SourceError(f"{path}: dangling symbolic link (to {os.readlink(path)})") from None
        if exc.errno == errno.ELOOP:
            raise SourceError(f"{path}: too many levels of symbolic links") from None
        raise SourceError(f"cannot read {path}: {(exc.strerror or str(exc)).lower()}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(f"{path} is not a regular file")
    return info


def read_jsonl(path: Path) -> JsonLines:
    """Read a JSONL file: one dict per line, blank lines ignored, bad lines counted.

    Raises:
        SourceError: The file is not a regular file, cannot be read, looks binary, or is a
            single JSON document (array/object) rather than JSON lines.
    """
    info = require_regular_file(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if b"\x00" in data[:_BINARY_PROBE]:
        raise SourceError(f"{path} is a binary file, not a JSONL transcript")
    out = JsonLines(modified=datetime.fromtimestamp(info.st_mtime, UTC).isoformat())
    data = data.removeprefix(_BOM)  # saved "with BOM" by an editor
    # Without a CR, splitting at LF cuts exactly where `splitlines` would, a bit faster.
    pieces = data.splitlines() if b"\r" in data else data.split(b"\n")
    lines = list(filter(bytes.strip, pieces))  # blank lines do not count
    out.n_lines = len(lines)
    out.records = [obj for obj in decode_lines(lines, out) if isinstance(obj, dict)]
    out.bad_lines = out.n_lines - len(out.records)
    if not out.records and out.bad_lines:
        raise SourceError(f"{path} is not a JSONL transcript (no line is a JSON object)")
    return out
