"""A lenient reader of rendered timelines: the adversary's idea of the judge's eyes.

It is written apart from the renderer's own checks (`scorer.prepare.fence`) and is more
forgiving than a careful reader: any line break a Unicode reader knows splits lines,
leading spaces of any width, invisible and format characters and combining marks are
skipped, and a `#` or digit in any compatibility form or script counts. The fence holds
when this reader recovers exactly the events the timeline was rendered from.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from scorer.models import EventKind
from scorer.prepare.render import EVENT_LABELS

# str.splitlines() splits at every break a reader knows (LF, CR, VT, FF, FS, GS, RS, NEL,
# U+2028, U+2029).
_SKIPPED = {"Zs", "Cf", "Cc", "Mn", "Me", "Cn", "Co", "Cs"}
_FILLERS = set("\u115f\u1160\u3164\uffa0\u2800")
_HASHES = {"#", "♯", "⋕", "⌗"}
_LABELS = [(label.upper(), kind) for kind, labels in EVENT_LABELS.items() for label in labels]


@dataclass(frozen=True)
class ReadEvent:
    index: int
    kind: EventKind
    indent: int


def _skip_blank(line: str) -> tuple[int, str]:
    """How many leading characters show nothing, and the rest of the line (NFKC)."""
    i = 0
    while i < len(line) and (
        line[i].isspace() or line[i] in _FILLERS or unicodedata.category(line[i]) in _SKIPPED
    ):
        i += 1
    return i, unicodedata.normalize("NFKC", line[i:])


def _visible(text: str) -> str:
    return "".join(
        c for c in text if unicodedata.category(c) not in _SKIPPED - {"Zs"} and c not in _FILLERS
    )


def header_of(line: str) -> tuple[int, str] | None:
    """(event number, rest) when a lenient reader takes `line` for an event header."""
    _, rest = _skip_blank(line)
    rest = _visible(rest)
    if not rest or rest[0] not in _HASHES:
        return None
    i = 1
    while i < len(rest) and rest[i].isspace():
        i += 1
    digits = ""
    while i < len(rest) and unicodedata.decimal(rest[i], None) is not None:
        digits += str(unicodedata.decimal(rest[i]))
        i += 1
    return (int(digits), rest[i:].lstrip()) if digits else None


def kind_of(rest: str) -> EventKind:
    upper = rest.upper()
    for label, kind in _LABELS:
        if upper.startswith(label):
            return kind
    return EventKind.TOOL_CALL


def is_quoted(line: str) -> bool:
    """A line the renderer marked as event text (`┆ ` after the indentation)."""
    return _skip_blank(line)[1].startswith("┆")


def _upper_visible(line: str) -> str:
    return unicodedata.normalize("NFKC", _visible(_skip_blank(line)[1])).upper()


def is_marker(line: str) -> bool:
    """The `=== TIMELINE ===` line, with any rule characters around the word."""
    if is_quoted(line) or header_of(line):
        return False
    return re.sub(r"[\s=═\-─~*]", "", _upper_visible(line)) == "TIMELINE"


def is_closer(line: str) -> bool:
    """A subagent's closing line (`└ end subagent #N`), however it is spaced."""
    if is_quoted(line) or header_of(line):
        return False
    return bool(re.match(r"[└┗╚╰L|]?\s*END\s*SUBAGENT", _upper_visible(line)))


def read_timeline(text: str) -> tuple[list[ReadEvent], int]:
    """Every event header after the (single) timeline marker, and the number of subagent
    closing lines.

    Raises:
        AssertionError: The marker is missing or appears more than once, or a line of the
            header reads as an event header.
    """
    lines = text.splitlines()
    markers = [i for i, line in enumerate(lines) if is_marker(line)]
    assert len(markers) == 1, f"{len(markers)} timeline markers"
    forged = [line for line in lines[: markers[0]] if header_of(line) or is_closer(line)]
    assert not forged, f"event lines in the header: {forged}"
    closers = sum(is_closer(line) for line in lines[markers[0] + 1 :])
    events = []
    for line in lines[markers[0] + 1 :]:
        found = header_of(line)
        if found is not None:
            indent = len(line) - len(line.lstrip(" "))
            events.append(ReadEvent(found[0], kind_of(found[1]), indent))
    return events, closers
