"""One writer per session across processes (issue 33 item 1).

Two, three and five real `score-backfill` processes over the same sessions of one store,
their judge calls held by a loopback Messages API until all of them have started: each
session is judged (and paid for) exactly once, and the others say which process has it.
A lease never outlives its process (`kill -9`), and a run that skipped a session another
process then stored says so truthfully.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.jobs.run_state import RunEvent
from scorer.jobs.session_leases import SessionLeases
from scorer.settings import get_settings
from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts

REPO = Path(__file__).resolve().parents[2]

HOLD_A_LEASE = """
import sys
from pathlib import Path
from scorer.jobs.session_leases import SessionLeases

store, session, command = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
leases = SessionLeases(store, command)
assert leases.take(session) is None, "the lease is not free"
print("held", flush=True)
if sys.stdin.readline().strip() == "store":  # store a heuristic card, then let go
    from scorer.jobs.score import score_session
    from scorer.sinks.store import ScoreStore
    from scorer.sources import open_file

    with ScoreStore(store) as sink:
        score_session(open_file(Path(sys.argv[4])), judge="heuristic", sinks=[sink])
leases.release(session)
print("released", flush=True)
sys.stdin.readline()
"""


class LeaseHolder:
    """Another process holding one session's lease in the store (`HOLD_A_LEASE`)."""

    def __init__(self, store: Path, session: str, transcript: Path | None = None) -> None:
        args = [str(store), session, "score-backfill", str(transcript or "")]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD_A_LEASE, *args],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "held"
        self.pid = self.proc.pid

    def store_and_release(self, store: bool = True) -> None:
        """Store the session's card (unless not `store`: the holder failed), then give the
        lease back (and wait until it has)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("store\n" if store else "fail\n")
        self.proc.stdin.flush()
        assert self.proc.stdout.readline().strip() == "released"

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def __enter__(self) -> LeaseHolder:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.kill()


def _env(home: Path, server: FakeJudgeServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SCORER_"))}
    env.update(SCORER_HOME=str(home), ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url)
    env.update(SCORER_PREP_PROCESSES="0")
    return env


def _started(home: Path, n: int, procs: list[subprocess.Popen], deadline: float) -> None:
    """Wait until `n` processes hold a lease token beside the store (each has begun
    taking sessions), or one of them has ended (it found nothing left to take)."""
    runs = home / ".scorer-runs"
    while time.monotonic() < deadline:
        tokens = [p for p in runs.glob("*") if not p.name.startswith(".")] if runs.is_dir() else []
        if len(tokens) >= n or any(p.poll() is not None for p in procs):
            return
        time.sleep(0.05)
    raise AssertionError("the backfills did not start")


def concurrent_backfills(root: Path, home: Path, n: int) -> tuple[list[dict], int]:
    """Run `n` backfill processes at once over `root`; their judge calls wait until all
    have started. Returns their JSON summaries and the judge calls the API answered."""
    cmd = [sys.executable, "-m", "scorer.cli.backfill", "--projects-root", str(root)]
    cmd += ["--concurrency", "2", "--json", "--no-progress"]
    with FakeJudgeServer(latency=0.05) as server:
        server.gate = threading.Event()
        env = _env(home, server)
        procs = [
            subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(n)
        ]
        try:
            _started(home, n, procs, time.monotonic() + 120)
            server.gate.set()
            outputs = [p.communicate(timeout=180) for p in procs]
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
        for p, (_, stderr) in zip(procs, outputs, strict=True):
            assert p.returncode == 0, stderr.decode()
        summaries = [json.loads(out.decode().strip().splitlines()[-1]) for out, _ in outputs]
        for summary, p in zip(summaries, procs, strict=True):
            summary["pid"] = p.pid
        return summaries, server.calls


@pytest.mark.slow
@pytest.mark.parametrize("n", [2, 3, 5])
def test_concurrent_backfills_judge_each_session_once(tmp_path, n):
    root, home = tmp_path / "projects", tmp_path / "home"
    ids = make_projects(root, 12)
    summaries, calls = concurrent_backfills(root, home, n)
    assert calls == len(ids)  # one judge call per session: before, n per session
    assert sum(s["scored"] for s in summaries) == len(ids)
    assert score_counts(home / "scores.sqlite3") == dict.fromkeys(ids, 7)
    pids = {s["pid"] for s in summaries}
    others = 0
    for summary in summaries:
        assert summary["scored"] + summary["skipped"] + summary["busy"] == len(ids)
        for result in summary["sessions"]:
            if result["outcome"] == "busy" or "by process" in (result["reason"] or ""):
                others += 1
                pid = int(result["reason"].split("by process ")[1].split()[0])
                assert pid in pids - {summary["pid"]}, result
    assert others  # the lease was met, not only the store's "already scored"


def test_a_session_another_process_is_scoring_is_left_to_it_and_said_so(tmp_path, judge_env):
    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    store = get_settings().store_path
    with FakeJudgeServer() as server, LeaseHolder(store, ids[1]) as holder:
        judge_env(server)
        summary = run_backfill(BackfillOptions(projects_root=root, concurrency=1))
        assert server.calls == 2
    assert (summary.scored, summary.busy) == (2, 1)
    (busy,) = [r for r in summary.sessions if r.outcome == "busy"]
    assert busy.reason == f"being scored by process {holder.pid} (score-backfill)"
    assert any(f"1 session still being scored by process {holder.pid}" in n for n in summary.notes)
    row = Ledger(store, summary.run_key).get(ids[1])
    assert row is not None and row["state"] == "discovered"  # the next run looks again
    again = run_backfill(BackfillOptions(projects_root=root, judge="heuristic"))
    assert again.busy == 0  # the holder is gone: its lease went with it


def test_a_session_the_other_process_stores_meanwhile_is_reported_as_its_work(tmp_path):
    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    store = get_settings().store_path
    transcript = next(root.glob(f"*/{ids[0]}.jsonl"))
    with LeaseHolder(store, ids[0], transcript) as holder:

        def on_event(event: RunEvent) -> None:
            if event.kind == "finished" and event.result and event.result.outcome == "busy":
                holder.store_and_release()  # the other process finishes while we go on

        summary = run_backfill(
            BackfillOptions(projects_root=root, judge="heuristic", concurrency=1),
            events=on_event,
        )
    assert (summary.scored, summary.skipped, summary.busy) == (2, 1, 0)
    (skipped,) = [r for r in summary.sessions if r.outcome == "skipped"]
    assert skipped.reason == f"scored meanwhile by process {holder.pid} (score-backfill)"
    assert skipped.title  # its card, stored by the other process, is in the results table
    assert not any("still being scored" in n for n in summary.notes)
    row = Ledger(store, summary.run_key).get(ids[0])
    assert row is not None and row["state"] == "skipped"
    assert score_counts(store) == dict.fromkeys(ids, 7)


def test_a_session_the_other_process_lets_go_without_a_card_is_left_for_the_next_run(tmp_path):
    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    with LeaseHolder(get_settings().store_path, ids[0]) as holder:

        def on_event(event: RunEvent) -> None:
            if event.kind == "finished" and event.result and event.result.outcome == "busy":
                holder.store_and_release(store=False)  # it failed: no card

        summary = run_backfill(
            BackfillOptions(projects_root=root, judge="heuristic", concurrency=1),
            events=on_event,
        )
    assert (summary.scored, summary.not_started, summary.busy) == (1, 1, 0)
    (left,) = [r for r in summary.sessions if r.outcome == "not_started"]
    assert left.reason and left.reason.startswith(f"left without a card by process {holder.pid}")
    assert run_backfill(BackfillOptions(projects_root=root, judge="heuristic")).scored == 1


def test_a_killed_holders_lease_is_taken_over(tmp_path):
    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    store = get_settings().store_path
    holder = LeaseHolder(store, ids[0])
    holder.kill()  # kill -9: no atexit, no release; the row stays behind
    summary = run_backfill(BackfillOptions(projects_root=root, judge="heuristic"))
    assert (summary.scored, summary.busy) == (2, 0)


def test_leases_within_one_process(tmp_path):
    path = tmp_path / "scores.sqlite3"
    first, second = SessionLeases(path, "a"), SessionLeases(path, "b")
    assert first.take("s") is None
    held = second.take("s")
    assert held is not None and held.command == "this process"
    assert first.holder("s") is None  # ours: nobody else's
    first.release("s")
    assert second.take("s") is None
    second.close()  # gives back what it still holds
    assert first.take("s") is None
    first.close()


def test_calibration_leaves_a_session_another_process_is_scoring(tmp_path):
    from scorer.calibrate import Label
    from scorer.jobs.calibrate_fill import FillOptions, fill

    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    labels = [
        Label(
            session_id=sid,
            dimension="goal_achievement",
            value=2.0,
            annotator="execution",
            source="test",
            meta={"session_path": str(next(root.glob(f"*/{sid}.jsonl")))},
        )
        for sid in ids
    ]
    with LeaseHolder(get_settings().store_path, ids[0]) as holder:
        done = fill(labels, FillOptions(judge="heuristic"))
    assert done.scored == 1
    assert done.busy == [(ids[0], f"being scored by process {holder.pid} (score-backfill)")]
    again = fill(labels, FillOptions(judge="heuristic"))  # the holder is gone
    assert (again.scored, again.reused, again.busy) == (1, 1, [])


def test_a_dry_run_does_not_price_a_session_another_process_is_scoring(tmp_path, judge_env):
    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    with FakeJudgeServer() as server, LeaseHolder(get_settings().store_path, ids[0]) as holder:
        judge_env(server)
        summary = run_backfill(BackfillOptions(projects_root=root, dry_run=True))
        assert server.calls == 0
    busy = {r.session_id: r for r in summary.sessions if r.outcome == "busy"}
    assert list(busy) == [ids[0]] and busy[ids[0]].cost_usd == 0
    assert str(holder.pid) in (busy[ids[0]].reason or "")
    assert summary.busy == 1 and summary.scored == 1  # the other one is priced
