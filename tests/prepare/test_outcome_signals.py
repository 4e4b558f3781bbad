"""What the judge reads first: the closing report, the last state of every check after the
last edit, and what happened to each path, URL, port and command the task names."""

from __future__ import annotations

import re

import pytest

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare import compute_signals, signals_block
from scorer.prepare.artefacts import shell_targets, task_artefacts
from scorer.prepare.claims import claims_success, closing_claim
from scorer.prepare.render import render_timeline, tool_call_line
from tests.prepare.sessions import Builder


def signals_of(events: list[Event], source: SourceKind = SourceKind.CLAUDE_CODE, task=None):
    return compute_signals(Session(session_id="o", source=source, events=events, task=task))


def exchange(b: Builder, tool: str, output: str = "", error: bool = False, **inp) -> list[Event]:
    call = b.call(tool, **inp)
    return [call, b.result(call, output, is_error=error or output.startswith("Exit code"))]


# --- the block reads as words ----------------------------------------------------------------


def test_block_has_no_python_literals_and_no_empty_timeline_header():
    b = Builder()
    events = exchange(b, "Bash", "ok", command="python run.py")
    events.append(b.ev(EventKind.ASSISTANT, "Here is the output."))
    block = signals_block(signals_of(events, task="run it"))
    assert not re.search(r"\b(?:None|True|False)\b", block)
    assert "claims neither success nor failure" in block
    assert "TIMELINE" not in block


def test_a_run_check_is_not_reported_next_to_zero_test_runs_as_a_passed_test():
    b = Builder()
    events = exchange(b, "Write", "ok", file_path="app.py", content="print(1)")
    events += exchange(b, "Bash", "1", command="python app.py")
    block = signals_block(signals_of(events))
    assert "test runs: 0" not in block and "final verification" not in block
    assert "test-runner runs (pytest, jest, go test, cargo, …): none recognised" in block
    assert "  - #3→#4 passed (run): Bash: python app.py" in block


@pytest.mark.parametrize(
    ("command", "is_check"),
    [
        ("pip list | grep numpy", False),
        ("pip show numpy", False),
        ("python -c 'import numpy' 2>&1 | head -5", True),
        ("cat out.txt | grep total", True),
        ("echo 'move N' | ./maze_game.sh", True),
        ("node server.js &", False),
        ("ls -la 2>&1 | tail -3", True),
    ],
)
def test_which_commands_check_the_work(command, is_check):
    b = Builder()
    events = exchange(b, "Write", "ok", file_path="a.py", content="x")
    events += exchange(b, "Bash", "out", command=command)
    assert bool(signals_of(events).checks_after_edit) is is_check


def test_last_state_of_each_check_after_the_last_edit_and_stale_failures():
    b = Builder()
    events = exchange(b, "Bash", "Exit code 1\n1 failed, 1 passed in 0.1s", command="pytest -q")
    events += exchange(b, "Bash", "Exit code 2\nboom", command="make lint")
    events += exchange(b, "Edit", "ok", file_path="x.py", old_string="a", new_string="b")
    events += exchange(b, "Bash", "Exit code 1\n1 failed in 0.1s", command="pytest -q")
    events += exchange(b, "Bash", "2 passed in 0.1s", command="pytest -q")
    s = signals_of(events)
    (check,) = s.checks_after_edit
    assert (check.status, check.runs, check.call_event) == ("passed", 2, 9)
    assert check.detail == "pytest: 2 passed, 0 failed"
    (stale,) = s.failed_before_edit  # pytest ran again after the edit; `make lint` never did
    assert stale.command == "Bash: make lint" and stale.detail == "exit 2"


def test_background_output_is_a_check_and_a_crash_in_it_fails():
    b = Builder()
    events = exchange(b, "Write", "ok", file_path="init.c", content="x")
    start = b.call("Bash", command="qemu-system-x86_64 -kernel bzImage", run_in_background=True)
    events += [start, b.result(start, "Command running in background with ID: ab12")]
    events += exchange(
        b, "BashOutput", "<status>running</status>\nKernel panic - not syncing", bash_id="ab12"
    )
    (check,) = signals_of(events).checks_after_edit
    assert check.status == "failed" and "Kernel panic" in check.detail
    assert check.command.startswith("output of #3 Bash (background): qemu-system-x86_64")


# --- the closing report ---------------------------------------------------------------------


def test_closing_claim_quotes_the_deciding_sentence():
    text = "Excellent! The server is working correctly. Let me summarize:\n\n## Summary\n`x`"
    assert closing_claim(text) == "The server is working correctly."
    assert claims_success(text) is True
    admits = "I built it. Running it both ways with `gcc` is not practically possible because:"
    assert claims_success(admits) is False
    assert closing_claim(admits).startswith("Running it both ways with gcc is not practically")


def test_a_headless_run_without_its_result_line_is_cut_off():
    b = Builder()
    events = [b.ev(EventKind.ASSISTANT, "Let me restart the server with the mock model.")]
    s = signals_of(events, SourceKind.STREAM_JSON)
    assert s.cut_off
    assert "closing report: none: the run stopped before its final result line" in signals_block(s)
    assert not signals_of(events).cut_off  # interactive sessions have no result line


# --- named artefacts --------------------------------------------------------------------------


def test_task_artefacts_are_paths_urls_ports_and_commands():
    task = (
        "Write the map to /app/maze_map.txt (create maze_map.txt), call the API at "
        "http://api:8000/docs, serve on port 3000 with a GET endpoint /fib, put results in "
        "out/ and compile with `gcc main.c && ./a.out 5`; use linux-6.9 and positive/negative "
        "labels. Your working directory: /app/. ```\ncat /etc/hosts\n```"
    )
    named = task_artefacts(task)
    assert ("path", "/app/maze_map.txt") in named and ("path", "maze_map.txt") not in named
    assert ("url", "http://api:8000/docs") in named and ("port", "8000") not in named
    assert ("port", "3000") in named and ("command", "gcc main.c && ./a.out 5") in named
    assert ("path", "out/") in named
    names = [n for _, n in named]
    for noise in ("/fib", "linux-6.9", "positive/negative", "/app/", "/etc/hosts"):
        assert noise not in names


@pytest.mark.parametrize(
    ("command", "targets"),
    [
        (
            "cp /app/main.c.py /app/test.c && gcc /app/test.c -o /app/fib",
            ["/app/fib", "/app/test.c"],
        ),
        ("echo 42 > /app/answer.txt 2>&1", ["/app/answer.txt"]),
        ("7z x secrets.7z -p1234 > /dev/null", []),
        ("mkdir -p out/a && touch out/a/b", ["out/a", "out/a/b"]),
    ],
)
def test_shell_targets(command, targets):
    assert sorted(shell_targets(command)) == sorted(targets)


def _artefact(signals, name):
    return next(a for a in signals.artefacts if a.name == name)


def test_path_written_read_back_removed_and_source_only():
    b = Builder()
    task = "Create /app/answer.txt and a copy at /app/copy.txt; keep /app/input.csv"
    events = exchange(
        b,
        "Write",
        "File has not been read yet",
        error=True,
        file_path="/app/answer.txt",
        content="x",
    )
    events += exchange(b, "Bash", "", command="cp /app/input.csv /app/copy.txt")
    events += exchange(b, "Bash", "", command="echo 42 > /app/answer.txt")
    events += exchange(b, "Read", "42", file_path="/app/answer.txt")
    events += exchange(b, "Bash", "", command="rm /app/copy.txt")
    s = signals_of(events, task=task)
    answer = _artefact(s, "/app/answer.txt")
    assert answer.status == "produced" and answer.note.startswith("written at #5 (shell);")
    assert "last looked at #7: found" in answer.note
    assert _artefact(s, "/app/copy.txt").status == "removed"
    assert _artefact(s, "/app/input.csv").status == "mentioned"  # read by cp, not written


def test_port_served_from_a_background_shell_and_a_url_that_errors():
    b = Builder()
    task = "Run a server on port 3000. The API is at http://api:8000."
    start = b.call("Bash", command="node server.js", run_in_background=True)
    events = [start, b.result(start, "Command running in background with ID: x1")]
    events += exchange(b, "Bash", '{"result":55}', command="curl -s localhost:3000/fib?n=10")
    events += exchange(
        b, "Bash", "<title>502 Bad Gateway</title>", command="curl http://api:8000/docs"
    )
    s = signals_of(events, task=task)
    port = _artefact(s, "3000")
    assert port.status == "answered"
    assert (
        "server started at #1 in a Claude Code background shell, which stops when the session ends"
        in port.note
    )
    url = _artefact(s, "http://api:8000")
    assert url.status == "failed" and url.note.endswith("last at #5: 502")


def test_a_kill_after_the_last_answer_fails_the_port():
    b = Builder()
    events = exchange(
        b, "Bash", "Command running in background with ID: s1", command="python app.py &"
    )
    events += exchange(b, "Bash", "ok", command="curl localhost:5000/health")
    events += exchange(b, "Bash", "", command="pkill -f app.py")
    port = _artefact(signals_of(events, task="Serve on port 5000"), "5000")
    assert port.status == "failed" and "a kill at #5 after the last answer" in port.note


def test_the_timeline_marks_background_shells():
    assert tool_call_line("Bash", {"command": "node s.js", "run_in_background": True}) == (
        "Bash (background): node s.js"
    )
    b = Builder()
    session = Session(
        session_id="t", source=SourceKind.CLAUDE_CODE, events=[b.ev(EventKind.ASSISTANT, "hi")]
    )
    assert render_timeline(session).splitlines()[3] == "=== TIMELINE ==="  # TASK, text, SESSION
