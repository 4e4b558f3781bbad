"""A backfill against the metered fake API at an input limit below its sessions' size:
every session is judged (chunks re-planned under the limit, nothing left waiting), the
learned limits are remembered, and the next dry run forecasts at them."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta

from typer.testing import CliRunner

from scorer.jobs.account import LIMITS_FILE
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.settings import get_settings
from tests.fakes.ratelimits import Limits
from tests.jobs.helpers import FakeJudgeServer, transcript_lines

ITPM = 20_000
"""Below one session (~23k tokens in one chunk at the default budget)."""


def big_sessions(root, n: int) -> None:
    folder = root / "-home-dev-proj"
    folder.mkdir(parents=True)
    when = datetime.now(UTC) - timedelta(hours=2)
    for i in range(n):
        sid = str(uuid.UUID(int=i + 1))
        lines = transcript_lines(sid, when, n_steps=600)
        path = folder / f"{sid}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        os.utime(path, (when.timestamp(), when.timestamp()))


def stored_cards() -> list:
    from scorer.sinks.store import ScoreStore

    store = ScoreStore()
    try:
        return [store.latest(str(uuid.UUID(int=i + 1)), judge="llm") for i in range(3)]
    finally:
        store.close()


def test_sessions_larger_than_the_input_limit_are_all_judged(tmp_path, monkeypatch, clean_env):
    root = tmp_path / "projects"
    big_sessions(root, 3)
    # a fake minute of 1 s: the whole run is a few seconds
    with FakeJudgeServer(limits=Limits(1_000, ITPM, 400_000), time_scale=60) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        opts = BackfillOptions(projects_root=root, judge="llm", concurrency=4)
        summary = run_backfill(opts)
    assert (summary.scored, summary.failed, summary.unscored) == (3, 0, 0), summary.failures
    assert server.account is not None
    # Only calls sent before the limits and the tokens per character were learned (one at
    # a time) can be refused: the first one always is, being larger than the bucket.
    assert 1 <= server.account.refused <= 2
    learned = summary.rate_limits["claude-sonnet-5-5"]
    assert (learned["rpm"], learned["itpm"], learned["otpm"]) == (1_000, ITPM, 400_000)
    assert learned["period_s"] < 5  # the fake's 1-second minute, learned from -reset
    notes = [n for card in stored_cards() for n in card.meta.get("notes", [])]
    assert any("can never fit the account's 20,000 input tokens per minute" in n for n in notes)
    saved = json.loads((clean_env / LIMITS_FILE).read_text())
    assert saved["claude-sonnet-5-5"]["itpm"] == ITPM

    # The next run plans its chunks under the remembered limit from its first session.
    with FakeJudgeServer(limits=Limits(1_000, ITPM, 400_000), time_scale=60) as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        again = run_backfill(opts.model_copy(update={"rescore": True}))
    assert again.scored == 3 and server.account is not None and server.account.refused == 0
    [note] = [n for n in again.notes if "chunks planned under" in n]
    assert "20,000 input tokens per minute (learned 20" in note

    # The next dry run plans and forecasts at the remembered limits. A dry run prices only
    # what its run would judge: these sessions are scored, so it is a --rescore, and over
    # another window (a new run key: the runs above finished them under theirs).
    from scorer.cli.main import app

    args = ["--projects-root", str(root), "--dry-run", "--rescore", "--from", "2020-01-01"]
    args += ["--judge", "llm", "--json"]
    dry = CliRunner().invoke(app, ["backfill", *args])
    assert dry.exit_code == 0, dry.stderr
    forecast = json.loads(dry.stdout)["forecast"]
    assert forecast["limits_source"].startswith("learned") and forecast["itpm"] == ITPM
    assert forecast["binding"] == "input-tokens" and forecast["requests"] >= 6
    assert forecast["wall_seconds"] > 0 and forecast["batch_cost_usd"] < forecast["cost_usd"]
