"""goal_achievement from the requirement checklist: the rule the code checks (pure).

Each explicit requirement of the task gets one status:

    met            done, and the session shows it working (a check after its last
                   change passed, or its output is shown and right)
    likely_met     done (the action is shown) and nothing contradicts it, but the
                   session never re-checked it: *not shown* is not *not done*
    unmet          attempted, but the session shows it wrong, broken or incomplete, or
                   the agent says it could not do it
    not_attempted  nothing in the session addresses it

and says whether it is `core`: a deliverable the task exists for (a file, a result, a
working behaviour), as opposed to a constraint on how or a detail.

The goal follows from the checklist:

    complete   every requirement met or likely_met (`exceeded`: the same, plus useful
               work beyond the requirements, which the checklist cannot show)
    failed     no core requirement met or likely_met: the core of the task is not achieved
    partial    otherwise: some requirements done, some unmet or not attempted

Cards judged before this rule (prompt 2026-11-23.1) used `met` / `unmet` /
`unverified`; they are checked by the rule they were judged with: complete only when
everything is met, failed when nothing is, partial otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from scorer._text import plural
from scorer.models import RequirementCheck

GoalClass = Literal["failed", "partial", "complete"]
DONE = frozenset({"met", "likely_met"})
OPEN = frozenset({"unmet", "not_attempted"})
LEGACY = frozenset({"unverified"})
"""Statuses only older cards carry."""


def goal_from_statuses(items: Iterable[tuple[str, bool]]) -> GoalClass | None:
    """The goal class `(status, core)` pairs imply, or None for an empty checklist."""
    pairs = list(items)
    if not pairs:
        return None
    statuses = [status for status, _ in pairs]
    if any(s in LEGACY for s in statuses):  # the rule those cards were judged by
        met = [s == "met" for s in statuses]
        return "complete" if all(met) else "failed" if not any(met) else "partial"
    if all(s in DONE for s in statuses):
        return "complete"
    core = [s for s, is_core in pairs if is_core] or statuses
    return "partial" if any(s in DONE for s in core) else "failed"


def goal_from_checklist(checks: Sequence[RequirementCheck]) -> GoalClass | None:
    """The goal class a stored checklist implies (see the module docstring)."""
    return goal_from_statuses((c.status, c.core) for c in checks)


def goal_from_reply(reply: Mapping[str, Any]) -> GoalClass | None:
    """The goal class the checklist of a raw scoring reply (JSON object) implies."""
    items = reply.get("requirements") or []
    return goal_from_statuses((str(r.get("status")), bool(r.get("core", True))) for r in items)


def allowed_labels(goal: GoalClass) -> tuple[str, ...]:
    """The goal_achievement labels consistent with a checklist's goal class."""
    return ("complete", "exceeded") if goal == "complete" else (goal,)


def describe_conflict(goal: GoalClass | None, label: str | None, n: int) -> str | None:
    """Why `label` contradicts the checklist's goal class, or None when it does not."""
    if goal is None or label is None or label in allowed_labels(goal):
        return None
    return f"goal_achievement is {label} but its checklist of {plural(n, 'requirement')} implies {goal}"


def checklist_conflict(checks: Sequence[RequirementCheck], label: str | None) -> str | None:
    """The conflict between a card's goal label and its own checklist, if any."""
    return describe_conflict(goal_from_checklist(checks), label, len(checks))


def conflict_with_checklist(reply: Mapping[str, Any]) -> str | None:
    """The same check on a raw scoring reply."""
    label = (reply.get("goal_achievement") or {}).get("value")
    return describe_conflict(goal_from_reply(reply), label, len(reply.get("requirements") or []))
