"""The bounded git runner of the final state (`scorer.live.gitread`): a git that hangs is
stopped at its timeout, one that prints too much at its cap, a missing git is one line."""

from __future__ import annotations

import time

from scorer.live.final_state import FinalStateOptions, read_final_state
from scorer.live.gitread import GitReader, run_git
from scorer.models import Session, SourceKind


def _fake_git(tmp_path, monkeypatch, script: str) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    git = bin_dir / "git"
    git.write_text(f"#!/bin/sh\n{script}\n")
    git.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


def test_a_hanging_git_is_stopped_at_its_timeout(tmp_path, monkeypatch):
    _fake_git(tmp_path, monkeypatch, "sleep 30 &\nwait")
    started = time.perf_counter()
    done = run_git(tmp_path, ["status"], timeout=0.5)
    assert time.perf_counter() - started < 3
    assert (done.ok, done.error) == (False, "git status timed out after 0.5 s")


def test_after_a_timeout_a_reader_runs_no_more_git(tmp_path, monkeypatch):
    _fake_git(tmp_path, monkeypatch, "sleep 30 &\nwait")
    reader = GitReader(tmp_path, timeout=0.3)
    started = time.perf_counter()
    assert reader.toplevel().error == "git rev-parse timed out after 0.3 s"
    assert reader.status().error == "not run: an earlier git command timed out"
    assert reader.commit("HEAD") is None and reader.reflog() == []
    assert time.perf_counter() - started < 2


def test_output_over_the_cap_is_cut_and_said(tmp_path, monkeypatch):
    _fake_git(tmp_path, monkeypatch, "yes aaaaaaaaaa | head -c 50000000")
    started = time.perf_counter()
    done = run_git(tmp_path, ["status"], limit=1000)
    assert time.perf_counter() - started < 3
    assert done.ok and done.truncated and done.out == "aaaaaaaaaa\n" * 90 + "aaaaaaaaaa"


def test_a_failing_or_missing_git_is_one_line(tmp_path, monkeypatch):
    _fake_git(tmp_path, monkeypatch, "echo 'fatal: detected dubious ownership' >&2\nexit 128")
    done = run_git(tmp_path, ["status"])
    assert (done.ok, done.error) == (False, "fatal: detected dubious ownership")
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    missing = run_git(tmp_path, ["status"])
    assert not missing.ok and missing.error.startswith("git could not be started")


def test_a_repository_git_cannot_read_in_time_is_a_reason(tmp_path, monkeypatch):
    _fake_git(tmp_path, monkeypatch, "sleep 30 &\nwait")
    session = Session(session_id="s", source=SourceKind.CLAUDE_CODE, cwd=str(tmp_path))
    started = time.perf_counter()
    state = read_final_state(session, FinalStateOptions(timeout=0.3))
    assert time.perf_counter() - started < 2
    assert state.reason == f"git could not read {tmp_path} (git rev-parse timed out after 0.3 s)"
