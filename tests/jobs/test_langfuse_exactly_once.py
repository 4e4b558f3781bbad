"""Issue 12: what the real Langfuse does to exactly-once, on a small synthetic world.

Backfill (heuristic judge) → the real SDK client → the respx `FakeLangfuse`.
"""

from __future__ import annotations

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
        assert score_counts(fake)["exact-b"] == 6
        row = Ledger(get_settings().store_path, first.run_key).get("exact-b")
        assert row["state"] == "stored"

        fake.reject = None
        # Another run key (another seed) must not skip it as "already scored" either.
        other = run(seed=7)
        assert other.run_key != first.run_key
        assert (other.scored, other.skipped, other.incomplete) == (1, 2, 0)
        assert score_counts(fake) == dict.fromkeys(SESSIONS, 7)
        assert dict(stored_runs()) == dict.fromkeys(SESSIONS, 1)  # never judged twice


def test_207_partial_then_scores_push_finishes_it(tmp_path, lf_env):
    with FakeLangfuse(small_world(tmp_path)) as fake:
        fake.reject = reject_one("exact-c", "goal_achievement")
        assert run().incomplete == 1
        fake.reject = None
        pushed = CliRunner().invoke(app, ["scores", "push"], catch_exceptions=False)
        assert pushed.exit_code == 0, pushed.stderr
        assert "pushed 1 of 1" in pushed.stderr
        assert score_counts(fake) == dict.fromkeys(SESSIONS, 7)
        again = run()  # the same command: its ledger row is finished (idempotent ids)
        assert again.incomplete == 0 and score_counts(fake) == dict.fromkeys(SESSIONS, 7)
