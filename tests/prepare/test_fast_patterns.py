"""Patterns rewritten for speed answer exactly as the plain patterns they replaced.

Each reference below is the pattern as it was before the rewrite; the rewritten one must
agree with it on the real commands in the shared data and on generated shell-ish text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from scorer.prepare.fence import QUOTED_LINE_MARK, fence_block, looks_structural
from scorer.prepare.signals import _MIX_RE, looks_like_test_command
from scorer.prepare.verification import shell_writes
from tests.conftest import SHARED_DATA, require

SHELL_WRITE = re.compile(
    r"(?<![\d&>])>>?\s*(?![&>]|/dev/)[\w./~$'\"-]"
    r"|\btee\b|\bsed\s+(?:-\w+\s+)*-i|\bperl\s+-\w*i|\b(?:cp|mv|patch|touch)\s"
    r"|\bgit\s+(?:apply|am|checkout\s+--|restore)\b|\bdd\s+.*\bof="
)
TEST_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|python[\d.]* -m (?:pytest|unittest)|tox|nox|jest|vitest|mocha"
    r"|go test|cargo (?:test|nextest)|(?:npm|pnpm|yarn|bun)(?: run)? test|bun test"
    r"|npx (?:jest|vitest|mocha)|make (?:test|check)|mix test|rspec|phpunit"
    r"|dotnet test|gradlew? test|mvn test|ctest)\b"
)
WORDS = [
    ">", ">>", "2>&1", "&>", ">&", ">/dev/null", "1", "2", "&", "|", ";", "&&", "\n", "\t",
    "'", '"', "-", ".", "/", "~", "$", "é", "_", "x",
    "tee", "sed", "-i", "-n", "perl", "-pi", "-e", "cp", "mv", "patch", "touch", "git",
    "apply", "am", "checkout", "--", "restore", "dd", "of=", "if=",
    "xtee", "tee_", "ttee", "sedx", "cpx", "1cp", "_mv", "my.tee", "ls", "echo", "a.txt",
    "pytest", "py.test", "python", "python3.11", "-m", "unittest", "tox", "nox", "jest",
    "vitest", "mocha", "go", "test", "cargo", "nextest", "npm", "pnpm", "yarn", "bun", "run",
    "npx", "make", "check", "mix", "rspec", "phpunit", "dotnet", "gradle", "gradlew", "mvn",
    "ctest", "tests/", "xpytest", "pytest_", "ctests",
]  # fmt: skip
MIX = re.compile(
    r"\b(\d+) tests?, (\d+) failures?(?:, (\d+) invalid)?(?:, (\d+) (?:excluded|skipped))?"
)
_MIX_PIECES = [
    ["", "x", "_", "1", " ", "é", "٣", "\n"],
    ["1", "23", "٣", ""],
    [" test", " tests", "test"],
    [", ", ",", " "],
    ["0", "4", ""],
    [" failure", " failures", "failure"],
    ["", ", 1 invalid", ", 2 excluded", ", 3 skipped", ", x"],
]
MIX_TEXT = st.lists(st.tuples(*(st.sampled_from(p) for p in _MIX_PIECES)), max_size=3).map(
    lambda runs: "".join("".join(run) for run in runs)
)
SEPARATORS = st.sampled_from(["", " ", "  ", "\n", "/", "_", "-", "."])
COMMANDS = st.lists(st.tuples(st.sampled_from(WORDS), SEPARATORS), max_size=12).map(
    lambda parts: "".join(word + sep for word, sep in parts)
)


@settings(max_examples=1000, deadline=None)
@given(COMMANDS)
def test_shell_writes_matches_the_plain_pattern(command: str) -> None:
    assert shell_writes(command) is bool(SHELL_WRITE.search(command)), command


@settings(max_examples=1000, deadline=None)
@given(COMMANDS)
def test_test_command_matches_the_plain_pattern(command: str) -> None:
    assert looks_like_test_command(command) is bool(TEST_COMMAND.search(command)), command


@settings(max_examples=1000, deadline=None)
@given(MIX_TEXT)
def test_mix_summary_pattern_matches_the_plain_one(text: str) -> None:
    assert _MIX_RE.findall(text) == MIX.findall(text)


FENCE_TEXT = st.lists(
    st.sampled_from(["#", "#1", "#23", "# 4", "x", " ", "\t", "\n", "\u00a0", "\u200b", "\uff03",
                     "└ end subagent", "end sub", "=== TIMELINE ===", "TIMELINE", "timeline",
                     "===", "└", "SESSION:", "session :", "é", "\u0422", "abcdefghij" * 3,
                     "1→", "L end sub", "-", "~", "time"]),
    max_size=14,
).map("".join)  # fmt: skip


@settings(max_examples=2000, deadline=None)
@given(FENCE_TEXT)
def test_fence_block_matches_checking_every_line(text: str) -> None:
    # the candidate pre-scan may skip only lines that `looks_structural` would pass
    plain = "\n".join(
        QUOTED_LINE_MARK + line if looks_structural(line) else line for line in text.split("\n")
    )
    assert fence_block(text) == plain


def _commands(value: object) -> Iterator[str]:
    """Every string under a `command` key, anywhere in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "command" and isinstance(item, str):
                yield item
            else:
                yield from _commands(item)
    elif isinstance(value, list):
        for item in value:
            yield from _commands(item)


def test_real_commands_agree() -> None:
    paths = sorted(require(SHARED_DATA).rglob("*.jsonl"))
    commands = {
        command
        for path in paths
        for line in path.read_text(errors="replace").splitlines()
        if '"command"' in line
        for command in _commands(json.loads(line))
    }
    assert len(commands) > 500
    for command in commands:
        assert shell_writes(command) is bool(SHELL_WRITE.search(command)), command
        assert looks_like_test_command(command) is bool(TEST_COMMAND.search(command)), command
