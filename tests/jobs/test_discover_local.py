"""Local discovery that does what a user means: real ids for one-run-per-folder layouts,
and freshly copied files are finished, not "active" (issue 26, item 3)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scorer.jobs.discover_local import discover_local, file_session_id
from tests.conftest import SPOTTER, TERMINAL_BENCH, require

TASKS = ("chess-best-move", "fix-git", "qemu-alpine-ssh", "solana-data")
"""Two runs with a final `result` line and two cut short without one."""


def _copy_bench(tmp_path: Path) -> Path:
    root = tmp_path / "bench"
    for task in TASKS:
        # copied like `cp -r`: every file modified just now
        shutil.copytree(require(TERMINAL_BENCH / task), root / task, copy_function=shutil.copy)
    return root


def _init_id(path: Path) -> str:
    return json.loads(path.read_text().splitlines()[0])["session_id"]


def test_a_fresh_copy_of_run_folders_is_found_under_real_ids(tmp_path):
    root = _copy_bench(tmp_path)
    found = discover_local(root)  # default idle threshold, files modified just now
    want = {_init_id(root / t / "session.jsonl") for t in TASKS}
    assert {r.session_id for r in found.sessions} == want
    assert found.active == [] and found.clashes == []
    assert {Path(r.origin).parent.name for r in found.sessions} == set(TASKS)


def test_a_fresh_copy_of_a_transcript_with_old_events_is_finished(tmp_path):
    root = tmp_path / "projects"
    (root / "-p").mkdir(parents=True)
    shutil.copy(require(SPOTTER / "short.jsonl"), root / "-p" / "short.jsonl")  # mtime: now
    (ref,) = discover_local(root).sessions
    assert ref.session_id == "55604662-cf2a-4331-851a-ec234028f8ca"  # what score-session says


def test_a_transcript_with_recent_events_is_active_and_says_why(tmp_path):
    root = tmp_path / "projects"
    path = root / "-p" / "11111111-2222-4333-8444-555555555555.jsonl"
    path.parent.mkdir(parents=True)
    recent = (datetime.now(UTC) - timedelta(minutes=4)).isoformat().replace("+00:00", "Z")
    path.write_text(json.dumps({"type": "user", "sessionId": "x", "timestamp": recent}) + "\n")
    now = datetime.now(UTC) + timedelta(seconds=1)
    found = discover_local(root, now=now)
    assert found.sessions == [] and found.active == [path.stem]
    assert found.active_why[path.stem] == "its last event was 4 min ago"
    notes = found.notes()
    assert "1 session left for a later run" in notes[0] and "--idle-minutes 0" in notes[0]
    assert discover_local(root, now=now, idle=timedelta(0)).sessions  # --idle-minutes 0


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs Linux /proc")
def test_a_stream_without_result_is_active_only_while_a_process_writes_it(tmp_path):
    root = _copy_bench(tmp_path)
    stream = root / "solana-data" / "session.jsonl"  # cut short: no final result line
    sid = _init_id(stream)
    with stream.open("a") as out:
        writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdout=out)
    try:
        found = discover_local(root)
        assert found.active == [sid]
        assert "no final result yet" in found.active_why[sid]
    finally:
        writer.kill()
        writer.wait()
    assert sid in {r.session_id for r in discover_local(root).sessions}


def test_file_session_ids(tmp_path):
    uuid_name = tmp_path / "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00.jsonl"
    uuid_name.write_text('{"sessionId": "other"}\n')
    assert file_session_id(uuid_name) == uuid_name.stem  # the Claude Code layout: not opened
    named = tmp_path / "session.jsonl"
    named.write_text('{"type": "system", "subtype": "init", "session_id": "abc-1"}\n')
    assert file_session_id(named) == "abc-1"
    bare = tmp_path / "notes.jsonl"
    bare.write_text('{"type": "user"}\n')
    assert file_session_id(bare) == "notes"
