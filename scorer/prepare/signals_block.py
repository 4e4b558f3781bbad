"""The objective signals as the text both judges read at the top of the material (pure).

Two parts, each line with the event numbers to look at:

- what the session shows about the outcome: the closing report (quoted, never trusted),
  the last edit, the last state of every check after it, checks that failed before it and
  never ran again, and what happened to each path, URL, port and command the task names;
- process signals: tool use, errors, test-runner runs, files, compactions, requirement
  coverage by key terms.

Values are written as words, never as Python literals (`None`, `True`).
"""

from __future__ import annotations

from collections import Counter

from scorer.prepare.fence import one_line
from scorer.prepare.signals import Signals
from scorer.prepare.verification import CheckState

MAX_CHECKS = 8
MAX_ARTEFACTS = 12


def _refs(items: list[int], n: int = 12) -> str:
    return " ".join(f"#{i}" for i in items[:n]) + (" …" if len(items) > n else "")


def check_text(c: CheckState) -> str:
    """One check as `#N→#M passed (run, exit 0): Bash: …`."""
    detail = f", {c.detail}" if c.detail else ""
    runs = f" ({c.runs} runs)" if c.runs > 1 else ""
    return f"#{c.call_event}→#{c.result_event} {c.status} ({c.kind}{detail}): {c.command}{runs}"


def closing_line(s: Signals) -> str:
    """Where the session ended and what its closing report says."""
    where = f"#{s.final_message_event}" if s.final_message_event else "none"
    quote = f": “{s.closing_claim}”" if s.closing_claim else ""
    hedges = f" (hedges: {', '.join(s.final_caveats)})" if s.final_caveats else ""
    if s.cut_off:
        return (
            "- closing report: none: the run stopped before its final result line (cut off); "
            f"its last message is {where}{quote}"
        )
    stance = {
        True: "claims success",
        False: "admits failure",
        None: "claims neither success nor failure",
    }
    return f"- closing report {where}: {stance[s.claims_success]}{quote}{hedges}"


def outcome_lines(s: Signals) -> list[str]:
    """The outcome part: closing report, checks after the last edit, named artefacts."""
    fv = s.final_verification
    lines = [
        "## What the session shows about the outcome (computed from the events: a map to "
        "the evidence, not a verdict)",
        closing_line(s),
        f"- last edit: #{fv.last_edit_event}"
        if fv.last_edit_event
        else "- last edit: none (no file was edited)",
    ]
    after = s.checks_after_edit
    if after:
        lines.append("- checks after the last edit (the last state of each):")
        if len(after) > MAX_CHECKS:
            lines.append(f"  - … {len(after) - MAX_CHECKS} earlier ones")
        lines += [f"  - {check_text(c)}" for c in after[-MAX_CHECKS:]]
    else:
        lines.append("- checks after the last edit: none (nothing ran or looked at the work)")
    if s.failed_before_edit:
        lines.append("- failed before the last edit and never run again:")
        lines += [f"  - {check_text(c)}" for c in s.failed_before_edit[-3:]]
    if s.artefacts:
        lines.append("- named in the task:")
        lines += [f"  - {a.kind} {a.name}: {a.note}" for a in s.artefacts[:MAX_ARTEFACTS]]
    else:
        lines.append("- named in the task: no path, URL, port or command")
    return lines


def _test_runs(s: Signals) -> str:
    if not s.test_runs:
        return "- test-runner runs (pytest, jest, go test, cargo, …): none recognised"
    last = s.last_test_run
    assert last is not None
    state = "passed" if last.ok else "failed"
    return (
        f"- test-runner runs (pytest, jest, go test, cargo, …): {len(s.test_runs)}; the last "
        f"at #{last.result_event}: {last.framework} {last.passed} passed, {last.failed} failed ({state})"
    )


def process_lines(s: Signals) -> list[str]:
    """The process part: tools, errors, tests, files, markers, requirement coverage."""
    tools = ", ".join(f"{k}×{v}" for k, v in s.calls_per_tool.items()) or "none"
    error_rate = f" ({s.tool_error_rate:.0%}) at {_refs(s.error_events)}" if s.tool_errors else ""
    retries = f" at {_refs(s.retries)}" if s.retries else ""
    lines = [
        "## Process signals",
        f"- tool calls: {s.tool_calls} ({tools})",
        f"- tool errors: {s.tool_errors}{error_rate}",
        f"- repeated identical failing calls: {len(s.repeated_failures)}; blind retries: "
        f"{len(s.retries)}{retries}",
        _test_runs(s),
        f"- files written/edited: {len(s.files_written)}",
        f"- compactions: {len(s.compactions)}; interruptions: {len(s.interruptions)}; "
        f"API errors: {len(s.api_errors)}; subagents: {s.subagents}",
    ]
    return lines + requirement_lines(s)


def requirement_lines(s: Signals) -> list[str]:
    """Requirement coverage by key terms, with the untouched items."""
    if not s.requirements:
        return ["- task requirements matched by key terms: none listed"]
    counts = Counter(r.status for r in s.requirements)
    lines = [
        f"- task requirements matched by key terms: {len(s.requirements)} listed; "
        f"{counts['covered']} named in some action, {counts['uncovered']} in none, "
        f"{counts['unchecked']} name nothing to match"
    ]
    lines += [f"  - in no action: {r.text} (key terms: {', '.join(r.terms)})"
              for r in s.uncovered_requirements[:5]]  # fmt: skip
    return lines


def signals_block(s: Signals) -> str:
    """The objective signals as the text block the judge reads with the task.

    Every line goes through `fence.one_line`: text from the session (a quote, a command, a
    path named by the task) can never start a line of its own.
    """
    return "\n".join(one_line(line) for line in [*outcome_lines(s), "", *process_lines(s)])
