"""Test helpers for the backfill: transcripts, a SQLite fake store, a loopback fake judge.

The fake judge is a real HTTP server on 127.0.0.1 speaking the Messages API (and Message
Batches), so the real anthropic SDK, the real `AnthropicJudge` and even a subprocess
(`python -m scorer.cli.backfill` with ANTHROPIC_BASE_URL pointed at it) can use it. It
reports `input_tokens` = `TokenCounter` count of system text + message contents, which
is what the dry-run estimate predicts.
"""

from __future__ import annotations

import json
import os
import sqlite3
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

from scorer.models import Scorecard
from tests.fakes import anthropic as FA
from tests.fakes.anthropic import FakeJudgeServer

__all__ = ["FA", "FakeJudgeServer"]


# --- transcripts ---------------------------------------------------------------------


def transcript_lines(
    session_id: str, start: datetime, n_steps: int = 3, task: str = "fix the failing test"
) -> list[dict]:
    """A small native Claude Code transcript: prompt, tool calls with results, final text."""
    lines: list[dict] = []
    parent = None
    t = start

    def env(kind: str, message: dict) -> dict:
        nonlocal parent, t
        t += timedelta(seconds=5)
        rec = {
            "type": kind,
            "sessionId": session_id,
            "uuid": str(uuid.uuid4()),
            "parentUuid": parent,
            "timestamp": t.isoformat().replace("+00:00", "Z"),
            "cwd": "/home/dev/proj",
            "gitBranch": "main",
            "version": "2.1.0",
            "isSidechain": False,
            "userType": "external",
            "message": message,
        }
        parent = rec["uuid"]
        return rec

    lines.append(env("user", {"role": "user", "content": task}))
    for i in range(n_steps):
        tid = f"toolu_{session_id[:8]}_{i}"
        lines.append(
            env(
                "assistant",
                {
                    "id": f"msg_{session_id[:8]}_{i}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-5-5",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": tid,
                            "name": "Bash",
                            "input": {"command": f"pytest -k case{i}"},
                        }
                    ],
                    "stop_reason": "tool_use",
                    "usage": {"input_tokens": 100, "output_tokens": 20},
                },
            )
        )
        lines.append(
            env(
                "user",
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": tid,
                            "content": f"{i} passed in 0.1s",
                            "is_error": False,
                        }
                    ],
                },
            )
        )
    lines.append(
        env(
            "assistant",
            {
                "id": f"msg_{session_id[:8]}_end",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-5-5",
                "content": [{"type": "text", "text": "All tests pass now."}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 120, "output_tokens": 10},
            },
        )
    )
    return lines


def make_projects(
    root: Path, n: int, *, age: timedelta = timedelta(hours=2), project: str = "-home-dev-proj"
) -> list[str]:
    """Write `n` transcripts under `root/project/`, mtimes `age` ago; returns the ids."""
    folder = root / project
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    when = datetime.now(UTC) - age
    for i in range(n):
        sid = str(uuid.UUID(int=(i + 1) * 7919 + 0xABCDEF))
        path = folder / f"{sid}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in transcript_lines(sid, when)) + "\n")
        os.utime(path, (when.timestamp(), when.timestamp()))
        ids.append(sid)
    return ids


# --- a fake store (the real one is `scorer.sinks.store.ScoreStore`) -------------------


def store_class():
    """The real ScoreStore when it exists, else the SQLite fake below."""
    try:
        from scorer.sinks.store import ScoreStore

        return ScoreStore
    except ImportError:
        return FakeStore


class FakeStore:
    """The store contract in SQLite: one row per (session, dimension); save replaces."""

    def __init__(self, path: Path | None = None) -> None:
        from scorer.settings import get_settings

        self.path = Path(path or get_settings().store_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._db() as db:
            db.execute(
                "CREATE TABLE IF NOT EXISTS fake_scores (session_id TEXT, name TEXT, rubric_version TEXT, "
                "model TEXT, judge TEXT, value REAL, card TEXT, PRIMARY KEY (session_id, name, rubric_version, model, judge))"
            )

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=30)

    def save(self, card: Scorecard) -> None:
        with self._db() as db:
            db.execute(
                "DELETE FROM fake_scores WHERE session_id = ? AND rubric_version = ? AND model IS ? AND judge = ?",
                (card.session_id, card.rubric_version, card.model, card.judge),
            )
            db.executemany(
                "INSERT INTO fake_scores VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        card.session_id,
                        n,
                        card.rubric_version,
                        card.model,
                        card.judge,
                        s.value,
                        card.model_dump_json(),
                    )
                    for n, s in card.scores.items()
                ],
            )

    def is_scored(
        self, session_id: str, rubric_version: str, model: str | None, judge: str
    ) -> bool:
        with self._db() as db:
            row = db.execute(
                "SELECT 1 FROM fake_scores WHERE session_id = ? AND rubric_version = ? AND model IS ? AND judge = ?",
                (session_id, rubric_version, model, judge),
            ).fetchone()
        return row is not None

    def get(self, session_id: str) -> Scorecard | None:
        with self._db() as db:
            row = db.execute(
                "SELECT card FROM fake_scores WHERE session_id = ? LIMIT 1", (session_id,)
            ).fetchone()
        return Scorecard.model_validate_json(row[0]) if row else None


def score_counts(path: Path) -> Counter:
    """session_id → number of score rows in the store file (real store or fake)."""
    db = sqlite3.connect(path)
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "fake_scores" in tables:
        rows = db.execute(
            "SELECT session_id, COUNT(*) FROM fake_scores GROUP BY session_id"
        ).fetchall()
    else:
        table = next(t for t in ("scores", "score_values", "dimension_scores") if t in tables)
        rows = db.execute(
            f"SELECT session_id, COUNT(*) FROM {table} GROUP BY session_id"
        ).fetchall()
    db.close()
    return Counter(dict(rows))


def fake_clock_limiters(monkeypatch) -> None:
    """Make backfill's shared rate limiters pause in fake time (each gets its own clock)."""
    from scorer.jobs import backfill
    from scorer.jobs.ratelimit import RateLimiter

    class Clock:
        t = 0.0

        def now(self) -> float:
            return self.t

        def sleep(self, seconds: float) -> None:
            self.t += seconds

    def limiter(rate: float = 0.0, max_in_flight: int = 0, pace: bool = True) -> RateLimiter:
        clock = Clock()
        return RateLimiter(
            rate=rate, clock=clock.now, sleep=clock.sleep, max_in_flight=max_in_flight, pace=pace
        )

    monkeypatch.setattr(backfill, "RateLimiter", limiter)
