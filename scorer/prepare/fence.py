"""Session text made safe to lay out in the judge's timeline (pure functions).

The renderer owns the timeline's structure: only it starts a line with an event header
(`#17 …`), closes a subagent (`└ end subagent #3`) or writes the `=== TIMELINE ===` and
`SESSION:` lines. Text from the session is untrusted and reaches the timeline only through
this module:

- `clean_block` for multi-line text (outputs, prompts, messages): ANSI/terminal escape
  sequences, NUL and other control characters are dropped, lone surrogates become U+FFFD,
  a lone CR overwrites its line as on a terminal (a progress bar keeps its last state),
  and every other line break a reader knows (CRLF, VT, FF, FS/GS/RS, NEL, U+2028, U+2029)
  becomes `\\n`, so LF is the only line break left;
- `fence_block` then marks each line that a reader could take for a renderer line with
  `┆ `. "A reader" is lenient on purpose: the line is judged by its `skeleton` (NFKC,
  invisible and format characters removed, look-alike letters and signs mapped to ASCII),
  so `\\u200b#9`, `＃9`, `\\u00a0#9`, `♯9` or `═══ ТIMELINE ═══` count as well;
- `one_line` for fields that must stay on one line (paths, URLs, patterns, ids, model
  names, meta values): the text is cleaned and each line break is written as a visible
  escape (`\\n`, `\\r`, `\\u2028`, …).

`skeleton` is also what `scorer.judge.prompts.guard` uses to find tag look-alikes.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

__all__ = [
    "QUOTED_LINE_MARK",
    "clean_block",
    "fence_block",
    "looks_structural",
    "one_line",
    "skeleton",
]

QUOTED_LINE_MARK = "┆ "
"""Prefix of a line of event text that looks like a renderer line."""

# ECMA-48: CSI, OSC/DCS/SOS/PM/APC strings, two-character escapes; and the 8-bit CSI.
_ANSI = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~]?)"
    r"|\x9b[0-?]*[ -/]*[@-~]?"
)
# Every character `clean_block` must look at: controls (but TAB and LF), DEL, C1,
# the Unicode line/paragraph separators and lone surrogates.
_NEEDS_CLEANING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_BREAK = re.compile("\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x84\x86-\x9f]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\x0b": "\\v", "\x0c": "\\f", "\t": "\\t"}


def clean_block(text: str) -> str:
    """`text` without control sequences, with LF as its only line break."""
    if not _NEEDS_CLEANING.search(text):
        return text  # the common case, found by one C-speed scan
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = _overstrike(text.replace("\r\n", "\n"))
    text = _BREAK.sub("\n", text)
    text = _CONTROL.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


def _overstrike(text: str) -> str:
    """Each line as a terminal shows it: a lone CR returns to the line's start and what
    follows overwrites it (progress bars keep only their last state)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if "\r" in line:
            screen = ""
            for part in line.split("\r"):
                screen = part + screen[len(part) :]
            lines[i] = screen
    return "\n".join(lines)


def one_line(value: object) -> str:
    """`value` as text that cannot leave its line: breaks become visible escapes."""
    text = value if isinstance(value, str) else str(value)
    if not _NEEDS_CLEANING.search(text) and "\n" not in text:
        return text
    if "\x1b" in text or "\x9b" in text:
        text = _ANSI.sub("", text)
    text = _BREAK.sub(lambda m: _escape(m.group(0)), text).replace("\n", "\\n")
    text = _CONTROL.sub("", text)
    return _SURROGATE.sub("\ufffd", text)


def _escape(brk: str) -> str:
    if brk in _ESCAPES:
        return _ESCAPES[brk]
    if brk == "\r\n":
        return "\\r\\n"
    return f"\\u{ord(brk):04x}"


# --- the lenient reader's view of a line -------------------------------------------------

# Look-alikes of the characters our structure is made of, and of the Latin letters of its
# words (UTS #39 confusables for Cyrillic, Greek, Armenian, Cherokee, small capitals and
# IPA; NFKC already folds full-width, mathematical and circled forms).
_LOOKALIKES = {
    "#": "♯⋕⌗",
    "=": "═⹀꓿゠᐀⩵",
    "<": "‹˂❮❬⟨〈〈ᐸ⋖≺⧼",
    ">": "›˃❯❭⟩〉〉ᐳ⋗≻⧽",
    "/": "⁄∕⧸╱⟋",
    "\\": "⧵⟍╲∖",
    "-": "‐‑‒–—―−⁃﹣─━",
    "_": "ˍ‗",
    ":": "꞉∶։˸ː",
    "a": "аɑαⲁᴀ",
    "b": "Ьƅʙ",
    "c": "сϲⲥᴄ",
    "d": "ԁⅾᴅ",
    "e": "еҽᴇ",
    "g": "ɡցɢ",
    "h": "һհʜ",
    "i": "іıɩιⅰӏɪ",
    "j": "јϳᴊ",
    "k": "κᴋ",
    "l": "ӏⅼℓʟ",
    "m": "ⅿᴍ",
    "n": "ոռᴎɴ",
    "o": "оοօⲟσᴏ",
    "p": "рρⲣᴘ",
    "q": "ԛ",
    "r": "гᴦⲅʀ",
    "s": "ѕꜱ",
    "t": "τᴛ",
    "u": "սυᴜ",
    "v": "νѵᴠ",
    "w": "ԝѡᴡ",
    "x": "хχ",
    "y": "уүγʏ",
    "z": "ᴢ",
    "A": "АΑᎪ",
    "B": "ВΒᏴ",
    "C": "СϹᏟ",
    "D": "Ꭰ",
    "E": "ЕΕᎬ",
    "G": "Ꮐ",
    "H": "НΗᎻ",
    "I": "ІΙӀ",
    "J": "ЈᎫ",
    "K": "КΚᏦ",
    "L": "Ꮮ",
    "M": "МΜᎷ",
    "N": "Ν",
    "O": "ОΟՕ",
    "P": "РΡᏢ",
    "S": "ЅᏚ",
    "T": "ТΤᎢ",
    "W": "Ꮃ",
    "X": "ХΧ",
    "Y": "ҮΥ",
    "Z": "Ζ",
}
_CONFUSABLE = {ch: ascii_ for ascii_, chars in _LOOKALIKES.items() for ch in chars}
# Characters that show nothing but are not format characters (fillers, blank patterns).
_BLANK = frozenset("\u115f\u1160\u3164\uffa0\u2800\u17b4\u17b5")
_DROPPED = frozenset({"Cf", "Cc", "Cs", "Co", "Cn", "Mn", "Me", "Zl", "Zp"})


@lru_cache(maxsize=8192)
def _skeleton_char(ch: str) -> str:
    folded = unicodedata.normalize("NFKC", ch)
    return "".join(_fold(c) for c in folded)


def _fold(ch: str) -> str:
    if ch.isascii():
        return ch if ch.isprintable() or ch == "\t" else ""
    if ch in _CONFUSABLE:
        return _CONFUSABLE[ch]
    if ch in _BLANK or unicodedata.category(ch) in _DROPPED:
        return ""
    if ch.isspace():
        return " "
    digit = unicodedata.decimal(ch, None)
    if digit is not None:
        return str(digit)
    base = unicodedata.normalize("NFKD", ch)[0]  # é → e
    return base if base.isascii() and base.isalpha() else ch


def skeleton(text: str, visible: int | None = None) -> str:
    """How a lenient reader sees `text`: NFKC, invisible/format characters and combining
    marks removed, any space as a space, look-alike letters, digits and signs as ASCII.

    Args:
        text: Any text.
        visible: Stop once this many characters of output exist (the start of a line is
            all a structural check needs; invisible characters before it do not count).
    """
    if text.isascii():
        return text if visible is None else text[:visible]
    out: list[str] = []
    size = 0
    for ch in text:
        folded = ch if ch.isascii() else _skeleton_char(ch)
        out.append(folded)
        size += len(folded)
        if visible is not None and size >= visible:
            break
    return "".join(out)


# A renderer line, as seen through `skeleton`, at the start of a line: an event header
# (also `# 9`), a subagent's closing line, the timeline marker, the session facts line.
_STRUCTURE = re.compile(
    r"[ \t]*(?:#[ \t]*\d|[=~*_ \t-]*timeline\b|[└┗╚╰|l]?[ \t─━_-]*end[ \t]*sub|session[ \t]*:)",
    re.IGNORECASE,
)


def looks_structural(line: str) -> bool:
    """Whether a reader could take `line` for a line the renderer writes."""
    return bool(_STRUCTURE.match(skeleton(line[:400], visible=120)))


# Lines worth the lenient look: those whose first character (after spaces and tabs) is
# `#`, a rule character, a non-ASCII character, or starts one of the structure words.
# Everything else (most lines) is skipped by one regex scan.
_CANDIDATE = re.compile(
    r"^[ \t]*(?:[#=~*_|-]|[^\x00-\x7f]|[Tt][Ii][Mm][Ee]|[Ee][Nn][Dd][ \t]*[Ss]"
    r"|[Ss][Ee][Ss][Ss][Ii][Oo][Nn][ \t]*:|[Ll][ \t_-]*[Ee][Nn][Dd])",
    re.M,
)


def fence_block(text: str) -> str:
    """Prefix every line of (clean) `text` that `looks_structural` with `┆ `.

    Other lines are left byte-identical. Call `clean_block` first: this only splits on LF.
    """
    starts = [m.start() for m in _CANDIDATE.finditer(text)]
    if not starts:
        return text
    marked = [s for s in starts if looks_structural(text[s : _line_end(text, s)])]
    if not marked:
        return text
    parts, last = [], 0
    for s in marked:
        parts += [text[last:s], QUOTED_LINE_MARK]
        last = s
    parts.append(text[last:])
    return "".join(parts)


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return len(text) if end == -1 else end
