"""Signals read from (cleaned) terminal text, and a rough progress estimate.

Everything here is pure. Test summaries are parsed by `scorer.prepare.signals`
(`parse_test_output`: pytest, unittest, jest, vitest, go, cargo, mix); this module adds
mocha/npm (`N passing`, `N failing`, `npm ERR! Test failed`), tracebacks, error lines,
completion markers and whether a shell prompt came back after the agent exited.

Progress estimate (0-100), a sum of capped parts:

    files    = 30 * min(files_touched, 10) / 10     # git: committed + changed + new
    done     = 20 * min(accomplishments, 5) / 5     # e.g. from an earlier scorecard
    tests    = 40 * pass_rate                       # passed / (passed+failed+errors)
    finish   = 10 if a completion marker (or the shell prompt returned) else 0
    penalty  = 5 * min(recent_blockers, 4)          # tracebacks/errors in the last third
    percent  = clamp(files + done + tests + finish - penalty, 0, 100)

With no test run, `tests` is 0 and the other parts are scaled by 100/60 so a session
without tests can still reach 100. When a test run passed with nothing failing and a
completion marker is present, the estimate is at least 90.

A later passing test run supersedes what came before it: error lines and tracebacks
printed before the last green test summary are counted in `superseded_errors` and left
out of `error_lines` and `recent_blockers`, so a fixed failure is not reported as the
current blocker.

Phase: `complete` when percent >= 90 and there is completion evidence (a marker or a
green test run) and no recent blockers; `late` when >= 60; `mid` when >= 25; else
`early`.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, Field

from scorer.prepare.signals import TestRun, parse_test_output

Phase = Literal["early", "mid", "late", "complete"]

_TRACEBACK = re.compile(
    r"^Traceback \(most recent call last\):|^panic: |^thread '.*' panicked at", re.M
)
_ERROR_LINE = re.compile(
    r"^\s*(?:[\w.]*(?:Error|Exception)(?::|$)|error(?:\[E\d+\])?:|ERROR\b|FATAL\b|fatal:"
    r"|npm ERR!|npm error\b|E:\s|FAILED\b|Segmentation fault"
    r"|.*: command not found$|.*: No such file or directory$|.*Permission denied$)"
)
_COMPLETION = re.compile(
    r"all (?:\d+ )?tests? (?:have )?passed|task (?:is )?complete(?:d)?\b|✓ done|✔ done"
    r"|✅ (?:done|complete)|^done\.?$|successfully (?:completed|finished)|\bBUILD SUCCESSFUL\b",
    re.I | re.M,
)
_SHELL_PROMPT = re.compile(
    r"^(?:\([\w.-]+\) )?(?:[\w.-]+@[\w.-]+(?::\S*)?|\S*) ?[$#%❯] *$|^bash-[\d.]+[$#] *$"
)
_MOCHA = re.compile(r"^\s*(\d+) passing\b.*(?:\n\s*(\d+) pending)?(?:\n\s*(\d+) failing)?", re.M)
_NPM_FAIL = re.compile(r"^npm (?:ERR!|error) (?:Test failed|code ELIFECYCLE)", re.M)
_MAX_ERRORS = 20


class TerminalSignals(BaseModel):
    """What the terminal text says about the run."""

    tests: TestRun | None = None
    tracebacks: int = 0
    error_lines: list[str] = Field(default_factory=list)
    """Distinct error lines, first `_MAX_ERRORS` of them."""
    recent_blockers: int = 0
    """Tracebacks and error lines in the last third of the text."""
    superseded_errors: int = 0
    """Distinct error lines printed before a later passing test run (already fixed)."""
    completion_markers: list[str] = Field(default_factory=list)
    prompt_returned: bool = False
    """The last line is an idle shell prompt (the agent process exited)."""

    @property
    def has_errors(self) -> bool:
        return bool(self.tracebacks or self.error_lines)


class ProgressEstimate(BaseModel):
    percent: int
    phase: Phase
    parts: dict[str, float]
    """Each term of the formula, for explaining the number."""


def _mocha(text: str) -> TestRun | None:
    matches = _MOCHA.findall(text)
    if matches:
        passed, pending, failing = (int(x or 0) for x in matches[-1])
        return TestRun(framework="mocha", passed=passed, failed=failing, skipped=pending,
                       ok=failing == 0)  # fmt: skip
    if _NPM_FAIL.search(text):
        return TestRun(framework="npm", failed=1, ok=False)
    return None


def parse_tests(text: str) -> TestRun | None:
    """The last test summary in `text` (shared parsers first, then mocha/npm)."""
    return parse_test_output(text) or _mocha(text)


def _blockers(lines: list[str]) -> int:
    text = "\n".join(lines)
    return len(_TRACEBACK.findall(text)) + sum(1 for line in lines if _ERROR_LINE.match(line))


def _last_summary_start(lines: list[str]) -> int:
    """Index of the first line of the last test summary (the caller knows there is one).

    "Some summary starts at or after line i" only gets truer as i decreases, so a binary
    search needs O(log n) parses instead of one per line.
    """
    lo, hi = 0, len(lines) - 1  # invariant: a summary starts at or after `lo`
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if parse_tests("\n".join(lines[mid:])) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _error_lines(lines: list[str]) -> list[str]:
    return list(dict.fromkeys(line.strip() for line in lines if _ERROR_LINE.match(line)))


def extract_signals(text: str) -> TerminalSignals:
    """Test results, errors, completion markers and prompt state of cleaned terminal text.

    Errors printed before the last test run are dropped when that run passed (they are
    counted in `superseded_errors`).

    Args:
        text: Terminal text, already passed through `clean_terminal`.
    """
    lines = text.splitlines()
    tests = parse_tests(text)
    start = 0
    if tests is not None and tests.ok:
        start = _last_summary_start(lines)
        last_run = parse_tests("\n".join(lines[start:]))
        start = start if last_run is not None and last_run.ok else 0
    current = lines[start:]
    errors = _error_lines(current)
    superseded = set(_error_lines(lines[:start])) - set(errors)
    last = next((line for line in reversed(lines) if line.strip()), "")
    return TerminalSignals(
        tests=tests,
        tracebacks=len(_TRACEBACK.findall("\n".join(current))),
        error_lines=errors[:_MAX_ERRORS],
        recent_blockers=_blockers(lines[max(start, len(lines) * 2 // 3) :]),
        superseded_errors=len(superseded),
        completion_markers=list(dict.fromkeys(m.group(0) for m in _COMPLETION.finditer(text))),
        prompt_returned=bool(_SHELL_PROMPT.match(last.strip())),
    )


def pass_rate(run: TestRun | None) -> float | None:
    """passed / (passed + failed + errors), or None without a run that counted anything."""
    if run is None:
        return None
    total = run.passed + run.failed + run.errors
    return run.passed / total if total else None


def estimate_progress(
    signals: TerminalSignals,
    *,
    files_touched: int = 0,
    accomplishments: int = 0,
) -> ProgressEstimate:
    """The documented progress formula (module docstring) applied to the evidence.

    Args:
        signals: From `extract_signals`.
        files_touched: Files committed, changed or created (`GitProgress.touched`).
        accomplishments: Things already achieved (e.g. a previous scorecard's list).
    """
    rate = pass_rate(signals.tests)
    finished = bool(signals.completion_markers or signals.prompt_returned)
    parts = {
        "files": 30 * min(files_touched, 10) / 10,
        "done": 20 * min(accomplishments, 5) / 5,
        "tests": 40 * rate if rate is not None else 0.0,
        "finish": 10.0 if finished else 0.0,
        "penalty": -5.0 * min(signals.recent_blockers, 4),
    }
    if rate is None:
        for key in ("files", "done", "finish"):
            parts[key] *= 100 / 60
    percent = max(0, min(100, round(sum(parts.values()))))
    green = bool(signals.tests and signals.tests.ok and rate)
    if green and signals.completion_markers:
        percent = max(percent, 90)
    if percent >= 90 and (signals.completion_markers or green) and not signals.recent_blockers:
        phase: Phase = "complete"
    elif percent >= 60:
        phase = "late"
    elif percent >= 25:
        phase = "mid"
    else:
        phase = "early"
    return ProgressEstimate(percent=percent, phase=phase, parts=parts)
