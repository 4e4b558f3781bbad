"""Issue 12: what the real Langfuse does to exactly-once, on a small synthetic world.

Backfill (heuristic judge) → the real SDK client → the respx `FakeLangfuse`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.jobs.ledger import Ledger
from scorer.settings import get_settings
from tests.jobs.test_backfill_langfuse import NOW, lf_env, opts, stored_runs, synthetic
from tests.langfuse.fake_server import FakeLangfuse

__all__ = ["lf_env"]  # the fixture, re-used

SESSIONS = ["exact-a", "exact-b", "exact-c"]


def small_world(tmp_path) -> list[dict]:
    out: list[dict] = []
    for i, sid in enumerate(SESSIONS):
        out += synthetic(tmp_path, sid, datetime(2026, 11, 20, 6 + i, tzinfo=UTC))
    return out


def run(**kw: Any):
    from scorer.jobs.backfill import run_backfill

    return run_backfill(opts(**kw), now=NOW)


def reject_one(session_id: str, name: str = "tool_efficiency"):
    def reject(item: dict) -> str | None:
        if item.get("sessionId") == session_id and item["name"] == name:
            return f"Score {name} value does not match the config"
        return None

    return reject


PUSHED = 8
"""Langfuse scores per session: the seven and goal_probability (the heuristic judge's
cards carry one)."""


def score_counts(fake: FakeLangfuse) -> dict[str, int]:
    return {sid: len(ids) for sid, ids in fake.session_score_ids().items()}


def test_207_partial_is_incomplete_and_the_next_run_of_another_key_finishes_it(tmp_path, lf_env):
    with FakeLangfuse(small_world(tmp_path)) as fake:
        fake.reject = reject_one("exact-b")
        first = run()
        assert (first.scored, first.incomplete, first.failed) == (2, 1, 0)
        (incomplete,) = first.failures
        assert incomplete.session_id == "exact-b" and incomplete.outcome == "incomplete"
        assert "tool_efficiency" in (incomplete.reason or "")
        assert score_counts(fake)["exact-b"] == PUSHED - 1
        row = Ledger(get_settings().store_path, first.run_key).get("exact-b")
        assert row["state"] == "stored"

        fake.reject = None
        # Another run key (another seed) must not skip it as "already scored" either.
        other = run(seed=7)
        assert other.run_key != first.run_key
        assert (other.scored, other.skipped, other.incomplete) == (1, 2, 0)
        assert score_counts(fake) == dict.fromkeys(SESSIONS, PUSHED)
        assert dict(stored_runs()) == dict.fromkeys(SESSIONS, 1)  # never judged twice


def test_207_partial_then_scores_push_finishes_it(tmp_path, lf_env):
    with FakeLangfuse(small_world(tmp_path)) as fake:
        fake.reject = reject_one("exact-c", "goal_achievement")
        assert run().incomplete == 1
        fake.reject = None
        pushed = CliRunner().invoke(app, ["scores", "push"], catch_exceptions=False)
        assert pushed.exit_code == 0, pushed.stderr
        assert "pushed 1 of 1" in pushed.stderr
        assert score_counts(fake) == dict.fromkeys(SESSIONS, PUSHED)
        again = run()  # the same command: its ledger row is finished (idempotent ids)
        assert again.incomplete == 0 and score_counts(fake) == dict.fromkeys(SESSIONS, PUSHED)


# --- 202 is not stored: archived configs, re-checks, read-back -----------------------


def archive(fake: FakeLangfuse, name: str) -> str:
    cid = next(c["id"] for c in fake.configs.values() if c["name"] == name)
    fake.configs[cid]["isArchived"] = True  # as done in the Langfuse UI
    return cid


def test_config_archived_between_runs_is_repaired_before_pushing(tmp_path, lf_env):
    world = small_world(tmp_path)
    with FakeLangfuse(world[: len(world) // 3]) as fake:  # exact-a only
        assert run().scored == 1
        cid = archive(fake, "goal_achievement")
        # The next run re-checks the cached ids once, unarchives, then pushes.
        assert run(rescore=True).scored == 1
        assert fake.configs[cid]["isArchived"] is False
        assert not fake.dropped and score_counts(fake) == {"exact-a": PUSHED}


def test_scores_dropped_after_202_are_found_by_the_read_back(tmp_path, lf_env):
    with FakeLangfuse(small_world(tmp_path)) as fake:
        pushes = []

        def archive_after_first_push(route: str, response) -> None:
            pushes.append(route)
            if route == "scores" and pushes.count("scores") == 1:
                archive(fake, "error_handling")  # someone archives it mid-run

        fake.on_response = archive_after_first_push
        first = run(concurrency=1, verify_sample=10)
        fake.on_response = None
        assert first.verified == 3
        assert (first.scored, first.failed) == (1, 2), first.failures
        lost = {f.session_id: f.reason for f in first.failures}
        assert all("error_handling" in r and "archived" in r for r in lost.values())
        assert len(fake.dropped) == 2
        for sid in lost:
            assert Ledger(get_settings().store_path, first.run_key).get(sid)["state"] == "stored"

        # The store knows: `scorer scores verify` counts them as waiting for a push.
        verify = CliRunner().invoke(app, ["scores", "verify"], catch_exceptions=False)
        assert "2 scorecards wait for `scorer scores push`" in verify.stderr
        assert "verified 1 scorecard: 0 incomplete" in verify.stderr

        second = run(concurrency=1, verify_sample=10)  # re-check repairs; re-push
        assert second.failed == 0 and second.scored == 2
        assert score_counts(fake) == dict.fromkeys(SESSIONS, PUSHED)
        verify = CliRunner().invoke(app, ["scores", "verify"], catch_exceptions=False)
        assert verify.exit_code == 0 and "verified 3 scorecards: 0 incomplete" in verify.stderr
        assert dict(stored_runs()) == dict.fromkeys(SESSIONS, 1)


def test_scores_verify_since_and_push_finishes_what_was_lost(tmp_path, lf_env):
    with FakeLangfuse(small_world(tmp_path)) as fake:
        assert run().scored == 3
        lost_id = next(iter(fake.scores))
        lost_session = fake.scores.pop(lost_id)["sessionId"]  # gone after the 202
        future = CliRunner().invoke(app, ["scores", "verify", "--since", "2999-01-01"])
        assert future.exit_code == 0 and "nothing pushed to verify" in future.stderr
        verify = CliRunner().invoke(app, ["scores", "verify", "--json"])
        assert verify.exit_code == 1
        assert list(json.loads(verify.stdout)["missing"]) == [lost_session]
        pushed = CliRunner().invoke(app, ["scores", "push"])
        assert pushed.exit_code == 0 and "pushed 1 of 1" in pushed.stderr
        assert lost_id in fake.scores
        assert CliRunner().invoke(app, ["scores", "verify"]).exit_code == 0


# --- smaller items -------------------------------------------------------------------


def test_local_only_sessions_are_never_queued_for_review(tmp_path, lf_env):
    from scorer.jobs.backfill import BackfillOptions, run_backfill
    from tests.jobs.helpers import make_projects
    from tests.langfuse.plugin_fixture import convert_transcript

    root = tmp_path / "projects"
    ids = make_projects(root, 3)
    traced = convert_transcript(root / "-home-dev-proj" / f"{ids[0]}.jsonl")
    with FakeLangfuse(traced) as fake:
        summary = run_backfill(
            BackfillOptions(
                source="claude-code", projects_root=root, judge="heuristic", escalate_below=1.0
            )
        )
        assert summary.scored == 3
        assert summary.escalated == [ids[0]]
        assert summary.not_queued == sorted(ids[1:])
        (queue,) = fake.queues
        assert [i["objectId"] for i in fake.queue_items[queue]] == [ids[0]]


def test_backfill_against_self_hosted_v3_end_to_end_and_idempotent_rerun(tmp_path, lf_env):
    from tests.langfuse.fake_v3 import FakeLangfuseV3

    with FakeLangfuseV3(small_world(tmp_path)) as v3:
        first = run(verify_sample=3)
        assert (first.discovered, first.scored, first.failed) == (3, 3, 0), first.failures
        assert first.verified == 3
        assert v3.calls["observations"] == 1  # one 404, then legacy for the whole run
        assert v3.calls["traces"] >= 1 and v3.calls["sessions"] == 3
        assert score_counts(v3) == dict.fromkeys(SESSIONS, PUSHED)
        # One ingestion batch of eight per session, never a refused list.
        assert [len(b) for b in v3.score_batches] == [PUSHED] * 3 and v3.calls["scores"] == 0
        assert v3.calls["health"] == 1
        v3.today = "2026-11-26"
        again = run(rescore=True)  # same scores, another day: the same rows
        assert again.scored == 3 and v3.calls["ingestion"] == 6
        assert not v3.duplicate_ids()


def test_scores_verify_trace_target(tmp_path, lf_env):
    world = small_world(tmp_path)
    with FakeLangfuse(world) as fake:
        for sid in SESSIONS:
            score = CliRunner().invoke(
                app, ["session", sid, "--source", "langfuse", "--judge", "heuristic", "--push",
                      "--target", "trace"],
            )  # fmt: skip
            assert score.exit_code == 0, score.stderr
        assert all(item.get("traceId") for item in fake.scores.values())
        wrong = CliRunner().invoke(app, ["scores", "verify"])  # looks for session scores
        assert wrong.exit_code == 1
        CliRunner().invoke(app, ["scores", "push", "--target", "trace"])
        right = CliRunner().invoke(app, ["scores", "verify", "--target", "trace"])
        assert right.exit_code == 0, right.stderr
        assert "verified 3 scorecards: 0 incomplete" in right.stderr
