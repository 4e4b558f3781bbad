"""What a session's final message says: a success claim, an admission, hedges (pure).

The patterns read prose: code spans and fenced blocks are left out, since they quote error
messages ("Unable to avoid copy") that say nothing about how the session ended.
"""

from __future__ import annotations

import re

_NEGATIVE_RE = re.compile(
    r"\b(?:could not|couldn't|cannot|can't|unable to|failed to|not (?:yet )?(?:able|working"
    r"|complete|fixed|passing|resolved)|still fail(?:s|ing)?|does(?:n't| not) work"
    r"|did(?:n't| not) (?:pass|work|fix)|(?:tests?|checks?) (?:are )?failing|blocked"
    r"|(?:is|was) not (?:\w+ )?possible)\b",
    re.I,
)
_POSITIVE_RE = re.compile(
    r"\b(?:all (?:\d+ )?(?:tests|checks) (?:now )?pass(?:ed|ing)?|tests? (?:now )?pass(?:es|ed|ing)?"
    r"|successful(?:ly)?|done|complete[ds]?|fixed|implemented|resolved|works(?: now)?"
    r"|working (?:correctly|properly|as expected|fine)|(?:is|are) now (?:working|running|fixed)"
    r"|(?:has|have) been (?:created|completed|fixed|resolved|implemented|saved|written))\b|✅",
    re.I,
)


_CODE_RE = re.compile(r"```.*?(?:```|$)|`[^`\n]*`", re.S)
_FENCED_RE = re.compile(r"```.*?(?:```|$)", re.S)


def claims_success(text: str) -> bool | None:
    """True if `text` claims success, False if it admits failure, None if neither.

    Code spans and fenced blocks are ignored: they quote error messages ("Unable to
    avoid copy") that say nothing about how the session ended.
    """
    text = _CODE_RE.sub(" ", text)
    if _NEGATIVE_RE.search(text):
        return False
    if _POSITIVE_RE.search(text):
        return True
    return None


_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")


def closing_claim(text: str, max_chars: int = 240) -> str:
    """The sentence of a final message that decides `claims_success` (else its opening).

    Code is left out and markdown marks are dropped, so the quote reads as prose.
    """
    prose = _FENCED_RE.sub(" … ", text).replace("`", "")
    sentences = [" ".join(s.strip(" #*-•>").split()) for s in _SENTENCE_RE.split(prose)]
    sentences = [s for s in sentences if len(s) > 3]
    if not sentences:
        return ""
    pick = next((s for s in sentences if _NEGATIVE_RE.search(s)), None)
    opening = next((s for s in sentences if len(s.split()) >= 4), sentences[0])
    pick = pick or next((s for s in sentences if _POSITIVE_RE.search(s)), opening)
    return pick if len(pick) <= max_chars else pick[: max_chars - 1] + "…"


_CAVEAT_RE = re.compile(
    r"\b(?:mock(?:ed|s)?|stub(?:bed|s)?|simulat(?:ed|es|ion)|simplified"
    r"|approximat(?:e|ed|ion|ions)|workarounds?|hard-?coded|unfortunately|limitations?"
    r"|however|would need|should work|in a real|untested|not (?:been )?(?:tested|verified)"
    r"|(?:slightly )?below the (?:target|threshold|required))\b",
    re.I,
)


def caveats(text: str, task: str | None = None) -> list[str]:
    """Hedges in a final message: mock, simplified, workaround, however, untested...

    Words the task itself uses ("replace keys with placeholders") and quoted code are
    ignored. Returns the distinct phrases found, lower-cased, in order.
    """
    task_words = {m.lower() for m in _CAVEAT_RE.findall(task or "")}
    found = (m.lower() for m in _CAVEAT_RE.findall(_CODE_RE.sub(" ", text)))
    return list(dict.fromkeys(w for w in found if w not in task_words))
