"""Backfill end to end: real sources, prepare, AnthropicJudge and store; fake HTTP judge."""

from __future__ import annotations

import json
import os
from datetime import timedelta

import pytest
from typer.testing import CliRunner

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.settings import get_settings
from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts


@pytest.fixture
def projects(tmp_path):
    root = tmp_path / "projects"
    return root, make_projects(root, 20)


def opts(root, **kw) -> BackfillOptions:
    return BackfillOptions(source="claude-code", projects_root=root, judge="llm", **kw)


def test_backfill_scores_all_with_faults_then_skips_on_rerun(projects, judge_env):
    root, ids = projects
    with FakeJudgeServer(faults=[429, 529, 500, 429, 500]) as server:
        judge_env(server)
        first = run_backfill(opts(root, concurrency=4))
        assert (first.scored, first.failed, first.unscored) == (20, 0, 0)
        assert sum(server.fault_count.values()) == 5 and server.calls == 25
        assert first.rate_limit_pauses["anthropic"] >= 2  # 429 and 529 paused the shared bucket
        assert first.input_tokens == server.input_tokens and first.cost_usd > 0
        again = run_backfill(opts(root, concurrency=4))
        assert (again.scored, again.skipped) == (0, 20) and server.calls == 25
        other_run = run_backfill(opts(root, concurrency=4, seed=9))
        assert other_run.skipped == 20 and other_run.run_key != first.run_key  # store says scored
    counts = score_counts(get_settings().store_path)
    assert set(counts) == set(ids) and set(counts.values()) == {7}


def test_one_bad_session_does_not_stop_the_batch(projects, judge_env):
    root, ids = projects
    bad = root / "-home-dev-proj" / f"{ids[3]}.jsonl"
    old = bad.stat().st_mtime
    bad.write_bytes(b"\x00\x01 not json at all\n")
    os.utime(bad, (old, old))  # still a finished session, not an active one
    with FakeJudgeServer() as server:
        judge_env(server)
        summary = run_backfill(opts(root))
    assert (summary.scored, summary.failed) == (19, 1)
    failure = summary.failures[0]
    assert failure.session_id == ids[3] and failure.reason and failure.attempts == 1
    row = Ledger(get_settings().store_path, summary.run_key).get(ids[3])
    assert row["state"] == "failed" and row["reason"] == failure.reason


def test_dry_run_estimate_within_10_percent_and_spends_nothing(projects, judge_env, monkeypatch):
    """The first verdicts' tokens (second opinions are an expectation over the dev share;
    tests/jobs/test_estimate.py prices them)."""
    root, _ = projects
    monkeypatch.setenv("SCORER_SECOND_OPINIONS", "0")
    with FakeJudgeServer() as server:
        judge_env(server)
        dry = run_backfill(opts(root, dry_run=True))
        assert server.calls == 0 and dry.estimated_cost_usd > 0 and dry.cost_usd == 0
        assert Ledger(get_settings().store_path, dry.run_key).states() == {}
        real = run_backfill(opts(root))
    assert real.scored == 20
    assert abs(dry.estimated_input_tokens - server.input_tokens) <= 0.10 * server.input_tokens


def test_max_cost_stops_starting_sessions_and_resume_finishes(projects, judge_env):
    root, ids = projects
    with FakeJudgeServer() as server:
        judge_env(server)
        dry = run_backfill(opts(root, dry_run=True))
        per_session = dry.estimated_cost_usd / 20
        cap = per_session * 5.5
        capped = run_backfill(opts(root, concurrency=1, max_cost=cap))
        # The estimate assumes more output than the fake writes, so a few more fit.
        assert 5 <= capped.scored < 20 and capped.not_started == 20 - capped.scored
        assert capped.cost_usd <= cap
        assert all(f.reason == "cost cap reached" for f in capped.failures) and not capped.failed
        # A session the cap kept from starting has not used one of its --max-attempts.
        rows = Ledger(get_settings().store_path, capped.run_key).rows()
        assert {r["attempts"] for r in rows if r["state"] == "discovered"} == {0}
        assert {r["attempts"] for r in rows if r["state"] == "written"} == {1}
        rest = run_backfill(opts(root, concurrency=4))
    assert rest.run_key == capped.run_key  # the cap is not part of the run key: a resume
    assert rest.scored == 20 - capped.scored and rest.skipped == capped.scored
    counts = score_counts(get_settings().store_path)
    assert set(counts) == set(ids) and set(counts.values()) == {7}


def test_sample_shard_and_active_sessions(tmp_path, judge_env):
    root = tmp_path / "projects"
    make_projects(root, 12)
    make_projects(root, 2, age=timedelta(minutes=1), project="-home-dev-live")
    with FakeJudgeServer() as server:
        judge_env(server)
        s = run_backfill(opts(root, sample=5, seed=1))
        assert (s.discovered, s.active, s.selected, s.scored) == (12, 2, 5, 5)
        shards = [run_backfill(opts(root, shard=(i, 3), dry_run=True)).selected for i in range(3)]
        assert sum(shards) == 12


def test_cli_json_end_to_end(projects, judge_env):
    import typer

    from scorer.cli.backfill import backfill_command

    root, _ = projects
    app = typer.Typer()
    app.command()(backfill_command)
    with FakeJudgeServer() as server:
        judge_env(server)
        res = CliRunner().invoke(
            app, ["--projects-root", str(root), "--limit", "3", "--json", "--concurrency", "2"]
        )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout.strip().splitlines()[-1])
    assert data["scored"] == 3 and data["selected"] == 3 and data["cost_usd"] > 0
    bad = CliRunner().invoke(app, ["--projects-root", str(root), "--tag", "x"])
    assert bad.exit_code == 2 and "only apply to --source langfuse" in bad.output  # usage


def test_api_outage_is_failed_and_retried_next_run_up_to_max_attempts(tmp_path, judge_env):
    """529s that outlast the retries are infrastructure: `failed`, retried on the next run
    of the same command, until `max_attempts`; never a final `unscored` (issue 12 item 2)."""
    from scorer.judge import retry

    root = tmp_path / "projects"
    (sid,) = make_projects(root, 1)
    with FakeJudgeServer(faults=[529] * (retry.MAX_ATTEMPTS * 2)) as server:
        judge_env(server)
        for run_number in (1, 2):
            summary = run_backfill(opts(root, max_attempts=3))
            assert (summary.failed, summary.unscored) == (1, 0)
            failure = summary.failures[0]
            assert failure.attempts == run_number and "529" in (failure.reason or "")
        assert server.calls == retry.MAX_ATTEMPTS * 2
        third = run_backfill(opts(root, max_attempts=3))  # the outage is over
        assert (third.scored, third.failed) == (1, 0)
        calls = server.calls
        assert run_backfill(opts(root, max_attempts=3)).skipped == 1 and server.calls == calls
    assert score_counts(get_settings().store_path) == {sid: 7}


def test_failed_sessions_stop_being_retried_at_max_attempts(tmp_path, judge_env):
    from scorer.judge import retry

    root = tmp_path / "projects"
    make_projects(root, 1)
    with FakeJudgeServer(faults=[529] * (retry.MAX_ATTEMPTS * 5)) as server:
        judge_env(server)
        for _ in range(2):
            assert run_backfill(opts(root, max_attempts=2)).failed == 1
        calls = server.calls
        last = run_backfill(opts(root, max_attempts=2))
        assert last.failed == 1 and last.failures[0].attempts == 2 and server.calls == calls


def test_cli_max_attempts_option(tmp_path, judge_env, monkeypatch):
    from scorer.cli.backfill import backfill_command
    from scorer.judge import retry

    root = tmp_path / "projects"
    make_projects(root, 1)
    app = typer_app(backfill_command)
    args = ["--projects-root", str(root), "--json", "--no-progress", "--max-attempts", "1"]
    with FakeJudgeServer(faults=[529] * (retry.MAX_ATTEMPTS * 3)) as server:
        judge_env(server)
        first = CliRunner().invoke(app, args)
        assert first.exit_code == 1 and json.loads(first.stdout)["failed"] == 1
        calls = server.calls
        second = CliRunner().invoke(app, args)
        assert json.loads(second.stdout)["failures"][0]["attempts"] == 1
        assert server.calls == calls  # out of attempts: not judged again


def typer_app(command):
    import typer

    app = typer.Typer(add_completion=False)
    app.command()(command)
    return app


def test_too_long_after_rechunks_is_a_final_unscored_verdict(tmp_path, judge_env, monkeypatch):
    """Content the judge cannot take is a verdict (like an unscored reply), not an outage:
    the next run reports it again without trying again."""
    root = tmp_path / "projects"
    make_projects(root, 1)
    with FakeJudgeServer() as server:
        judge_env(server)
        monkeypatch.setenv("SCORER_CONTEXT_WINDOW", "1000")
        get_settings.cache_clear()
        first = run_backfill(opts(root))
        assert (first.unscored, first.failed) == (1, 0), first.failures
        assert "re-chunk" in (first.failures[0].reason or "")
        again = run_backfill(opts(root))
        assert again.unscored == 1 and server.calls == 0


def test_effort_and_fallback_reach_the_judge_and_the_dry_run_basis(projects, judge_env):
    from scorer.cli.main import app
    from scorer.sinks.store import ScoreStore

    root, ids = projects
    with FakeJudgeServer() as server:
        judge_env(server)
        summary = run_backfill(opts(root, limit=2, effort="low", fallback_model=""))
        assert summary.scored == 2
        cards = [ScoreStore().latest(sid, judge="llm") for sid in ids]
        assert {c.effort for c in cards if c} == {"low"}
        dry = CliRunner().invoke(
            app,
            ["backfill", "--projects-root", str(root), "--dry-run", "--effort", "high",
             "--no-progress"],
        )  # fmt: skip
    assert dry.exit_code == 0, dry.stderr
    assert "estimate basis: input: count_tokens" in dry.stderr
    assert "thinking at effort high" in dry.stderr


def test_a_stop_while_preparing_sends_no_more_judge_calls(projects, judge_env):
    """Ctrl-C sets the run's stop: a look-ahead session prepared meanwhile is not judged
    (no spend, quick exit) and stays `discovered` for the next run. The test stops the
    run through `run_backfill(stop=...)` on the third `prepared` event."""
    import threading

    from scorer.jobs.ratelimit import StopSignal
    from scorer.jobs.run_state import RunEvent

    root, _ids = projects
    lock, prepared, stop = threading.Lock(), [], StopSignal()

    def stop_on_third(event: RunEvent) -> None:
        if event.kind == "prepared":
            with lock:
                prepared.append(event.session_id)
                if len(prepared) == 3:
                    stop.set()

    with FakeJudgeServer() as server:
        judge_env(server)
        first = run_backfill(opts(root, concurrency=1), stop=stop, events=stop_on_third)
        # Sessions 1 and 2 were prepared before the stop: 1 is judged; 2 is too unless
        # its request was still waiting for the one slot when the stop came (a loaded
        # machine), which the limiter then cancels. The third is never judged.
        assert first.scored in (1, 2) and server.calls == first.scored
        assert first.not_started == 20 - first.scored and first.failed == 0
        ledger = Ledger(get_settings().store_path, first.run_key)
        assert ledger.get(prepared[2])["state"] == "discovered"
        ledger.close()
        again = run_backfill(opts(root, concurrency=1))
        assert again.scored == 20 - first.scored and server.calls == 20


def test_a_stop_cancels_judge_requests_still_waiting_for_a_slot(projects, judge_env, monkeypatch):
    """Ctrl-C ends the run when the calls on the wire come back: a prepared session whose
    request waits for a `--concurrency` slot sends nothing and stays `discovered`."""
    import threading
    import time

    from scorer.jobs import pipeline

    root, _ids = projects
    real = pipeline.prepare_ref
    contexts: list = []

    def remember(ctx, ref):
        contexts.append(ctx)
        return real(ctx, ref)

    monkeypatch.setattr(pipeline, "prepare_ref", remember)
    with FakeJudgeServer(latency=0.6) as server:
        judge_env(server)

        def stop_during_first_call() -> None:
            while server.calls < 1:
                time.sleep(0.01)
            time.sleep(0.1)  # the look-ahead session is now waiting for the one slot
            contexts[0].stop.set()

        threading.Thread(target=stop_during_first_call, daemon=True).start()
        began = time.monotonic()
        first = run_backfill(opts(root, concurrency=1))
        took = time.monotonic() - began
        assert (first.scored, first.not_started, first.failed) == (1, 19, 0)
        assert server.calls == 1 and took < 5  # no second call after the stop, no hang
        ledger = Ledger(get_settings().store_path, first.run_key)
        states, rows = ledger.states(), ledger.rows()
        ledger.close()
        assert sorted(states.values()).count("discovered") == 19
        # The session whose request never went out got its attempt back, like the rest.
        assert {r["attempts"] for r in rows if r["state"] == "discovered"} == {0}
        monkeypatch.setattr(pipeline, "prepare_ref", real)
        server.latency = 0.0
        again = run_backfill(opts(root, concurrency=1))
        assert (again.scored, again.skipped) == (19, 1)


def test_events_report_each_session_prepared_then_finished(projects):
    root, ids = projects
    seen: list = []  # list.append is atomic: the worker threads report into one list
    options = BackfillOptions(source="claude-code", projects_root=root, judge="heuristic")
    summary = run_backfill(options.model_copy(update={"concurrency": 4}), events=seen.append)
    assert summary.scored == 20
    finished = {e.session_id: i for i, e in enumerate(seen) if e.kind == "finished"}
    prepared = {e.session_id: i for i, e in enumerate(seen) if e.kind == "prepared"}
    assert sorted(finished) == sorted(prepared) == sorted(ids) and len(seen) == 40
    assert all(prepared[sid] < finished[sid] for sid in ids)
    assert {seen[i].result.outcome for i in finished.values()} == {"scored"}


def test_a_langfuse_discovery_without_a_langfuse_client_names_the_keys(tmp_path):
    """Services built by hand without Langfuse: `--source langfuse` says which keys to set."""
    from datetime import UTC, datetime

    from scorer.errors import CredentialsError
    from scorer.jobs.backfill import Services, discover
    from scorer.judge.base import make_judge
    from scorer.sinks.store import ScoreStore

    services = Services(lambda ref: None, make_judge("heuristic"), ScoreStore(tmp_path / "s.db"))
    start = datetime(2026, 11, 1, tzinfo=UTC)
    opts = BackfillOptions(source="langfuse", start=start)
    with pytest.raises(CredentialsError, match="LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"):
        discover(opts, services, now=start + timedelta(days=1))
    services.store.close()
