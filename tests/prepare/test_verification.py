"""The final-verification and final-caveats signals: hand-built sessions and real runs."""

from __future__ import annotations

import json

import pytest

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare import compute_signals, prepare, signals_block
from scorer.prepare.signals import caveats
from scorer.prepare.verification import shell_writes
from scorer.sources import resolve
from tests.conftest import TERMINAL_BENCH, require
from tests.prepare.sessions import Builder


def signals_of(events: list[Event], source: SourceKind = SourceKind.CLAUDE_CODE):
    return compute_signals(Session(session_id="v", source=source, events=events))


def exchange(b: Builder, tool: str, output: str = "", **inp) -> list[Event]:
    """A call and its result; `Exit code N` at the start of `output` marks a failure."""
    call = b.call(tool, **inp)
    return [call, b.result(call, output, is_error=output.startswith("Exit code"))]


@pytest.mark.parametrize(
    ("command", "writes"),
    [
        ("python solve.py > /app/answer.txt", True),
        ("cat > run.sh << 'EOF'\necho hi\nEOF", True),
        ("echo done >> log.txt", True),
        ("sed -i 's/a/b/' conf.ini", True),
        ("cp build/out.bin /usr/local/bin/", True),
        ("git apply fix.patch", True),
        ("pip install numpy", False),
        ("make 2>&1 | tail -5", False),
        ("pytest -q > /dev/null", False),
        ("ls -la /app", False),
        ("python -c 'print(1)'", False),
    ],
)
def test_shell_writes(command, writes):
    assert shell_writes(command) is writes


def test_passing_test_run_after_the_last_edit():
    b = Builder()
    events = exchange(b, "Edit", "updated", file_path="src/x.py", old_string="a", new_string="b")
    events += exchange(b, "Bash", "Exit code 1\n1 failed, 2 passed in 0.1s", command="pytest -q")
    events += exchange(b, "Edit", "updated", file_path="src/x.py", old_string="b", new_string="c")
    events += exchange(b, "Bash", "3 passed in 0.1s", command="pytest -q")
    events += exchange(b, "Bash", "x.py", command="ls src")  # a later `ls` does not hide the tests
    fv = signals_of(events).final_verification
    assert (fv.status, fv.kind, fv.call_event, fv.result_event) == ("passed", "test", 7, 8)
    assert fv.last_edit_event == 5 and fv.checks_after_edit == 2
    assert fv.command == "Bash: pytest -q"


def test_tests_before_the_last_edit_do_not_verify_it():
    b = Builder()
    events = exchange(b, "Bash", "3 passed in 0.1s", command="pytest -q")
    events += exchange(b, "Write", "created", file_path="src/new.py", content="x = 1\n")
    fv = signals_of(events).final_verification
    assert (fv.status, fv.kind, fv.last_edit_event, fv.checks_after_edit) == ("missing", None, 3, 0)


def test_shell_edit_then_failing_run_then_setup_only():
    b = Builder()
    events = exchange(b, "Bash", "", command="cat > /app/fib.py << 'EOF'\nprint(1)\nEOF")
    events += exchange(b, "Bash", "Exit code 1\nTraceback ...", command="cd /app && python fib.py")
    events += exchange(b, "Bash", "Successfully installed x", command="pip install x")
    fv = signals_of(events).final_verification
    assert (fv.status, fv.kind, fv.call_event, fv.last_edit_event) == ("failed", "run", 3, 1)
    assert fv.checks_after_edit == 1  # `pip install` is setup, not a check


def test_inspection_and_reading_a_written_file_count_as_checks():
    b = Builder()
    events = exchange(b, "Write", "created", file_path="/app/out.txt", content="42\n")
    events += exchange(b, "Read", "42", file_path="/app/out.txt")
    events += exchange(b, "Read", "...", file_path="/app/other.txt")  # not written: no check
    fv = signals_of(events).final_verification
    assert (fv.status, fv.kind, fv.call_event) == ("passed", "inspect", 3)
    assert fv.checks_after_edit == 1


def test_notes_written_at_the_end_are_not_the_last_edit():
    b = Builder()
    events = exchange(b, "Write", "created", file_path="app.py", content="print(1)\n")
    events += exchange(b, "Bash", "1", command="python app.py")
    events += exchange(b, "Write", "created", file_path="SUMMARY.md", content="# Done\n")
    fv = signals_of(events).final_verification
    assert (fv.status, fv.kind, fv.last_edit_event) == ("passed", "run", 1)


def test_no_actions_means_missing_and_terminal_sessions_use_test_summaries():
    b = Builder()
    assert signals_of([b.ev(EventKind.ASSISTANT, "hi")]).final_verification.status == "missing"
    terminal = [b.ev(EventKind.TERMINAL, "$ pytest\n2 failed, 5 passed in 1.2s")]
    fv = signals_of(terminal, SourceKind.TMUX).final_verification
    assert (fv.status, fv.kind, fv.call_event) == ("failed", "test", terminal[0].index)


def test_caveats_ignore_code_and_the_task_own_words():
    text = "Done. However, the API is mocked and `stub()` is a helper; it should work."
    assert caveats(text) == ["however", "mocked", "should work"]
    assert caveats(text, task="Build a mocked API") == ["however", "should work"]
    assert caveats("All 12 tests pass.") == []


def test_signals_block_shows_verification_and_requirements():
    b = Builder()
    prompt = b.ev(EventKind.PROMPT, "Do this:\n1. Create `out.txt`\n2. Add --verbose to cli.py")
    events = [prompt, *exchange(b, "Write", "ok", file_path="out.txt", content="x")]
    events += exchange(b, "Bash", "x", command="cat out.txt")
    events.append(b.ev(EventKind.ASSISTANT, "Done, though the flag is simplified."))
    block = signals_block(signals_of(events))
    assert "- last edit: #2" in block
    assert "  - #4→#5 passed (inspect): Bash: cat out.txt" in block
    assert "hedges: simplified" in block
    assert "2 listed; 1 named in some action, 1 in none, 0 name nothing to match" in block
    assert "in no action: Add --verbose to cli.py (key terms: cli.py, --verbose)" in block


# --- real Terminal-Bench runs ------------------------------------------------------------


def bench_signals(task: str):
    folder = require(TERMINAL_BENCH) / task
    label = json.loads((folder / "label.json").read_text())
    source = resolve(str(folder / "session.jsonl"), task=label["instruction"])
    return prepare(source.load()).signals


def test_real_run_checked_by_running_its_script():
    fv = bench_signals("openssl-selfsigned-cert").final_verification
    assert (fv.status, fv.kind, fv.call_event, fv.result_event) == ("passed", "run", 47, 48)
    assert fv.last_edit_event == 44 and fv.command == "Bash: python3 /app/check_cert.py"


def test_real_run_that_never_checked_its_file():
    fv = bench_signals("hello-world").final_verification
    assert (fv.status, fv.last_edit_event, fv.checks_after_edit) == ("missing", 2, 0)


def test_real_run_verified_by_pytest_and_its_hedges():
    sig = bench_signals("swe-bench-langcodes")
    assert sig.final_verification.kind == "test" and sig.final_verification.status == "passed"
    assert bench_signals("gpt2-codegolf").final_caveats[:2] == ["simplified", "approximations"]


def test_claims_success_sees_a_check_mark_after_a_space():
    from scorer.prepare import claims_success

    assert claims_success("Results:\n- ✅ Created `gen.py`") is True
    assert claims_success("I completely rewrote the parser.") is None
