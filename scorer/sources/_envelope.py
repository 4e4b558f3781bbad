"""What every transcript line says besides its payload (pure): ids, order and metadata.

Most lines of a native transcript are `progress` lines whose payload nobody reads, yet
each still counts for deduplication, segment order, the working directories, branches,
version, slug and the session's time span. These passes run over every line, so they
keep the per-line work in C (`map(dict.get, ...)`, sets, `min`/`max`) and fall back to a
plain loop only when a line carries something odd (an unhashable id, a repeated id).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from itertools import repeat
from operator import eq
from typing import Any

from scorer.sources._common import parse_ts

_CANONICAL_STAMP = b"9999-99-99T99:99:99.999Z"
_DIGITS_TO_NINE = bytes.maketrans(b"012345678", b"999999999")


@dataclass
class Envelope:
    """The session metadata that the lines' envelope fields add up to."""

    session_id: str | None = None
    """The first string `sessionId`."""
    cwds: list[str] = field(default_factory=list)
    """Distinct non-empty `cwd`s, in order of first appearance."""
    git_branches: list[str] = field(default_factory=list)
    version: str | None = None
    """The last string `version`."""
    slug: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None


def _values(records: list[dict[str, Any]], key: str) -> Iterator[Any]:
    return map(dict.get, records, repeat(key))


def dedupe(records: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The lines with the first of each string `uuid` kept, and how many were dropped."""
    uuids = list(_values(records, "uuid"))
    try:
        # No value repeats (lines without a uuid all share None): nothing to drop.
        if len(set(uuids)) + max(uuids.count(None) - 1, 0) == len(uuids):
            return records, 0
    except TypeError:  # an unhashable uuid (a list or an object)
        pass
    seen: set[str] = set()
    kept: list[dict[str, Any]] = []
    for record, uuid in zip(records, uuids, strict=True):
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        kept.append(record)
    return kept, len(records) - len(kept)


def order_segments(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Split at compaction roots and order the segments by their first timestamp.

    Files are appended chronologically, so this is normally a no-op; it matters when a
    resume or merge wrote a later segment above an earlier one.
    """
    # Counting every compact_boundary subtype (of any line type) can only overcount.
    if sum(map(eq, _values(records, "subtype"), repeat("compact_boundary"))) <= 1:
        return records  # at most one boundary: at most one segment after the first
    segments: list[list[dict[str, Any]]] = [[]]
    for record in records:
        if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
            segments.append([])
        segments[-1].append(record)

    def first_ts(segment: list[dict[str, Any]]) -> str:
        return next((r["timestamp"] for r in segment if isinstance(r.get("timestamp"), str)), "")

    ordered = [segments[0], *sorted(segments[1:], key=first_ts)]
    return [r for segment in ordered for r in segment]


def read_envelope(records: list[dict[str, Any]]) -> Envelope:
    """Session id, directories, branches, version, slug and time span of these lines."""
    started, ended = time_span(list(filter(None, _values(records, "timestamp"))))
    return Envelope(
        session_id=_first_string(records, "sessionId"),
        cwds=_distinct_strings(records, "cwd"),
        git_branches=_distinct_strings(records, "gitBranch"),
        version=_first_string(records[::-1], "version"),
        slug=_first_string(records[::-1], "slug"),
        started_at=started,
        ended_at=ended,
    )


def _first_string(records: list[dict[str, Any]], key: str) -> str | None:
    return next((v for v in _values(records, key) if isinstance(v, str)), None)


def _distinct_strings(records: list[dict[str, Any]], key: str) -> list[str]:
    try:
        distinct = dict.fromkeys(_values(records, key))  # keeps first-appearance order
    except TypeError:  # an unhashable value: only strings count anyway
        distinct = dict.fromkeys(v for v in _values(records, key) if isinstance(v, str))
    return [v for v in distinct if isinstance(v, str) and v]


def time_span(stamps: list[Any]) -> tuple[datetime | None, datetime | None]:
    """The earliest and latest of the timestamps that parse (`parse_ts`), or None.

    Claude Code writes every timestamp as `YYYY-MM-DDTHH:MM:SS.mmmZ`, and such strings sort
    like the instants they name, so `min`/`max` over the strings and two parses stand in
    for a parse per line. Anything else that could parse (offsets, other precisions)
    takes the exact path.
    """
    if stamps and _all_canonical(stamps):
        first, last = parse_ts(min(stamps)), parse_ts(max(stamps))
        if first is not None and last is not None:
            return first, last
    started = ended = None
    for ts in map(parse_ts, stamps):
        if ts is None:
            continue
        if started is None or ts < started:
            started = ts
        if ended is None or ts > ended:
            ended = ts
    return started, ended


def _all_canonical(stamps: list[Any]) -> bool:
    """True when every stamp is a string shaped `9999-99-99T99:99:99.999Z`.

    Shape, not validity: `2025-13-45T…` passes, but then it cannot parse, and a smallest
    or largest string that does not parse sends `time_span` down the exact path.
    """
    try:
        joined = "\n".join(stamps).encode("ascii")
    except (TypeError, UnicodeEncodeError):  # a non-string or non-ASCII stamp
        return False
    return joined.translate(_DIGITS_TO_NINE) == b"\n".join(repeat(_CANONICAL_STAMP, len(stamps)))
