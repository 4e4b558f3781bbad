"""Terminal signals and the progress estimate (pure)."""

from __future__ import annotations

import pytest

from scorer.live.progress import estimate_progress, extract_signals, parse_tests, pass_rate
from tests.conftest import TERMINAL_BENCH, require

PYTEST_FAIL = """\
$ pytest -q
..F.
Traceback (most recent call last):
  File "app.py", line 3, in <module>
ValueError: bad value
FAILED tests/test_app.py::test_b - AssertionError
========== 1 failed, 3 passed in 0.12s ==========
"""


def test_pytest_failure_signals():
    s = extract_signals(PYTEST_FAIL)
    assert s.tests.framework == "pytest"
    assert (s.tests.passed, s.tests.failed, s.tests.ok) == (3, 1, False)
    assert s.tracebacks == 1
    assert s.error_lines == [
        "ValueError: bad value",
        "FAILED tests/test_app.py::test_b - AssertionError",
    ]
    assert s.recent_blockers == 2  # ValueError + FAILED are in the last third (lines 5-7)
    assert not s.prompt_returned


@pytest.mark.parametrize(
    ("text", "framework", "passed", "failed"),
    [
        ("Tests:       1 failed, 4 passed, 5 total\n", "jest", 4, 1),
        ("--- PASS: TestA (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\tpkg\t0.01s\n", "go", 1, 1),
        (
            "test result: ok. 7 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n",
            "cargo",
            7,
            0,
        ),
        ("  12 passing (30ms)\n  2 failing\n", "mocha", 12, 2),
        ("npm ERR! Test failed.  See above for more details.\n", "npm", 0, 1),
    ],
)
def test_parse_tests_frameworks(text, framework, passed, failed):
    run = parse_tests(text)
    assert (run.framework, run.passed, run.failed) == (framework, passed, failed)


def test_completion_and_prompt_return():
    s = extract_signals("✓ Done\nAll tests passed\nroot@box:/app# ")
    assert s.completion_markers == ["✓ Done", "All tests passed"]
    assert s.prompt_returned
    assert not s.has_errors
    assert parse_tests("nothing here") is None


def test_estimate_green_run_is_complete():
    s = extract_signals("==== 10 passed in 1.0s ====\nTask complete\n$ ")
    est = estimate_progress(s, files_touched=4)
    # files 12 + tests 40 + finish 10 = 62, lifted to 90 by green tests + marker.
    assert est.parts["tests"] == 40 and est.parts["files"] == 12
    assert (est.percent, est.phase) == (90, "complete")


def test_estimate_without_tests_scales_and_penalises():
    s = extract_signals("working\nERROR: build broke\nerror: cannot find module\n")
    est = estimate_progress(s, files_touched=5, accomplishments=5)
    # (15 + 20) * 100/60 = 58.3, minus 5 for the one blocker in the last third = 53.3
    assert (est.percent, est.phase) == (53, "mid")
    assert est.parts["penalty"] == -5
    assert estimate_progress(extract_signals("")).phase == "early"


def test_pass_rate():
    assert pass_rate(parse_tests("== 3 failed, 1 passed in 2s ==")) == 0.25
    assert pass_rate(None) is None


def test_real_terminal_bench_pane_prompt_returned():
    pane = require(TERMINAL_BENCH / "chess-best-move" / "pane-post-agent.txt")
    s = extract_signals(pane.read_text(encoding="utf-8"))
    assert s.prompt_returned  # ends with `root@...:/app#` after the agent exited
    assert s.tests is None


FAIL_THEN_PASS = """\
$ pytest -q
F
Traceback (most recent call last):
ValueError: x
FAILED test_calc.py::test_add - assert -1 == 5
1 failed in 0.54s
$ sed -i s/-/+/ calc.py
$ pytest -q
.
1 passed in 0.48s
$
"""


def test_later_passing_run_supersedes_earlier_failures():
    s = extract_signals(FAIL_THEN_PASS)
    assert s.tests.ok and s.tests.passed == 1
    assert s.error_lines == [] and s.tracebacks == 0 and s.recent_blockers == 0
    assert s.superseded_errors == 2  # ValueError + FAILED, fixed by the green run
    assert not s.has_errors


def test_errors_after_the_passing_run_still_count():
    s = extract_signals(FAIL_THEN_PASS + "$ python app.py\nRuntimeError: boom\n$\n")
    assert s.error_lines == ["RuntimeError: boom"] and s.superseded_errors == 2
    assert s.recent_blockers == 1


def test_a_failing_last_run_supersedes_nothing():
    text = "1 passed in 0.1s\n$ pytest\nFAILED t.py::x - boom\n1 failed in 0.2s\n"
    s = extract_signals(text)
    assert not s.tests.ok and s.error_lines == ["FAILED t.py::x - boom"]
    assert s.superseded_errors == 0


@pytest.mark.parametrize(
    "summary",
    [
        "Ran 3 tests in 0.01s\n\nOK",  # unittest: a two-line summary
        "Tests:       4 passed, 4 total",  # jest
        "test result: ok. 7 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out",
    ],
)
def test_supersession_works_for_other_runners(summary):
    s = extract_signals(f"error: build failed\nERROR: it broke\n{summary}\n")
    assert s.tests.ok and s.error_lines == [] and s.superseded_errors == 2
