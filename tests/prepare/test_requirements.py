"""Requirement coverage: parsing the task's list, key terms, matching against actions."""

from __future__ import annotations

import json

from scorer.models import EventKind, Session, SourceKind
from scorer.prepare import compute_signals, prepare
from scorer.prepare.requirements import key_terms, parse_requirements, requirement_coverage
from scorer.sources import resolve
from tests.conftest import TERMINAL_BENCH, require
from tests.prepare.sessions import Builder

TASK = """Set up the service. Requirements:

1. Create a config at `/etc/svc/app.toml`
2) Add a `--dry-run` flag to cli.py
   - print "Would deploy" instead of deploying
* Keep the code clean and simple
• Run the report job with make_report

Example:
```
- not a requirement: `inside.code`
```
"""


def test_parse_numbered_and_bulleted_items_not_code_blocks():
    assert parse_requirements(TASK) == [
        "Create a config at `/etc/svc/app.toml`",
        "Add a `--dry-run` flag to cli.py",
        'print "Would deploy" instead of deploying',
        "Keep the code clean and simple",
        "Run the report job with make_report",
    ]


def test_task_without_a_list_falls_back_to_sentences_that_name_something():
    task = 'Crack the archive. Write the word to "/app/solution.txt". Be quick!'
    assert parse_requirements(task) == ['Write the word to "/app/solution.txt".']
    assert parse_requirements(None) == [] and parse_requirements("Just help me.") == []


def test_key_terms():
    assert key_terms("Save it as `/app/ssl/server.key` with mode 600") == [
        "/app/ssl/server.key",
        "server.key",
    ]
    assert key_terms("Use https://example.com/api and the --force flag") == [
        "https://example.com/api",
        "example.com",  # looks like a file name: matching it too is harmless
        "--force",
    ]
    assert key_terms('Set Organization Name: "DevOps Team" in O_NAME, e.g. here') == [
        "DevOps Team",
        "O_NAME",
    ]
    # placeholders name nothing an action could contain; apostrophes are no quotes
    assert key_terms("Replace it with <your-token> and don't touch 'x'") == []


def test_coverage_statuses_and_refs():
    b = Builder()
    events = [b.ev(EventKind.PROMPT, TASK)]
    write = b.call("Write", file_path="/etc/svc/app.toml", content="port = 8080\n")
    edit = b.call("Edit", file_path="src/cli.py", old_string="x", new_string="y")
    run = b.call("Bash", command="make_report --out r.txt")
    events += [write, edit, run]
    reqs = requirement_coverage(TASK, events)
    assert [r.status for r in reqs] == [
        "covered", "covered", "uncovered", "unchecked", "covered",
    ]  # fmt: skip
    assert reqs[0].matched == ["/etc/svc/app.toml", "app.toml"] and reqs[0].events == [2, 2]
    assert reqs[1].matched == ["cli.py"] and reqs[1].events == [3]  # `--dry-run` never used
    assert reqs[2].terms == ["Would deploy"] and reqs[2].matched == []
    assert reqs[4].events == [4]


def test_signals_use_the_session_task_and_list_uncovered():
    b = Builder()
    events = [b.ev(EventKind.PROMPT, "Fix it:\n- edit `a.py`\n- update `b.py`\n- run `tox`")]
    call = b.call("Edit", file_path="a.py", old_string="1", new_string="2")
    session = Session(session_id="r", source=SourceKind.CLAUDE_CODE, events=[*events, call])
    sig = compute_signals(session)
    assert [r.text for r in sig.uncovered_requirements] == ["update `b.py`", "run `tox`"]
    explicit = session.model_copy(update={"task": "1. touch `a.py`"})
    assert [r.status for r in compute_signals(explicit).requirements] == ["covered"]


# --- real Terminal-Bench runs ------------------------------------------------------------


def bench_requirements(task: str):
    folder = require(TERMINAL_BENCH) / task
    label = json.loads((folder / "label.json").read_text())
    source = resolve(str(folder / "session.jsonl"), task=label["instruction"])
    return prepare(source.load()).signals.requirements


def test_real_openssl_task_every_named_file_was_touched():
    reqs = bench_requirements("openssl-selfsigned-cert")
    assert len(reqs) == 21
    assert reqs[0].text == "Create a directory at `/app/ssl/` to store all files"
    assert {r.status for r in reqs} == {"covered", "unchecked"}
    key = next(r for r in reqs if r.text == "Save it as `/app/ssl/server.key`")
    assert key.status == "covered" and key.events


def test_real_vim_task_output_format_was_never_written_literally():
    reqs = bench_requirements("vim-terminal-task")
    assert [r.status for r in reqs] == ["unchecked", "unchecked", "unchecked", "uncovered"]
    assert reqs[3].terms == ["word: frequency"]
