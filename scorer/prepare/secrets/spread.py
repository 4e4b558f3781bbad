"""A secret found once is a secret everywhere: the values the rules redacted in one place
are redacted wherever else they occur in the same text or session.

Agents repeat what they see: a key redacted in `os.environ["AWS_SECRET_ACCESS_KEY"] = "…"`
comes back bare in a `grep -r "<key>\\|…"` command, in the agent's summary ("Replaced the
secret key `<key>`"), in a Grep pattern or an Edit's `old_string`. No rule reads those
places (a bare token in prose has no name before it), so the values themselves are looked
for: one automaton pass over every string of the session, only when something was found.

Only distinctive values are spread: 8+ characters that are not mostly words
(`password4321seal`, `hunter22` are left where they were found; a token such as
`D4w8z9wK…` is not). A value's JSON-escaped form is looked for too.
"""

from __future__ import annotations

import json
from collections import Counter

from ahocorasick_rs import AhoCorasick, Implementation, MatchKind

from scorer.prepare.secrets.base import encodable, find_all_hits, note, wordy

_MIN_LEN = 8


def distinctive(value: str) -> bool:
    """True when `value` is unlikely to occur by accident (see the module docstring)."""
    v = value.strip()
    if len(v) < _MIN_LEN or "[REDACTED" in v or v.isdigit():
        return False
    classes = sum(
        (
            any(c.islower() for c in v),
            any(c.isupper() for c in v),
            any(c.isdigit() for c in v),
            any(not c.isalnum() for c in v),
        )
    )
    return classes >= 2 and not wordy(v)


class Spreader:
    """Finds the distinctive values of `values` (value → kind) in other texts."""

    def __init__(self, values: dict[str, str]) -> None:
        needles: dict[str, str] = {}
        for value, kind in values.items():
            v = value.strip()
            if distinctive(v) and encodable(v) == v:
                needles.setdefault(v, kind)
                escaped = json.dumps(v, ensure_ascii=False)[1:-1]
                needles.setdefault(escaped, kind)
        self.needles = list(needles)
        self.kinds = list(needles.values())
        self._automaton = (
            AhoCorasick(
                self.needles,
                matchkind=MatchKind.LeftmostLongest,
                implementation=Implementation.DFA,
            )
            if self.needles
            else None
        )

    def __bool__(self) -> bool:
        return self._automaton is not None

    def redact(self, text: str, counts: Counter[str]) -> str:
        """`text` with every occurrence of a value replaced by its kind's marker."""
        if self._automaton is None or not text:
            return text
        hits = find_all_hits(self._automaton, text)
        if not hits:
            return text
        out, done = [], 0
        for i, start, end in hits:
            kind = self.kinds[i]
            out += [text[done:start], f"[REDACTED:{kind}]"]
            note(counts, kind, self.needles[i])
            done = end
        return "".join(out) + text[done:]


def spread_within(text: str, values: dict[str, str], counts: Counter[str]) -> str:
    """Redact, in one text, the other occurrences of the values found in it."""
    return Spreader(values).redact(text, counts) if values else text
