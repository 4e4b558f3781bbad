"""Small text helpers for messages people read (CLI output, summaries, prompts)."""

from __future__ import annotations

_IRREGULAR = {"was": "were", "is": "are", "this": "these", "entry": "entries", "copy": "copies"}


def plural(n: int, word: str, many: str | None = None) -> str:
    """`n` and `word`, with the word's plural unless `n` is exactly 1.

    Args:
        n: The count.
        word: The singular (`file`, `error`, `test run`).
        many: The plural when adding `s` is wrong (`entries`); a few common ones are known.

    Examples:
        >>> plural(1, "error"), plural(2, "error"), plural(0, "file")
        ('1 error', '2 errors', '0 files')
        >>> plural(3, "entry")
        '3 entries'
    """
    return f"{n} {word if n == 1 else plural_word(word, many)}"


def plural_word(word: str, many: str | None = None) -> str:
    """The plural of `word` alone (for `"N failed"`-style phrases built elsewhere)."""
    if many is not None:
        return many
    head, _, last = word.rpartition(" ")
    last = _IRREGULAR.get(last) or (
        last + "es" if last.endswith(("s", "sh", "ch", "x")) else last + "s"
    )
    return f"{head} {last}" if head else last
