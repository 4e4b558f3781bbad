"""Objective facts about a session (tool errors, retries, test runs, edits, tokens...).

Computed without a model, so the judge gets them as evidence and the heuristic judge
can score from them. Every list of events holds event numbers (`#N`) the judge can cite.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

from pydantic import BaseModel, Field

from scorer.models import Event, EventKind, Session, SourceKind, TokenUsage
from scorer.prepare.artefacts import Artefact, artefact_states
from scorer.prepare.claims import caveats, claims_success, closing_claim
from scorer.prepare.render import tool_call_line
from scorer.prepare.requirements import Requirement, requirement_coverage
from scorer.prepare.verification import (
    CheckState,
    FinalVerification,
    check_states,
    final_verification,
    tool_failed,
)

# Enum attribute lookups cost ~60 ns each on Python 3.11, and the loops below run per event.
_CALL, _RESULT = EventKind.TOOL_CALL, EventKind.TOOL_RESULT
_ERROR_KINDS = (EventKind.API_ERROR, EventKind.SYSTEM, EventKind.TERMINAL)
_WRITE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
_TEST_COMMAND_RE = re.compile(
    r"\b(?:pytest|py\.test|python[\d.]* -m (?:pytest|unittest)|tox|nox|jest|vitest|mocha"
    r"|go test|cargo (?:test|nextest)|(?:npm|pnpm|yarn|bun)(?: run)? test|bun test"
    r"|npx (?:jest|vitest|mocha)|make (?:test|check)|mix test|rspec|phpunit"
    r"|dotnet test|gradlew? test|mvn test|ctest)\b"
)


class TestRun(BaseModel):
    """The outcome of one test run, parsed from a runner's output (or its exit code)."""

    __test__ = False  # not a pytest test class

    framework: str
    """pytest, unittest, jest, vitest, go, cargo, mix, or `exit-code` when unparsed."""
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    ok: bool
    """The run succeeded: nothing failed and the runner reported success."""
    call_event: int | None = None
    result_event: int | None = None


class RepeatedFailure(BaseModel):
    """The same tool call (same tool, same input) that failed more than once."""

    tool: str
    call: str
    """One-line rendering of the call."""
    events: list[int]
    """The failing call events."""


class Signals(BaseModel):
    """Objective facts about a session, with event numbers to cite."""

    tool_calls: int = 0
    calls_per_tool: dict[str, int] = Field(default_factory=dict)
    tool_errors: int = 0
    tool_error_rate: float | None = None
    error_events: list[int] = Field(default_factory=list)
    """Failed tool results, API errors and error system events."""
    repeated_failures: list[RepeatedFailure] = Field(default_factory=list)
    retries: list[int] = Field(default_factory=list)
    """Calls identical to the previous call, which had failed."""
    test_runs: list[TestRun] = Field(default_factory=list)
    last_test_run: TestRun | None = None
    files_written: list[str] = Field(default_factory=list)
    """Distinct paths written or edited, in first-touch order."""
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cache_hit_ratio: float | None = None
    duration_seconds: float | None = None
    compactions: list[int] = Field(default_factory=list)
    interruptions: list[int] = Field(default_factory=list)
    api_errors: list[int] = Field(default_factory=list)
    subagents: int = 0
    human_prompts: int = 0
    final_message_event: int | None = None
    claims_success: bool | None = None
    """Whether the final message claims success; None when it says neither."""
    closing_claim: str = ""
    """The sentence of the final message that claims success or admits failure (or its
    opening), code left out, at most 240 characters."""
    cut_off: bool = False
    """A headless (stream-json) run without its final `result` line: stopped before its
    closing report (a timeout or a crash)."""
    final_caveats: list[str] = Field(default_factory=list)
    """Hedges in the final message (mock, simplified, workaround, however...), see `caveats`."""
    final_verification: FinalVerification = Field(
        default_factory=lambda: FinalVerification(status="missing")
    )
    """Did a test or check run after the last edit, and did it pass (with event refs)."""
    checks_after_edit: list[CheckState] = Field(default_factory=list)
    """The last state of every distinct check (test, run, look) after the last edit."""
    failed_before_edit: list[CheckState] = Field(default_factory=list)
    """Checks whose last run, before the last edit, failed and that never ran again."""
    artefacts: list[Artefact] = Field(default_factory=list)
    """The paths, URLs, ports and commands the task names, and what happened to each."""
    requirements: list[Requirement] = Field(default_factory=list)
    """The task's numbered/bulleted requirements, each covered / uncovered / unchecked by
    the session's actions (key-term matching, see `scorer.prepare.requirements`)."""

    @property
    def uncovered_requirements(self) -> list[Requirement]:
        """Requirements naming something concrete that no action touched."""
        return [r for r in self.requirements if r.status == "uncovered"]


# --- test output parsers --------------------------------------------------------------

_PYTEST_RE = re.compile(
    r"^[= ]*((?:\d+ (?:passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
    r"(?:, )?)+) in [\d.]+ ?s\b",
    re.M,
)
_COUNT_RE = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|todo|pending)")
_JEST_RE = re.compile(r"^Tests:\s+(.*?\d+ total)", re.M)
_VITEST_RE = re.compile(r"^\s*Tests\s+((?:\d+ \w+(?: \| )?)+)\s*\((\d+)\)", re.M)
_CARGO_RE = re.compile(r"test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored")
_GO_PKG_RE = re.compile(r"^(ok|FAIL)\s+\S+\s+(?:[\d.]+s|\(cached\))", re.M)
_GO_TEST_RE = re.compile(r"^\s*--- (PASS|FAIL|SKIP): ", re.M)
# `\d(?<!\w\d)` is `\b\d`: a leading `\b` would make re try every position (2x slower)
_MIX_RE = re.compile(
    r"(\d(?<!\w\d)\d*) tests?, (\d+) failures?"
    r"(?:, (\d+) invalid)?(?:, (\d+) (?:excluded|skipped))?"
)
_UNITTEST_RE = re.compile(
    r"^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n?(OK|FAILED)(?: \(([^)]*)\))?", re.M
)


def _counts(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for number, word in _COUNT_RE.findall(text):
        counts[word.rstrip("s") if word.startswith("error") else word] += int(number)
    return counts


def _pytest(text: str) -> TestRun | None:
    matches = _PYTEST_RE.findall(text)
    if not matches:
        return None
    c = _counts(matches[-1])
    failed, errors = c["failed"], c["error"]
    return TestRun(
        framework="pytest",
        passed=c["passed"],
        failed=failed,
        errors=errors,
        skipped=c["skipped"],
        ok=failed + errors == 0,
    )


def _jest(text: str) -> TestRun | None:
    # a literal every match holds rules most texts out faster than a `^` pattern (re.M)
    matches = _JEST_RE.findall(text) if "Tests:" in text else []
    if matches:
        c = _counts(matches[-1])
        framework = "jest"
    else:
        vitest = _VITEST_RE.findall(text) if "Tests" in text else []
        if not vitest:
            return None
        c = _counts(vitest[-1][0])
        framework = "vitest"
    skipped = c["skipped"] + c["todo"] + c["pending"]
    return TestRun(
        framework=framework, passed=c["passed"], failed=c["failed"], skipped=skipped,
        ok=c["failed"] == 0,
    )  # fmt: skip


def _cargo(text: str) -> TestRun | None:
    matches = _CARGO_RE.findall(text)
    if not matches:
        return None
    passed = sum(int(m[1]) for m in matches)
    failed = sum(int(m[2]) for m in matches)
    ok = all(m[0] == "ok" for m in matches) and failed == 0
    skipped = sum(int(m[3]) for m in matches)
    return TestRun(framework="cargo", passed=passed, failed=failed, skipped=skipped, ok=ok)


def _go(text: str) -> TestRun | None:
    packages = _GO_PKG_RE.findall(text) if "ok" in text or "FAIL" in text else []
    tests = Counter(_GO_TEST_RE.findall(text) if "--- " in text else [])
    if not packages and not tests:
        return None
    pkg_fail = packages.count("FAIL")
    passed = tests["PASS"] or packages.count("ok")
    failed = tests["FAIL"] or pkg_fail
    ok = failed == 0 and pkg_fail == 0
    return TestRun(framework="go", passed=passed, failed=failed, skipped=tests["SKIP"], ok=ok)


def _mix(text: str) -> TestRun | None:
    matches = _MIX_RE.findall(text) if " failure" in text else None
    if not matches:
        return None
    total, failures, invalid, skipped = (int(x or 0) for x in matches[-1])
    passed = max(total - failures - invalid - skipped, 0)
    return TestRun(
        framework="mix", passed=passed, failed=failures, errors=invalid, skipped=skipped,
        ok=failures + invalid == 0,
    )  # fmt: skip


def _unittest(text: str) -> TestRun | None:
    matches = _UNITTEST_RE.findall(text) if "Ran " in text else []
    if not matches:
        return None
    total, status, details = matches[-1]
    d = {k.strip(): int(v) for k, v in re.findall(r"(\w+)=(\d+)", details)}
    failed, errors, skipped = d.get("failures", 0), d.get("errors", 0), d.get("skipped", 0)
    passed = max(int(total) - failed - errors - skipped, 0)
    return TestRun(
        framework="unittest", passed=passed, failed=failed, errors=errors, skipped=skipped,
        ok=status == "OK",
    )  # fmt: skip


_PARSERS = (_pytest, _jest, _cargo, _go, _mix, _unittest)


def parse_test_output(text: str) -> TestRun | None:
    """Parse a test runner's summary from terminal output.

    Understands pytest, unittest, jest, vitest, go test, cargo test and mix test
    summaries. When several runs are in the text, the last summary of the first
    matching runner wins.

    Args:
        text: Output of a command (or terminal text).

    Returns:
        The parsed `TestRun`, or None when no known summary is present.
    """
    for parser in _PARSERS:
        run = parser(text)
        if run is not None:
            return run
    return None


def looks_like_test_command(command: str) -> bool:
    """Whether a shell command runs a test suite (pytest, npm test, go test, ...)."""
    # every runner's name holds one of these words; re is slow to rule a command out
    hints = ("test", "tox", "nox", "jest", "mocha", "check", "rspec", "phpunit")
    return any(h in command for h in hints) and bool(_TEST_COMMAND_RE.search(command))


# --- compute ---------------------------------------------------------------------------------


def _call_key(event: Event) -> str:
    inp = json.dumps(event.tool_input or {}, sort_keys=True, default=str)
    return f"{event.tool_name}\x00{inp}"


_failed = tool_failed


def _test_run(call: Event, result: Event) -> TestRun | None:
    command = str((call.tool_input or {}).get("command", ""))
    if call.tool_name != "Bash" or not looks_like_test_command(command):
        return None
    run = parse_test_output(result.text)
    if run is None:
        run = TestRun(framework="exit-code", ok=not _failed(result))
    elif _failed(result):
        run.ok = False  # a summary was printed but the command still failed
    run.call_event, run.result_event = call.index, result.index
    return run


def _written_path(event: Event) -> str | None:
    inp = event.tool_input or {}
    key = (
        "notebook_path"
        if event.tool_name == "NotebookEdit"
        else _WRITE_TOOLS.get(event.tool_name or "")
    )
    path = inp.get(key) if key else None
    return path if isinstance(path, str) and path else None


def _final_message(session: Session) -> Event | None:
    top = session.events
    result = next((e for e in reversed(top) if e.kind == EventKind.RESULT and e.text), None)
    return result or next((e for e in reversed(top) if e.kind == EventKind.ASSISTANT), None)


def _tool_facts(events: list[Event]) -> dict[str, Any]:
    calls = {e.tool_use_id: e for e in events if e.kind == _CALL and e.tool_use_id}
    failed_calls: set[int] = set()
    test_runs: list[TestRun] = []
    for result in (e for e in events if e.kind == _RESULT):
        call = calls.get(result.tool_use_id or "")
        if call is None:
            continue
        if _failed(result):
            failed_calls.add(call.index)
        run = _test_run(call, result)
        if run is not None:
            test_runs.append(run)
    ordered = [e for e in events if e.kind == _CALL]
    by_key: dict[str, list[int]] = {}
    retries: list[int] = []
    for prev, call in zip([None, *ordered], ordered, strict=False):
        if call.index in failed_calls:
            by_key.setdefault(_call_key(call), []).append(call.index)
        if prev is not None and prev.index in failed_calls and _call_key(prev) == _call_key(call):
            retries.append(call.index)
    by_index = {e.index: e for e in ordered}
    repeated = [
        RepeatedFailure(
            tool=by_index[refs[0]].tool_name or "?",
            call=tool_call_line(
                by_index[refs[0]].tool_name or "?", by_index[refs[0]].tool_input or {}
            ),
            events=refs,
        )
        for refs in by_key.values()
        if len(refs) >= 2
    ]
    return {
        "tool_calls": len(ordered),
        "calls_per_tool": dict(sorted(Counter(e.tool_name or "?" for e in ordered).items())),
        "tool_errors": len(failed_calls),
        "tool_error_rate": len(failed_calls) / len(ordered) if ordered else None,
        "repeated_failures": repeated,
        "retries": retries,
        "test_runs": test_runs,
        "last_test_run": test_runs[-1] if test_runs else None,
    }


def _terminal_test_runs(events: list[Event]) -> list[TestRun]:
    runs = []
    terminal = EventKind.TERMINAL
    for event in events:
        if event.kind == terminal and (run := parse_test_output(event.text)):
            run.call_event = run.result_event = event.index
            runs.append(run)
    return runs


def compute_signals(session: Session) -> Signals:
    """Compute objective `Signals` for a session (subagent events included).

    Args:
        session: Any session from any source.

    Returns:
        The signals, with event numbers for errors, retries, test runs and markers.
    """
    events = [e for _, e in session.iter_events()]
    prompt = EventKind.PROMPT

    def refs(kind: EventKind) -> list[int]:
        return [e.index for e in events if e.kind == kind]

    errors = [
        e.index
        for e in events
        if (e.kind == _RESULT and _failed(e)) or (e.kind in _ERROR_KINDS and e.is_error)
    ]
    facts = _tool_facts(events)
    if not facts["test_runs"]:
        # terminal sessions (tmux) have no tool calls: their test summaries are in the text
        facts["test_runs"] = _terminal_test_runs(events)
        facts["last_test_run"] = facts["test_runs"][-1] if facts["test_runs"] else None
    written = dict.fromkeys(p for e in events if e.kind == _CALL and (p := _written_path(e)))
    final = _final_message(session)
    written_paths = list(written)
    verification = final_verification(events, facts["test_runs"], set(written_paths))
    after, stale = check_states(
        events, facts["test_runs"], set(written_paths), verification.last_edit_event or 0
    )
    top = session.events
    cut_off = session.source == SourceKind.STREAM_JSON and not any(
        e.kind == EventKind.RESULT for e in top
    )
    return Signals(
        **facts,
        error_events=errors,
        files_written=written_paths,
        usage=session.usage,
        cache_hit_ratio=session.usage.cache_hit_ratio,
        duration_seconds=session.duration_seconds,
        compactions=refs(EventKind.COMPACTION),
        interruptions=refs(EventKind.INTERRUPTION),
        api_errors=refs(EventKind.API_ERROR),
        subagents=len(refs(EventKind.SUBAGENT)),
        # subagents' task prompts are PROMPT events too, but no human wrote them
        human_prompts=len([e for e in session.events if e.kind == prompt]),
        final_message_event=final.index if final else None,
        claims_success=claims_success(final.text) if final else None,
        closing_claim=closing_claim(final.text) if final else "",
        cut_off=cut_off,
        checks_after_edit=after,
        failed_before_edit=stale,
        artefacts=artefact_states(session.task_text, events),
        final_caveats=caveats(final.text, session.task_text) if final else [],
        final_verification=verification,
        requirements=requirement_coverage(session.task_text, events),
    )
