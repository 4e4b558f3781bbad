"""Requirement coverage: which of the task's listed requirements no action touched.

Requirements are the numbered (`1.`, `2)`) and bulleted (`-`, `*`, `•`) items of the
task text outside fenced code blocks; a task without such a list falls back to its sentences that name something
concrete. A requirement's key terms are the concrete things it names: backticked or
quoted text, file paths and file names, URLs, snake_case
identifiers and `--flags`. It is *covered* when one of its key terms appears in an
action (a tool call's input: a command, a path, written content), *uncovered* when none
does, and *unchecked* when it names nothing concrete (it can then not be matched, so it
is never reported as uncovered).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from scorer.models import Event, EventKind

MAX_REQUIREMENTS = 30
_ITEM_RE = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+(\S.*)$", re.M)
_FENCE_RE = re.compile(r"```.*?(?:```|$)", re.S)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+|\n+")
_TERM_RES = (
    re.compile(r"`([^`\n]{2,80})`"),  # backticked
    re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]"),  # double-quoted
    re.compile(r"(?<![\w])'([^'\n]{2,60})'(?![\w])"),  # single-quoted, not an apostrophe
    re.compile(r"https?://[^\s)\"'`]+"),  # URLs
    re.compile(r"(?<![\w/.])(?:~|\.{1,2})?/[\w.~-]+(?:/[\w.~*-]+)*"),  # paths
    re.compile(r"\b[\w-]+\.(?:[a-z][a-z0-9]{0,4})\b"),  # file names: out.txt, app.py
    re.compile(r"\b[A-Za-z][A-Za-z0-9]*_\w+\b"),  # snake_case
    re.compile(r"(?<![\w-])--[a-z][\w-]+"),  # --flags
)
_NOT_TERMS = {"e.g", "i.e", "etc", "vs"}


class Requirement(BaseModel):
    """One listed requirement of the task and whether an action addressed it."""

    text: str
    """The item's text (one line, at most 200 characters)."""
    terms: list[str] = Field(default_factory=list)
    """Its key terms: the concrete things it names."""
    matched: list[str] = Field(default_factory=list)
    """The key terms some action contains."""
    events: list[int] = Field(default_factory=list)
    """The first action (tool call) that contains each matched term."""
    status: Literal["covered", "uncovered", "unchecked"]
    """covered: a key term appears in an action; uncovered: none does; unchecked: no key terms."""


def parse_requirements(task: str | None) -> list[str]:
    """The numbered/bulleted items of a task, else its sentences that name key terms.

    Args:
        task: The task text (explicit task or the first user prompt).

    Returns:
        Requirement texts in task order, one line each, at most `MAX_REQUIREMENTS`.
    """
    if not task:
        return []
    task = _FENCE_RE.sub("\n", task)  # quoted code and logs list no requirements
    items = [m.group(1) for m in _ITEM_RE.finditer(task)]
    if not items:
        items = [s for s in _SENTENCE_RE.split(task) if key_terms(s)]
    return [" ".join(item.split())[:200] for item in items if item.strip()][:MAX_REQUIREMENTS]


def key_terms(text: str) -> list[str]:
    """The concrete things a requirement names, deduplicated case-insensitively."""
    found: dict[str, str] = {}
    for pattern in _TERM_RES:
        for match in pattern.finditer(text):
            term = (match.group(1) if pattern.groups else match.group(0)).strip().rstrip(".,;:")
            if _usable(term):
                found.setdefault(term.lower(), term)
    return list(found.values())


def _usable(term: str) -> bool:
    # placeholders like <your-token> or <x0_value> name nothing an action would contain
    return len(term) >= 2 and term.lower() not in _NOT_TERMS and not re.search(r"[<>]", term)


def requirement_coverage(task: str | None, events: Iterable[Event]) -> list[Requirement]:
    """Match each requirement of `task` against the session's actions.

    Args:
        task: The task text.
        events: All events (subagents included); only tool calls count as actions.

    Returns:
        One `Requirement` per parsed item, in task order.
    """
    texts = parse_requirements(task)
    if not texts:
        return []
    actions = [
        (e.index, "\n".join(_strings(e.tool_input or {})).lower())
        for e in events
        if e.kind == EventKind.TOOL_CALL
    ]
    return [_cover(text, actions) for text in texts]


def _cover(text: str, actions: Sequence[tuple[int, str]]) -> Requirement:
    terms = key_terms(text)
    matched, refs = [], []
    for term in terms:
        needle = term.lower()
        hit = next((index for index, haystack in actions if needle in haystack), None)
        if hit is not None:
            matched.append(term)
            refs.append(hit)
    status: Literal["covered", "uncovered", "unchecked"] = (
        "unchecked" if not terms else "covered" if matched else "uncovered"
    )
    return Requirement(text=text, terms=terms, matched=matched, events=refs, status=status)


def _strings(value: Any) -> Iterable[str]:
    """Every string (and number) inside a tool input, recursively."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif value is not None:
        yield str(value)
