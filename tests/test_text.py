"""`plural`: counts in messages read "1 error", "2 errors", "0 files"."""

from __future__ import annotations

import pytest

from scorer._text import plural, plural_word


@pytest.mark.parametrize(
    ("n", "word", "expected"),
    [
        (1, "error", "1 error"),
        (0, "error", "0 errors"),
        (2, "uncommitted file", "2 uncommitted files"),
        (1, "test run", "1 test run"),
        (3, "push", "3 pushes"),
        (2, "match", "2 matches"),
        (2, "entry", "2 entries"),
        (-1, "file", "-1 files"),
    ],
)
def test_plural(n, word, expected):
    assert plural(n, word) == expected


def test_explicit_plural_form():
    assert plural(2, "child", "children") == "2 children"
    assert plural(1, "child", "children") == "1 child"
    assert plural_word("API error") == "API errors"
