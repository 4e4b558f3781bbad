"""The workspace's final state (`scorer.live.final_state`) on real git repositories with
commits at controlled times and transcripts shaped like Claude Code's: which workspace
counts as the session's, where its history stood, and what the judge reads."""

from __future__ import annotations

import os
import shutil
from datetime import timedelta

from scorer.live.final_state import FinalStateOptions, add_final_state, read_final_state
from scorer.live.final_state_text import OBSERVED
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare import prepare
from scorer.prepare.render import DEFAULT_MAX_OUTPUT_CHARS
from scorer.sources import resolve_file
from tests.live.workspace_helpers import END, NOW, START, commit, git, make_repo, transcript

OPTIONS = FinalStateOptions()
TASK = "Add app.py and write the report to `out/report.md`."


def _session(tmp_path, repo, **kw) -> Session:
    path = transcript(
        tmp_path / "projects" / "-app" / "s.jsonl", cwd=repo, task=kw.pop("task", TASK), **kw
    )
    return resolve_file(str(path)).load()


def _added(session: Session) -> list[str]:
    return [e.text for e in session.events if e.meta.get("observed_by") == "session-scorer"]


def test_a_session_that_committed_and_left_changes(tmp_path):
    repo = make_repo(tmp_path / "app")
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "print('hi')\n", "out/report.md": "# Report\nall good\n"}, "add app",
           START + timedelta(minutes=20))  # fmt: skip
    (repo / "app.py").write_text("print('hello')\n")
    (repo / "notes.txt").write_text("todo\n")
    (repo / "__pycache__").mkdir()
    (repo / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0\1")
    session = _session(tmp_path, repo)
    n = session.n_events
    out = add_final_state(session, OPTIONS, now=NOW)
    added = out.events[n:]
    assert [e.index for e in added] == list(range(n + 1, n + 1 + len(added)))
    assert all(e.kind is EventKind.SYSTEM and "FINAL STATE" in e.text for e in added)
    head, changes, app, report = (e.text for e in added)
    assert OBSERVED in head and "10 min after the session ended; HEAD has not moved" in head
    assert ".M app.py (modified)" in head and "?? notes.txt (untracked)" in head
    assert "1 untracked build/cache path not listed" in head and "pycache" not in head
    assert f"{first[:8]} (HEAD at the session's start, from the reflog)" in changes
    assert "to the work tree (uncommitted changes included)" in changes
    assert "1 commit in the session; 2 files changed, +3 -0" in changes
    assert "deliverable out/report.md (named by the task): exists, 18 bytes, 2 lines" in report
    assert report.endswith("first 2 lines:\n    # Report\n    all good")
    assert "deliverable app.py" in app and "git status .M" in app
    assert out.extra["final_state"]["events"] == [n + 1, n + 4]
    assert session.n_events == n  # the loaded session is left as it was


def test_the_judge_material_holds_the_events_after_the_last_one(tmp_path):
    repo = make_repo(tmp_path / "app")
    prepared = prepare(add_final_state(_session(tmp_path, repo), OPTIONS, now=NOW))
    last = prepared.chunks[-1]
    assert last.event_indices[-4:] == [9, 10, 11, 12]
    assert "#9 SYSTEM:\nFINAL STATE (observed by session-scorer" in last.text
    assert "#11 SYSTEM: FINAL STATE · deliverable app.py" in last.text


def test_a_session_ending_with_our_score_command_keeps_its_final_state(tmp_path):
    """`/session-scorer:score`'s block runs to the next thing the user does, or to the
    end: the final state appended after it is not part of it."""
    session = _session(tmp_path, make_repo(tmp_path / "app"))
    command = "/session-scorer:score"
    session.events += [
        Event(index=9, kind=EventKind.COMMAND, text=command, meta={"command": command}),
        Event(index=10, kind=EventKind.META, text="## session-scorer's scorecard …"),
        Event(
            index=11,
            kind=EventKind.ASSISTANT,
            text="overall 0.8",
            meta={"plugin": "session-scorer"},
        ),
    ]
    prepared = prepare(add_final_state(session, OPTIONS, now=NOW))
    rendered = {e.index: e.text for e in prepared.events}
    assert rendered[9].startswith("#9 SYSTEM: [session-scorer's /session-scorer:score")
    assert "3 events left out" in rendered[9]
    assert [i for i, text in rendered.items() if "FINAL STATE" in text] == [12, 13, 14, 15]


def test_without_a_reflog_the_start_comes_from_commit_times(tmp_path):
    repo = make_repo(tmp_path / "app")
    first = git(repo, "rev-parse", "HEAD")
    commit(repo, {"app.py": "x\n"}, "add app", START + timedelta(minutes=5))
    git(repo, "reflog", "expire", "--expire=all", "--all")
    state = read_final_state(_session(tmp_path, repo), OPTIONS, now=NOW)
    assert state.start.commit == first
    assert (
        state.start.how
        == "the newest commit before the session's start (the reflog does not reach it)"
    )


def test_a_repository_the_session_created_is_compared_with_the_empty_tree(tmp_path):
    repo = make_repo(tmp_path / "app", when=START + timedelta(minutes=2))
    commit(repo, {"app.py": "x\n"}, "add app", START + timedelta(minutes=5))
    out = add_final_state(_session(tmp_path, repo), OPTIONS, now=NOW)
    changes = _added(out)[1]
    assert "the empty tree (no commit yet at the session's start" in changes
    assert "2 commits in the session; 2 files changed, +2 -0" in changes


def test_commits_after_the_session_are_counted_and_left_out_of_the_diff(tmp_path):
    repo = make_repo(tmp_path / "app")
    end_head = commit(repo, {"app.py": "x\n"}, "add app", START + timedelta(minutes=5))
    commit(repo, {"later.py": "y\n"}, "the user's own work", NOW - timedelta(minutes=3))
    head, changes, *_ = _added(add_final_state(_session(tmp_path, repo), OPTIONS, now=NOW))
    assert "10 min after the session ended; 1 commit made since" in head
    assert f"to {end_head[:8]} (HEAD at the session's end; 1 later commit left out)" in changes
    assert "app.py" in changes and "later.py" not in changes


def test_a_checkout_since_the_session_is_said(tmp_path):
    repo = make_repo(tmp_path / "app")
    commit(repo, {"app.py": "x\n"}, "add app", START + timedelta(minutes=5))
    git(repo, "checkout", "-q", "-b", "other", "HEAD~1", when=NOW - timedelta(minutes=2))
    head, changes, *_ = _added(add_final_state(_session(tmp_path, repo), OPTIONS, now=NOW))
    assert "HEAD has moved since (a checkout or a reset)" in head and "branch other" in head
    assert "HEAD at the session's end" in changes and "app.py" in changes


def test_a_session_without_times_gets_the_status_but_no_diff(tmp_path):
    repo = make_repo(tmp_path / "app")
    session = Session(session_id="s", source=SourceKind.CLAUDE_CODE, cwd=str(repo), task=TASK)
    head, changes, *_ = _added(add_final_state(session, OPTIONS, now=NOW))
    assert "when the session ended is not known" in head
    assert changes == (
        "FINAL STATE · changes since the session's first commit: not shown "
        "(the session's start is not known)."
    )


def test_times_without_an_offset_are_utc(tmp_path):
    repo = make_repo(tmp_path / "app")
    naive = Session(session_id="s", source=SourceKind.CLAUDE_CODE, cwd=str(repo), task=TASK,
                    started_at=START.replace(tzinfo=None), ended_at=END.replace(tzinfo=None))  # fmt: skip
    head, changes, *_ = _added(add_final_state(naive, OPTIONS, now=NOW))
    assert "10 min after the session ended" in head and "from the reflog" in changes


def _reason(session: Session) -> str:
    out = add_final_state(session, OPTIONS, now=NOW)
    assert out.events == session.events and out.extra["final_state"]["read"] is False
    return out.extra["final_state"]["reason"]


def _absent(session: Session) -> str:
    """Nothing of the workspace is here: the session is returned as it is, no note."""
    assert add_final_state(session, OPTIONS, now=NOW) is session
    state = read_final_state(session, OPTIONS, now=NOW)
    assert state.absent and not state.read
    return state.reason


def test_a_working_directory_that_is_not_here_gets_none(tmp_path):
    gone = tmp_path / "gone"
    assert _absent(_session(tmp_path, gone)) == f"its working directory {gone} does not exist here"
    relative = Session(session_id="s", source=SourceKind.CLAUDE_CODE, cwd="app")
    assert _absent(relative) == "its working directory app does not exist here"


def test_another_repository_at_the_path_gets_none(tmp_path):
    other_branch = make_repo(tmp_path / "a", branch="trunk")
    why = _reason(_session(tmp_path, other_branch, branch="feature/login"))
    assert why.startswith("none of the session's branches (feature/login) is a branch of")
    recreated = make_repo(tmp_path / "b", when=NOW - timedelta(minutes=1))
    assert "a repository re-created at the same path" in _reason(_session(tmp_path, recreated))
    plain = tmp_path / "plain"
    plain.mkdir()
    assert "is not in a git repository" in _reason(_session(tmp_path, plain))


def test_an_old_session_or_a_remote_one_gets_none(tmp_path):
    repo = make_repo(tmp_path / "app", when=START - timedelta(days=5))
    old = _session(tmp_path, repo, start=START - timedelta(days=3), end=END - timedelta(days=3))
    assert _reason(old) == (
        "the session ended more than 24 h before it was scored (SCORER_FINAL_STATE_MAX_AGE): "
        "its workspace has likely moved on"
    )
    remote = Session(session_id="s", source=SourceKind.LANGFUSE, cwd=str(repo))
    assert _absent(remote) == "a langfuse session may have run elsewhere"


def test_turned_off_it_reads_nothing(tmp_path):
    session = _session(tmp_path, make_repo(tmp_path / "app"))
    assert add_final_state(session, FinalStateOptions(enabled=False), now=NOW) is session
    assert add_final_state(session, None, now=NOW) is session


def test_the_section_is_bounded(tmp_path):
    repo = make_repo(tmp_path / "app")
    files = {f"src/module_{i:03d}.py": "x = 1\n" * (i + 1) for i in range(60)}
    files |= {f"docs/part_{i}.md": "".join(f"line {j}\n" for j in range(50)) for i in range(20)}
    commit(repo, files, "many files", START + timedelta(minutes=5))
    for i in range(400):
        (repo / f"untracked_{i:04d}_{'n' * 150}.txt").write_text("u\n")
    names = " ".join(f"docs/part_{i}.md" for i in range(20))
    out = add_final_state(_session(tmp_path, repo, task=f"Write {names}."), OPTIONS, now=NOW)
    added = _added(out)
    assert len(added) == 2 + 12  # at most 12 deliverables
    assert all(len(text) < DEFAULT_MAX_OUTPUT_CHARS for text in added)  # none is cut
    head, changes = added[:2]
    assert "400 untracked" in head and "[… 380 more]" in head
    assert "80 files changed" in changes and "[… 60 more files]" in changes
    shown = sum(t.count("\n    line ") for t in added[2:])
    assert shown == 60  # the preview budget over all deliverables
    assert "lines not shown: the section shows at most 60 lines of files" in added[-1]


def test_a_status_longer_than_the_cap_is_cut_and_says_so(tmp_path):
    repo = make_repo(tmp_path / "app")
    for i in range(1500):  # ~300 KB of porcelain output: over the 256 KiB cap
        (repo / f"{i:05d}_{'x' * 190}.txt").write_text("u\n")
    state = read_final_state(_session(tmp_path, repo), OPTIONS, now=NOW)
    assert state.status_cut and 1000 < len(state.status) < 1500
    head = _added(add_final_state(_session(tmp_path, repo), OPTIONS, now=NOW))[0]
    assert "[… more than " in head


def test_git_reads_leave_the_repository_as_it_was(tmp_path, monkeypatch):
    """No index refresh (`--no-optional-locks`), no fsmonitor program, and the caller's
    GIT_DIR does not redirect the reads."""
    repo = make_repo(tmp_path / "app")
    marker = tmp_path / "fsmonitor-ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    # stat data changed: a plain `git status` (or `git diff`) would rewrite the index
    os.utime(repo / "README.md", (0, 0))
    index = (repo / ".git" / "index").read_bytes()
    decoy = make_repo(tmp_path / "decoy")
    monkeypatch.setenv("GIT_DIR", str(decoy / ".git"))
    state = read_final_state(_session(tmp_path, repo), OPTIONS, now=NOW)
    assert state.read and state.repo == str(repo.resolve())
    assert (repo / ".git" / "index").read_bytes() == index
    assert not marker.exists()
    assert not (repo / ".git" / "index.lock").exists()
    shutil.rmtree(decoy)
