"""The terminal emulator behind asciinema replays (pyte), imported only when a cast is read."""

from __future__ import annotations

import copy
from typing import Any

import pyte


def row_text(row: dict, columns: int) -> str:
    return "".join(row[x].data for x in range(columns)).rstrip()


# Private modes that switch to the alternate screen (vim, less, htop, ...).
_ALT_SCREEN = frozenset({47, 1047, 1049})


class ScrollbackScreen(pyte.Screen):
    """A screen that keeps, as text, every line scrolled off its top, and an alternate
    screen (which pyte lacks) so a full-screen program does not overwrite the shell's.

    pyte's own HistoryScreen wraps every attribute access (3x slower on real casts) and
    caps its history; this keeps only what we need. While the alternate screen is
    active nothing goes to the scrollback: like a real terminal, the transcript keeps
    the shell session, not an editor's redraws.
    """

    def __init__(self, columns: int, lines: int) -> None:
        super().__init__(columns, lines)
        self.scrollback: list[str] = []
        self._main: tuple[dict, pyte.screens.Cursor] | None = None

    def index(self) -> None:
        top, bottom = self.margins or (0, self.lines - 1)
        whole = top == 0 and self.cursor.y == bottom  # a whole-screen scroll, not a region
        if whole and self._main is None:
            self.scrollback.append(row_text(self.buffer[top], self.columns))
        super().index()

    def set_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALT_SCREEN.intersection(modes) and self._main is None:
            lines = {y: copy.copy(line) for y, line in self.buffer.items()}
            self._main = (lines, copy.copy(self.cursor))
            self.erase_in_display(2)
        super().set_mode(*modes, **kwargs)

    def reset_mode(self, *modes: int, **kwargs: Any) -> None:
        if kwargs.get("private") and _ALT_SCREEN.intersection(modes) and self._main:
            lines, cursor = self._main
            self._main = None
            self.buffer.clear()
            self.buffer.update(lines)
            self.cursor = cursor
            self.dirty.update(range(self.lines))
        super().reset_mode(*modes, **kwargs)


def replay(screen: ScrollbackScreen, output: str) -> None:
    """Feed a recording's output through the emulator."""
    pyte.Stream(screen).feed(output)
