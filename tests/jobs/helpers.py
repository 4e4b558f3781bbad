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
import sys
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from scorer.models import Scorecard

_JUDGE_TESTS = Path(__file__).resolve().parents[1] / "judge"


def _fake_anthropic():
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "_fake_anthropic_for_jobs", _JUDGE_TESTS / "fake_anthropic.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


FA = _fake_anthropic()


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


# --- a loopback fake Messages API ------------------------------------------------------


class FakeJudgeServer:
    """Messages API + Message Batches on 127.0.0.1, with latency and injected faults.

    Args:
        latency: Seconds each `/v1/messages` call sleeps.
        faults: Statuses to answer before succeeding, consumed in order across calls
            (e.g. `[429, 529, 500]`); 429/529 carry `retry-after: 0`.
        batch_polls: How many `retrieve` calls a batch stays `in_progress`.
    """

    def __init__(
        self, latency: float = 0.0, faults: list[int] | None = None, batch_polls: int = 1
    ) -> None:
        from scorer.prepare.tokens import TokenCounter

        self.latency = latency
        self.faults = list(faults or [])
        self.counter = TokenCounter(1.25)
        self.calls = 0
        self.fault_count = Counter()
        self.input_tokens = 0
        self.batches: dict[str, dict] = {}
        self.batch_creates = 0
        self.batch_polls = batch_polls
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(
                    self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}"
                )
                status, payload, headers = server.handle_post(self.path, body)
                self._send(status, payload, headers)

            def do_GET(self) -> None:
                status, payload, headers = server.handle_get(self.path)
                self._send(status, payload, headers)

            def _send(self, status: int, payload: Any, headers: dict[str, str]) -> None:
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", headers.pop("content-type", "application/json"))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> FakeJudgeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply_for(self, body: dict) -> dict:
        """A valid Message for a request (notes or scoring, judged by its schema)."""
        system = "".join(b["text"] for b in body.get("system", []))
        text = system + "".join(
            m["content"] for m in body["messages"] if isinstance(m["content"], str)
        )
        tokens = self.counter.count(text)
        schema = json.dumps(body.get("output_config", {}))
        payload = FA.notes_payload() if '"progress"' in schema else FA.valid_scoring_payload()
        with self._lock:
            self.input_tokens += tokens
        return FA.message_json(payload, input_tokens=tokens, output_tokens=400)

    def handle_post(self, path: str, body: dict) -> tuple[int, Any, dict]:
        if path.endswith("/v1/messages/batches"):
            return self._create_batch(body)
        if path.endswith("/count_tokens"):
            return 200, {"input_tokens": 1000}, {}
        with self._lock:
            self.calls += 1
            fault = self.faults.pop(0) if self.faults else None
        if fault:
            self.fault_count[fault] += 1
            headers = {"retry-after": "0"} if fault in (429, 529) else {}
            err = FA.error_response(fault)
            return fault, json.loads(err.content), headers
        if self.latency:
            time.sleep(self.latency)
        return 200, self.reply_for(body), {}

    # --- Message Batches

    def _create_batch(self, body: dict) -> tuple[int, Any, dict]:
        with self._lock:
            self.batch_creates += 1
            bid = f"msgbatch_{len(self.batches) + 1:04d}"
            self.batches[bid] = {"requests": body["requests"], "polls": 0}
        return 200, self._batch_json(bid, "in_progress"), {}

    def _batch_json(self, bid: str, status: str) -> dict:
        n = len(self.batches[bid]["requests"])
        done = status == "ended"
        return {
            "id": bid,
            "type": "message_batch",
            "processing_status": status,
            "request_counts": {
                "processing": 0 if done else n,
                "succeeded": n if done else 0,
                "errored": 0,
                "canceled": 0,
                "expired": 0,
            },
            "created_at": "2026-11-22T00:00:00Z",
            "expires_at": "2026-11-23T00:00:00Z",
            "ended_at": "2026-11-22T00:10:00Z" if done else None,
            "archived_at": None,
            "cancel_initiated_at": None,
            "results_url": f"{self.url}/v1/messages/batches/{bid}/results" if done else None,
        }

    def handle_get(self, path: str) -> tuple[int, Any, dict]:
        parts = path.split("?")[0].rstrip("/").split("/")
        if parts[-1] == "results":
            bid = parts[-2]
            lines = [
                json.dumps(
                    {
                        "custom_id": r["custom_id"],
                        "result": {"type": "succeeded", "message": self.reply_for(r["params"])},
                    }
                )
                for r in self.batches[bid]["requests"]
            ]
            return 200, ("\n".join(lines) + "\n").encode(), {"content-type": "application/binary"}
        bid = parts[-1]
        with self._lock:
            self.batches[bid]["polls"] += 1
            ended = self.batches[bid]["polls"] > self.batch_polls
        return 200, self._batch_json(bid, "ended" if ended else "in_progress"), {}


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

    def limiter(rate: float = 0.0) -> RateLimiter:
        clock = Clock()
        return RateLimiter(rate=rate, clock=clock.now, sleep=clock.sleep)

    monkeypatch.setattr(backfill, "RateLimiter", limiter)
