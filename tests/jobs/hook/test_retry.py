"""The retry folder (`scorer.jobs.hook.retry`): one file per session, written atomically,
taken by one worker at a time, put back when its taker is gone, retried with growing
waits and given up after `MAX_ATTEMPTS`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.retry import MAX_ATTEMPTS, Deferred, RetryQueue, retry_dir

REQUEST = HookRequest("s1", Path("/t/s1.jsonl"), "SessionEnd", "/workspace", "other")


def test_the_folder_is_beside_the_store_and_named_after_it(tmp_path):
    assert retry_dir(tmp_path / "scores.sqlite3") == tmp_path / "scores.hook-retry"


def test_a_job_round_trips_and_only_one_taker_gets_it(tmp_path):
    queue = RetryQueue(tmp_path / "retry")
    path = queue.add(Deferred.of(REQUEST, why="database is locked"))
    assert queue.pending() == [path]
    job, taken = queue.take(path)
    assert job.request() == REQUEST and job.why == "database is locked"
    assert queue.take(path) is None and queue.pending() == []  # taken: nobody else gets it
    queue.release(taken)
    assert list(queue.folder.iterdir()) == []


def test_a_job_taken_by_a_process_that_is_gone_is_put_back(tmp_path):
    queue = RetryQueue(tmp_path / "retry")
    path = queue.add(Deferred.of(REQUEST))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    path.rename(path.with_name(f"{path.name}.{gone}"))
    assert queue.pending() == [path]
    alive = path.with_name(f"{path.name}.{os.getpid()}")
    path.rename(alive)  # taken by a process that is running (this one)
    assert queue.pending() == []


def test_a_job_that_failed_again_waits_longer_each_time():
    first = Deferred.of(REQUEST, at=1000.0)
    assert first.due(1000.0)  # the next hook run, whenever it comes
    third = Deferred.of(REQUEST, at=1000.0, attempts=3)
    assert not third.due(1000.0 + 119) and third.due(1000.0 + 120)
    late = Deferred.of(REQUEST, at=1000.0, attempts=MAX_ATTEMPTS)
    assert not late.due(1000.0 + 3599) and late.due(1000.0 + 3600)


def test_a_new_try_keeps_the_card_an_earlier_one_judged(tmp_path):
    queue = RetryQueue(tmp_path / "retry")
    queue.add(Deferred.of(REQUEST, card={"session_id": "s1"}, fingerprint="fp"))
    path = queue.add(Deferred.of(REQUEST, attempts=2))
    job = json.loads(path.read_text())
    assert (job["card"], job["fingerprint"], job["attempts"]) == ({"session_id": "s1"}, "fp", 2)


def test_a_damaged_file_is_dropped_with_one_line(tmp_path, caplog):
    queue = RetryQueue(tmp_path / "retry")
    queue.folder.mkdir()
    bad = queue.folder / "0123.json"
    bad.write_text("{not json")
    assert queue.take(bad) is None and not bad.exists()
    assert [r.levelname for r in caplog.records] == ["WARNING"]
