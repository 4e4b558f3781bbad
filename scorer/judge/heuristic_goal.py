"""The heuristic judge's goal_achievement: rules over the outcome signals, with a confidence.

Rules (`heuristic.HEURISTIC_VERSION`), the first that applies decides. *Delivered* means a
path the task names was written by the session (and its last use did not fail), or a port
it names answered and was left running (not killed, not in a Claude Code background
shell, which stops with the session).

  terminal  live tmux sessions and saved terminal output: a test summary decides as in
            `tests`; else a completion marker with no errors near the end → complete;
            errors near the end → partial if files changed, else failed; no marker →
            partial if files changed, else failed.
  ending    a final result flagged as error, or no final message → failed.
  cut_off   a headless run without its final `result` line → partial if something was
            delivered, else failed.
  admits    the closing report admits failure → partial if something was delivered, else
            failed.
  tests     a test-runner run after the last edit: all pass → complete (exceeded when the
            agent also added passing tests the task did not name, touched every
            requirement and had no errors); some pass → partial; none → failed.
  neutral   the closing report claims nothing: failed when headless (its report is the
            agent's last word), partial in interactive sessions.
  broken    success claimed, but a named deliverable is shown broken: a URL whose last
            request failed, a port whose server was killed or ends with the session, a
            named path removed or looked for and missing → failed when nothing else was
            delivered, else partial.
  doubted   success claimed with doubts → partial: the last check after the last edit
            failed, nothing checked the work after the last edit, the last tool call
            failed, hedges in the closing report, or most named requirements untouched.
  checked   otherwise (success claimed, checked after the last edit) → complete.

The confidence of a label is how often its rule was right on the dev split of the
Terminal-Bench runs (`RULE_ACCURACY`, counted by `benchmarks/validity.py report`),
smoothed as (right + 1) / (n + 2), so a rule seen rarely stays near 0.5.
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Protocol

from scorer._text import plural
from scorer.models import Event
from scorer.prepare.artefacts import Artefact
from scorer.prepare.signals import Signals


class _Facts(Protocol):
    """What the goal rules read of the heuristic judge's per-session facts
    (`heuristic._Facts`; a protocol, so this module does not import its caller)."""

    created: list[str]
    files_changed: int
    headless: bool
    last_call_failed: bool
    last_result_event: Event | None
    task: str | None
    terminal: dict[str, Any] | None


_TEST_FILE_RE = re.compile(
    r"(?:^|/)(?:tests?/|test_[^/]*$|[^/]*_test\.\w+$|[^/]*\.(?:test|spec)\.\w+$)"
)
RULE_ACCURACY: dict[str, tuple[int, int]] = {
    # rule → (runs its label was right on, runs it fired on) over the 39 dev runs, printed
    # by `benchmarks/validity.py report`; never counted on the test split
    "ending": (0, 0),
    "cut_off": (4, 4),
    "admits": (2, 3),
    "tests": (1, 1),
    "neutral": (1, 1),
    "broken": (3, 4),
    "doubted": (2, 4),
    "checked": (14, 22),
    "terminal": (0, 0),
}


class Goal(NamedTuple):
    """The goal label, why, the events to cite, the rule that decided and its confidence."""

    label: str
    why: str
    refs: list[int]
    rule: str

    @property
    def confidence(self) -> float:
        right, n = RULE_ACCURACY.get(self.rule, (0, 0))
        return round((right + 1) / (n + 2), 2)


def delivered(artefacts: list[Artefact]) -> list[Artefact]:
    """Named paths the session wrote (last use not failed) and ports left answering."""
    return [
        a
        for a in artefacts
        if (a.kind == "path" and a.status == "produced" and "last_use_failed" not in a.flags)
        or (a.kind == "port" and a.status == "answered" and not a.flags)
    ]


def broken(artefacts: list[Artefact]) -> list[Artefact]:
    """Named deliverables the session shows broken (see the module docstring)."""
    return [
        a
        for a in artefacts
        if (a.kind == "url" and a.status == "failed")
        or (a.kind == "port" and (a.status == "failed" or a.flags))
        or (a.kind == "path" and a.status in ("removed", "missing"))
    ]


def goal(s: Signals, f: _Facts) -> Goal:
    """The goal label by the first rule of the module docstring that applies."""
    fv = s.final_verification
    if f.terminal is not None:
        return _test_goal(s, f) if fv.kind == "test" else _terminal_goal(s, f)
    end = [s.final_message_event or 0]
    if f.last_result_event is not None and f.last_result_event.is_error:
        return Goal(
            "failed", "the run ended with an error result", [f.last_result_event.index], "ending"
        )
    if s.final_message_event is None:
        return Goal("failed", "no final message: the session was cut off", [], "ending")
    got = delivered(s.artefacts)
    shown = (
        f" ({', '.join(a.name for a in got[:3])} delivered)"
        if got
        else " (nothing named delivered)"
    )
    if s.cut_off:
        return Goal(
            "partial" if got else "failed",
            "headless run cut off before its report" + shown,
            end,
            "cut_off",
        )
    if s.claims_success is False:
        return Goal(
            "partial" if got else "failed",
            "the closing report admits failure" + shown,
            end,
            "admits",
        )
    if fv.kind == "test":
        return _test_goal(s, f)
    if s.claims_success is None:
        if f.headless:
            return Goal(
                "failed",
                "the closing report claims nothing: the work was not finished",
                end,
                "neutral",
            )
        return Goal(
            "partial",
            "neutral ending: the user may still be working with the agent",
            end,
            "neutral",
        )
    bad = broken(s.artefacts)
    if bad:
        why = "success claimed, but " + "; ".join(f"{a.kind} {a.name}: {a.note}" for a in bad[:2])
        others = [a for a in got if a not in bad]
        return Goal(
            "partial" if others else "failed",
            why,
            end + [e for a in bad for e in a.events[-1:]],
            "broken",
        )
    doubts = _doubts(s, f)
    if doubts:
        why = "; ".join(text for text, _ in doubts)
        return Goal(
            "partial", f"success claimed, but {why}", end + [ref for _, ref in doubts], "doubted"
        )
    return Goal("complete", *_checked_why(s), "checked")


def _checked_why(s: Signals) -> tuple[str, list[int]]:
    """How a believed success claim was checked, in words, with the events to cite."""
    fv = s.final_verification
    if fv.kind is not None:
        refs = [r for r in (fv.call_event, fv.result_event) if r]
        return f"success claimed and checked after the last edit ({fv.kind})", refs
    last = max(s.checks_after_edit, key=lambda c: c.call_event, default=None)
    if last is not None:  # e.g. only the output of a background command was read
        return (
            f"success claimed and checked after the last edit ({last.kind})",
            [last.call_event, last.result_event],
        )
    return "success claimed; nothing was edited and nothing checked", [s.final_message_event or 0]


def _test_goal(s: Signals, f: _Facts) -> Goal:
    """A test run after the last edit decides (it is stronger than any claim)."""
    fv = s.final_verification
    run = next(r for r in reversed(s.test_runs) if r.call_event == fv.call_event)
    refs = [r for r in (run.call_event, run.result_event) if r]
    if run.ok and run.failed == 0 and run.errors == 0:
        label = "exceeded" if _exceeded(s, f) else "complete"
        return Goal(
            label,
            f"tests after the last edit pass ({run.framework}, {run.passed} passed)",
            refs,
            "tests",
        )
    if run.passed > 0:
        return Goal(
            "partial",
            f"tests after the last edit: {run.passed} pass, {run.failed} fail",
            refs,
            "tests",
        )
    return Goal(
        "failed", f"tests after the last edit fail ({run.framework}, none passed)", refs, "tests"
    )


def _doubts(s: Signals, f: _Facts) -> list[tuple[str, int]]:
    """Reasons not to believe a success claim, each with one event to cite."""
    fv = s.final_verification
    checkable = [r for r in s.requirements if r.status != "unchecked"]
    uncovered = s.uncovered_requirements
    last_error = s.error_events[-1] if s.error_events else 0
    last_check = max(s.checks_after_edit, key=lambda c: c.call_event, default=None)
    doubts = [
        (fv.status == "missing" and fv.last_edit_event is not None and not s.checks_after_edit,
         "nothing checked the work after the last edit", fv.last_edit_event or 0),
        (last_check is not None and last_check.status == "failed",
         f"the last check after the last edit failed ({last_check.detail})" if last_check else "",
         last_check.result_event if last_check else 0),
        (f.last_call_failed, "the last tool call failed", last_error),
        (bool(s.final_caveats), f"the closing report hedges ({', '.join(s.final_caveats[:3])})",
         s.final_message_event or 0),
        (len(uncovered) >= 2 and len(uncovered) * 2 > len(checkable),
         f"{len(uncovered)} of {len(checkable)} requirements untouched", 0),
    ]  # fmt: skip
    return [(why, ref) for hit, why, ref in doubts if hit]


def _exceeded(s: Signals, f: _Facts) -> bool:
    """Evidence beyond the requirements: the agent added tests of its own, ran them after
    the last edit and they pass, every requirement was touched, and nothing failed."""
    task = (f.task or "").lower()
    new_tests = [
        p for p in f.created if _TEST_FILE_RE.search(p) and p.rsplit("/", 1)[-1].lower() not in task
    ]
    return bool(new_tests) and not s.uncovered_requirements and not s.error_events


def _terminal_goal(s: Signals, f: _Facts) -> Goal:
    """Live sessions: a completion marker with no recent errors is success."""
    t = f.terminal or {}
    markers, blockers = t.get("completion_markers") or [], t.get("recent_blockers") or 0
    refs = s.error_events[-3:]
    if markers and not blockers:
        return Goal(
            "complete",
            f"terminal shows completion ({markers[-1]!r}), no recent errors",
            [],
            "terminal",
        )
    if blockers:
        outcome = "partial" if f.files_changed else "failed"
        return Goal(
            outcome,
            f"{plural(blockers, 'error')} near the end of the terminal output",
            refs,
            "terminal",
        )
    if f.files_changed:
        return Goal(
            "partial",
            f"{plural(f.files_changed, 'file')} changed, no completion marker",
            [],
            "terminal",
        )
    return Goal("failed", "no changes and no completion marker in the terminal", [], "terminal")
