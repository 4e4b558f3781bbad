"""The "final verification" signal: did anything check the work after the last edit?

An edit is a Write/Edit/MultiEdit/NotebookEdit call (docs such as `.md` excluded) or a
shell command that writes a file (`>` redirection, `tee`, `sed -i`, `cp`/`mv`, `patch`,
`git apply`, ...). A verification is a later test run, a command that runs or inspects something (setup
commands such as `pip install`, `cd` or `rm` do not count), or a Read of a file the
session wrote. The final verification is the last test run after the last edit, else
the last other check; whether it passed is its exit status (or test summary).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import BaseModel

from scorer.models import Event, EventKind
from scorer.prepare.render import result_exit_code, tool_call_line


class ParsedRun(Protocol):
    """What the verification reads of a parsed test run (`signals.TestRun`)."""

    @property
    def ok(self) -> bool: ...
    @property
    def call_event(self) -> int | None: ...
    @property
    def result_event(self) -> int | None: ...
    @property
    def framework(self) -> str: ...
    @property
    def passed(self) -> int: ...
    @property
    def failed(self) -> int: ...
    @property
    def errors(self) -> int: ...


VerificationKind = Literal["test", "run", "inspect"]
_EDIT_TOOLS = {"Write", "Edit", "MultiEdit", "NotebookEdit"}
# notes and docs written at the end need no verification, so they are not "the last edit"
_DOC_SUFFIXES = (".md", ".rst", ".adoc")
# `>`/`>>` into a file (not `2>&1`, not /dev/null), or a command that writes files. One
# pattern each, starting with a literal character so that re skips ahead to it (a leading
# `\b` or lookbehind makes re try every position: 10x slower); the word-start check sits
# after that character (`t(?<!\wt)ee` is `\btee`).
_SHELL_WRITE_RES = tuple(
    re.compile(pattern)
    for pattern in (
        r">(?<![\d&>]>)>?\s*(?![&>]|/dev/)[\w./~$'\"-]",
        r"t(?<!\wt)ee\b",
        r"s(?<!\ws)ed\s+(?:-\w+\s+)*-i",
        r"p(?<!\wp)erl\s+-\w*i",
        r"c(?<!\wc)p\s",
        r"m(?<!\wm)v\s",
        r"p(?<!\wp)atch\s",
        r"t(?<!\wt)ouch\s",
        r"g(?<!\wg)it\s+(?:apply|am|checkout\s+--|restore)\b",
        r"d(?<!\wd)d\s+.*\bof=",
    )
)
# the first word of a command that only prepares the ground: never a verification
_SETUP_WORDS = {
    "cd", "export", "source", ".", "set", "unset", "alias", "mkdir", "rm", "rmdir",
    "chmod", "chown", "kill", "pkill", "killall", "sleep", "pip", "pip3", "apt",
    "apt-get", "yum", "dnf", "apk", "brew", "conda", "npm", "yarn", "pnpm", "cargo",
    "uv", "poetry", "gem", "go", "wget", "git", "echo", "printf", "true", "clear",
    "nohup", "tmux", "screen", "which", "whoami", "pwd", "env",
}  # fmt: skip
_INSPECT_WORDS = {
    "cat", "ls", "head", "tail", "less", "more", "wc", "diff", "cmp", "file", "stat",
    "test", "[", "grep", "rg", "find", "du", "md5sum", "sha256sum", "sha1sum", "jq",
    "xxd", "hexdump", "od", "readlink", "tree", "sort", "uniq", "awk", "tar", "unzip",
}  # fmt: skip
# a command line is judged by its pipelines: `cd app && python main.py` runs something
_PIPELINE_RE = re.compile(r"(&&|\|\||[;\n]|(?<![<>&])&(?![&>]))")  # not `2>&1`
# downstream of a pipe these only filter what the first command printed: `pip list | grep x`
# checks nothing, `echo move | ./game.sh` runs the game
_FILTER_WORDS = {
    "grep", "egrep", "fgrep", "rg", "head", "tail", "wc", "sort", "uniq", "awk", "sed",
    "cut", "tr", "jq", "less", "more", "tee", "cat", "column", "xargs", "nl", "fold",
}  # fmt: skip
# `npm start`, `cargo run`, `go run` and friends: runs whose first word is a setup word
_RUN_AFTER_SETUP_RE = re.compile(
    r"^(?:npm|yarn|pnpm)\s+(?:run|start|test)\b|^cargo\s+(?:run|test)\b|^go\s+(?:run|test)\b"
)


class FinalVerification(BaseModel):
    """Whether the work was checked after the last edit, and how that check ended."""

    status: Literal["passed", "failed", "missing"]
    """`passed`/`failed`: outcome of the final verification after the last edit (after
    the start when nothing was edited); `missing`: nothing checked the work."""
    kind: VerificationKind | None = None
    """`test` (a test runner), `run` (ran a program or script), `inspect` (looked at files)."""
    command: str | None = None
    """One-line rendering of the final verification call."""
    call_event: int | None = None
    result_event: int | None = None
    last_edit_event: int | None = None
    """The last edit (file tool or file-writing shell command); None when nothing was edited."""
    checks_after_edit: int = 0
    """How many verification calls came after the last edit."""


def tool_failed(result: Event) -> bool:
    """A tool result failed: flagged as an error, or a non-zero exit code."""
    code = result_exit_code(result)
    return result.is_error or (code is not None and code != 0)


def shell_writes(command: str) -> bool:
    """Whether a shell command writes files (redirection, tee, sed -i, cp, patch...)."""
    return any(pattern.search(command) for pattern in _SHELL_WRITE_RES)


def is_edit(call: Event) -> bool:
    """A call that changes files: a file-editing tool, or a Bash command that writes."""
    if call.tool_name in _EDIT_TOOLS:
        path = str((call.tool_input or {}).get("file_path") or "")
        return not path.lower().endswith(_DOC_SUFFIXES)
    return call.tool_name == "Bash" and shell_writes(_command(call))


def check_kind(call: Event, written: set[str], is_test: bool) -> VerificationKind | None:
    """What kind of verification a call is, or None when it checks nothing."""
    if is_test:
        return "test"
    if call.tool_name == "Read":
        path = (call.tool_input or {}).get("file_path")
        return "inspect" if path in written else None
    if call.tool_name != "Bash":
        return None
    if (call.tool_input or {}).get("run_in_background"):
        return None  # started, not checked: its exit status comes later, if ever
    kinds = {kind for line in _foreground(_command(call)) for kind in _pipeline_kinds(line)}
    return "run" if "run" in kinds else "inspect" if "inspect" in kinds else None


def _foreground(command: str) -> list[str]:
    """The pipelines of a command line, without those sent to the background with `&`."""
    parts = _PIPELINE_RE.split(command)
    texts, separators = parts[0::2], [*parts[1::2], ""]
    return [text for text, sep in zip(texts, separators, strict=True) if sep != "&"]


def _pipeline_kinds(pipeline: str) -> list[VerificationKind | None]:
    """The kinds of a pipeline's first command and of every later one that is no filter."""
    first, *rest = pipeline.split("|")
    later = [p.strip() for p in rest if _first_word(p.strip()) not in _FILTER_WORDS]
    return [_segment_kind(first.strip()), *(_segment_kind(p) for p in later)]


def final_verification(
    events: Sequence[Event], test_runs: Sequence[ParsedRun], written: set[str]
) -> FinalVerification:
    """The final verification of a session's work (see the module docstring).

    Args:
        events: all events, subagents included, in timeline order.
        test_runs: the parsed test runs (their `call_event` marks test commands).
        written: paths written by file tools (a Read of one of them is an inspection).
    """
    call_kind, result_kind = EventKind.TOOL_CALL, EventKind.TOOL_RESULT  # ~60 ns a lookup
    calls = [e for e in events if e.kind == call_kind]
    if not calls and test_runs:  # terminal (tmux) sessions: test summaries in the text
        last = test_runs[-1]
        return FinalVerification(
            status="passed" if last.ok else "failed", kind="test",
            call_event=last.call_event, result_event=last.result_event, checks_after_edit=1,
        )  # fmt: skip
    results = {e.tool_use_id: e for e in events if e.kind == result_kind}
    runs = {r.call_event: r for r in test_runs if r.call_event is not None}
    last_edit = max((c.index for c in calls if is_edit(c)), default=None)
    checks: list[tuple[Event, VerificationKind]] = []
    for call in calls:
        if last_edit is not None and call.index <= last_edit:
            continue
        kind = check_kind(call, written, call.index in runs)
        if kind is not None and call.tool_use_id in results:
            checks.append((call, kind))
    if not checks:
        return FinalVerification(status="missing", last_edit_event=last_edit)
    tests = [c for c in checks if c[1] == "test"]
    call, kind = (tests or checks)[-1]
    result = results[call.tool_use_id]
    run = runs.get(call.index)
    ok = run.ok if run is not None else not tool_failed(result)
    return FinalVerification(
        status="passed" if ok else "failed",
        kind=kind,
        command=tool_call_line(call.tool_name or "?", call.tool_input or {})[:200],
        call_event=call.index,
        result_event=result.index,
        last_edit_event=last_edit,
        checks_after_edit=len(checks),
    )


class CheckState(BaseModel):
    """The last state of one check (a distinct command or read) the agent ran."""

    command: str
    """One-line rendering of the call (the check's identity)."""
    kind: VerificationKind
    status: Literal["passed", "failed"]
    detail: str = ""
    """`exit 2`, or the test summary (`pytest: 3 passed, 1 failed`)."""
    call_event: int
    result_event: int
    runs: int = 1
    """How many times it ran in its window (after the last edit, or before it)."""


def check_states(
    events: Sequence[Event],
    test_runs: Sequence[ParsedRun],
    written: set[str],
    last_edit: int | None = None,
) -> tuple[list[CheckState], list[CheckState]]:
    """The last state of every check after the last edit, and the failing checks before it.

    Returns:
        (checks after the last edit, each distinct one at its last run, in order; checks
        whose last run before the last edit failed and that never ran after it).
    """
    calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
    results = {e.tool_use_id: e for e in events if e.kind == EventKind.TOOL_RESULT}
    runs = {r.call_event: r for r in test_runs if r.call_event is not None}
    if last_edit is None:  # the caller may know it from `final_verification`
        last_edit = max((c.index for c in calls if is_edit(c)), default=0)
    shells = _background_shells(calls, results)
    before: dict[str, CheckState] = {}
    after: dict[str, CheckState] = {}
    for call in calls:
        result = results.get(call.tool_use_id)
        output_of = shells.get(str((call.tool_input or {}).get("bash_id", "")))
        if call.tool_name == "BashOutput" and output_of is not None:
            kind: VerificationKind | None = "run"  # reading what a background command printed
        else:
            kind = check_kind(call, written, call.index in runs)
        if kind is None or result is None:
            continue
        state = _state(call, result, kind, runs.get(call.index))
        if output_of is not None and call.tool_name == "BashOutput":
            state.command = f"output of #{output_of.index} {_line(output_of)}"[:160]
        window = after if call.index > last_edit else before
        if state.command in window:
            state.runs = window.pop(state.command).runs + 1
        window[state.command] = state  # re-inserted: ordered by last run
    stale = [
        c
        for k, c in before.items()
        if c.status == "failed" and c.kind != "inspect" and k not in after
    ]
    return list(after.values()), stale


_SHELL_ID_RE = re.compile(r"background with ID:\s*(\w+)")


def _background_shells(calls: list[Event], results: dict[str | None, Event]) -> dict[str, Event]:
    """Background shell id → the Bash call that started it."""
    shells = {}
    for call in calls:
        result = results.get(call.tool_use_id)
        if call.tool_name == "Bash" and result is not None:
            match = _SHELL_ID_RE.search(result.text[:300])
            if match:
                shells[match.group(1)] = call
    return shells


def _line(call: Event) -> str:
    return tool_call_line(call.tool_name or "?", call.tool_input or {})


# a run whose output says it crashed failed, whatever its exit status (or while it still runs)
_FATAL_RE = re.compile(
    r"Traceback \(most recent call last\)|Segmentation fault|core dumped|Kernel panic"
    r"|<status>failed</status>|<exit_code>[1-9]\d*</exit_code>"
)
_RUNNING_RE = re.compile(r"<status>running</status>")


def _state(call: Event, result: Event, kind: VerificationKind, run: ParsedRun | None) -> CheckState:
    if run is not None:
        ok = run.ok
        detail = f"{run.framework}: {run.passed} passed, {run.failed} failed" + (
            f", {run.errors} errors" if run.errors else ""
        )
    else:
        ok = not tool_failed(result)
        code = result_exit_code(result)
        detail = f"exit {code}" if code is not None else ("error" if result.is_error else "")
        fatal = _FATAL_RE.search(result.text[-20_000:]) if kind == "run" else None
        if fatal:
            ok, detail = False, f"output shows {fatal.group(0)!r}"
        elif _RUNNING_RE.search(result.text[:200]):
            detail = "still running"
    return CheckState(
        command=_line(call)[:160],
        kind=kind,
        status="passed" if ok else "failed",
        detail=detail,
        call_event=call.index,
        result_event=result.index,
    )


def _segment_kind(command: str) -> VerificationKind | None:
    """The kind of one simple command (a piece of a `&&`, `;` or `|` chain)."""
    first = _first_word(command)
    if first in _INSPECT_WORDS:
        return "inspect"
    if not first or (first in _SETUP_WORDS and not _RUN_AFTER_SETUP_RE.search(command)):
        return None
    return "run"


def _command(call: Event) -> str:
    return str((call.tool_input or {}).get("command", ""))


def _first_word(command: str) -> str:
    """The program a command line starts with (after `sudo`, env assignments, `time`)."""
    for word in command.lstrip()[:400].split():  # a heredoc's body can be megabytes
        if word.startswith("#"):
            return ""  # a comment line
        if ("=" in word and not word.startswith(("=", "-"))) or word in ("sudo", "time"):
            continue
        return word.rsplit("/", 1)[-1] if not word.startswith("./") else word
    return ""
