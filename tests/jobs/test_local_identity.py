"""A local transcript whose file name is not its `sessionId` (a copy, a rename) is one
session to the backfill: judged and paid for once, however often the command reruns."""

from __future__ import annotations

import os
import sqlite3

import pytest

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.settings import get_settings
from tests.jobs.helpers import FakeJudgeServer, make_projects, score_counts


@pytest.mark.parametrize("batch_api", [False, True])
def test_a_file_named_apart_from_its_session_id_is_judged_once_across_reruns(
    tmp_path, monkeypatch, batch_api
):
    root = tmp_path / "projects"
    real, other = make_projects(root, 2)
    folder = root / "-home-dev-proj"
    renamed = folder / "copied-from-laptop.jsonl"
    stat = (folder / f"{real}.jsonl").stat()
    (folder / f"{real}.jsonl").rename(renamed)
    os.utime(renamed, (stat.st_atime, stat.st_mtime))
    monkeypatch.setenv("SCORER_BATCH_POLL_SECONDS", "0")
    opts = BackfillOptions(
        source="claude-code", projects_root=root, judge="llm", batch_api=batch_api
    )
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        first = run_backfill(opts)
        assert (first.scored, first.failed) == (2, 0)
        paid = (server.calls, server.batch_creates, server.input_tokens)
        assert paid[0] + paid[1] > 0
        for _ in range(2):
            again = run_backfill(opts)
            assert again.scored == again.failed == 0
            assert again.skipped == 2
        assert (server.calls, server.batch_creates, server.input_tokens) == paid
    store = get_settings().store_path
    assert score_counts(store) == {real: 7, other: 7}  # filed under the id it reports
    with sqlite3.connect(store) as db:
        rows = dict(db.execute("SELECT session_id, state FROM backfill_sessions"))
    assert rows == {real: "written", other: "written"}
