"""The hook log: the only output of a hook; rotated, and redacted in the worker."""

from __future__ import annotations

import logging

import pytest

from scorer.jobs.hook.log import BACKUPS, MAX_BYTES, log_path, start_logging

SECRET = "sk-ant-api03-" + "Q" * 90 + "AA"


@pytest.fixture
def scorer_logger():
    """`start_logging` takes the `scorer` logger over: give it back afterwards."""
    root = logging.getLogger("scorer")
    saved = (list(root.handlers), root.propagate, root.level)
    yield root
    for handler in list(root.handlers):
        handler.close()
        root.removeHandler(handler)
    root.handlers[:], root.propagate, root.level = saved[0], saved[1], saved[2]


def test_the_worker_log_is_redacted_and_the_console_gets_nothing(tmp_path, scorer_logger, capsys):
    path = start_logging(tmp_path, redact=True)
    assert path == log_path(tmp_path) == tmp_path / "logs" / "hook.log"
    logging.getLogger("scorer.hook").warning("judge said %s", f"bad key {SECRET}")
    logging.getLogger("scorer.judge").info("from another scorer logger")
    text = path.read_text()
    assert SECRET not in text and "bad key" in text
    assert "from another scorer logger" in text
    assert capsys.readouterr() == ("", "")


def test_the_log_rotates(tmp_path, scorer_logger):
    path = start_logging(tmp_path, redact=False)
    line = "x" * 1000
    for _ in range((BACKUPS + 2) * MAX_BYTES // 1000):
        logging.getLogger("scorer.hook").info(line)
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["hook.log", *(f"hook.log.{i}" for i in range(1, BACKUPS + 1))]
    assert all(p.stat().st_size <= MAX_BYTES + 2000 for p in path.parent.iterdir())


def test_an_unwritable_data_dir_means_no_log_not_a_failure(tmp_path, scorer_logger):
    blocker = tmp_path / "home"
    blocker.write_text("a file where the data dir should be")
    assert start_logging(blocker) is None
    logging.getLogger("scorer.hook").error("goes nowhere")
