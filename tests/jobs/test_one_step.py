"""One judging step for every path: the same session judged by `score-session`, the direct
backfill, the `--batch-api` backfill and calibration leaves the same stored card.

Each path runs against the same loopback Messages + Message Batches fake with its own
store; the stored cards are compared field by field, and the stored timelines too. What
legitimately differs is left out: when the card was made, its usage and cost (Message
Batches bill half, and the fake's prompt cache warms differently), `meta.batch` (the
batch ids, on batched cards only) and `collection` (calibration runs are kept apart), and `backend` (`batch` on batched cards: how the
requests travelled).
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from scorer.calibrate import Label
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.calibrate_fill import FillOptions, fill
from scorer.jobs.score import score_session
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.jobs.helpers import FakeJudgeServer, transcript_lines

PATHS = ("score-session", "backfill", "batch-api", "calibration")
DIFFERS = {"created_at", "usage", "cost_usd", "collection", "backend"}
"""Card fields a path may legitimately change (see the module docstring)."""


def _judge(path: str, transcript: Path, root: Path, session_id: str) -> None:
    if path == "score-session":
        score_session(resolve(str(transcript)), judge="llm")
    elif path in ("backfill", "batch-api"):
        opts = BackfillOptions(
            source="claude-code", projects_root=root, judge="llm", batch_api=path == "batch-api"
        )
        summary = run_backfill(opts)
        assert summary.scored == 1, summary.failures
    else:
        label = Label(
            session_id=session_id, dimension="goal_achievement", value=2.0,
            annotator="execution", source="test", meta={"session_path": str(transcript)},
        )  # fmt: skip
        done = fill([label], FillOptions(judge="llm"))
        assert (done.scored, done.failed) == (1, []), done.failed


def stored_by(monkeypatch, path: str, transcript: Path, root: Path, session_id: str):
    """The card and timeline the path left in its own store."""
    monkeypatch.setenv("SCORER_HOME", str(root.parent / path))
    get_settings.cache_clear()
    _judge(path, transcript, root, session_id)
    with ScoreStore() as store:
        card = store.latest(session_id, judge="llm")
        timeline = store.timeline(session_id)
    assert card is not None and timeline
    return card, timeline


def comparable(card: Any) -> dict[str, Any]:
    data = card.model_dump(mode="json", exclude=DIFFERS)
    data["meta"].pop("batch", None)
    data["meta"].pop("first_scored_at", None)  # the store's clock
    return data


@pytest.mark.parametrize("budget", ["70000", "1500"], ids=["one-chunk", "chunked"])
def test_every_path_stores_the_same_card(tmp_path, monkeypatch, budget):
    root = tmp_path / "projects"
    session_id = "0d3e5f1a-0000-4e8d-9a61-5b4c3d2e1f00"
    transcript = root / "-home-dev-proj" / f"{session_id}.jsonl"
    transcript.parent.mkdir(parents=True)
    when = datetime.now(UTC) - timedelta(hours=2)  # finished: older than the idle threshold
    lines = transcript_lines(session_id, when, n_steps=40)
    transcript.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    os.utime(transcript, (when.timestamp(), when.timestamp()))
    monkeypatch.setenv("SCORER_CHUNK_BUDGET", budget)
    monkeypatch.setenv("SCORER_BATCH_POLL_SECONDS", "0")
    cards, timelines = {}, {}
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        for path in PATHS:
            cards[path], timelines[path] = stored_by(
                monkeypatch, path, transcript, root, session_id
            )
        assert server.batch_creates >= 1  # the batch path really batched
    first = cards["score-session"]
    assert first.status == "scored" and first.session.started_at is not None
    assert first.meta["origin"] and first.meta["redactions"] == 0
    assert (first.n_chunks > 1) == (budget == "1500")
    assert "batch" in cards["batch-api"].meta
    want = comparable(first)
    for path in PATHS[1:]:
        got = comparable(cards[path])
        assert {k: v for k, v in got.items() if v != want[k]} == {}, path
        assert timelines[path] == timelines["score-session"], path
