"""One global limit on judge calls in flight: chunk-notes map calls share `--concurrency`.

Chunked sessions make one notes call per chunk (run in parallel by the judge) plus a final
call; without a shared limit K workers put up to K x chunks calls on the wire. The limit
is one permit per HTTP request, so a session waiting for its own map calls holds none and
K = 1 cannot deadlock.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest

from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.backfill_pool import pool_size
from scorer.jobs.ledger import Ledger
from scorer.jobs.ratelimit import RateLimiter, StopSignal, limited_httpx2_client
from scorer.prepare import prepare
from scorer.settings import get_settings
from scorer.sources.claude_code import ClaudeCodeSource
from tests.fakes.anthropic import error_response
from tests.jobs.helpers import FakeJudgeServer, transcript_lines

BUDGET = 2_500
"""Small enough that each session below splits into several chunks."""


class CountingServer(FakeJudgeServer):
    """The fake judge, also recording the most Messages calls it held at one time."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.in_flight = self.max_in_flight = 0
        self._count_lock = threading.Lock()

    def handle_post(self, path: str, body: dict) -> tuple[int, Any, dict]:
        if not path.endswith("/v1/messages"):
            return super().handle_post(path, body)
        with self._count_lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return super().handle_post(path, body)
        finally:
            with self._count_lock:
                self.in_flight -= 1


def chunked_projects(root: Path, n: int) -> list[Path]:
    folder = root / "-home-dev-proj"
    folder.mkdir(parents=True)
    when = datetime.now(UTC) - timedelta(hours=2)
    paths = []
    for i in range(n):
        sid = str(uuid.UUID(int=i + 1))
        path = folder / f"{sid}.jsonl"
        lines = transcript_lines(sid, when, n_steps=200)
        path.write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        os.utime(path, (when.timestamp(), when.timestamp()))
        paths.append(path)
    return paths


@pytest.fixture
def chunked(tmp_path, monkeypatch):
    root = tmp_path / "projects"
    paths = chunked_projects(root, 6)
    monkeypatch.setenv("SCORER_CHUNK_BUDGET", str(BUDGET))
    get_settings.cache_clear()
    chunks = len(prepare(ClaudeCodeSource(paths[0]).load(), budget=BUDGET).chunks)
    assert chunks >= 3  # the premise: every session makes chunks + 1 judge calls
    return root, chunks


@pytest.mark.parametrize("k", [1, 2, 4])
def test_judge_calls_in_flight_never_exceed_concurrency(chunked, monkeypatch, k):
    root, chunks = chunked
    with CountingServer(latency=0.02) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        opts = BackfillOptions(source="claude-code", projects_root=root, judge="llm", concurrency=k)
        done: list[Any] = []
        runner = threading.Thread(target=lambda: done.append(run_backfill(opts)), daemon=True)
        runner.start()
        runner.join(120)
        assert not runner.is_alive(), "backfill deadlocked"
    summary = done[0]
    assert (summary.scored, summary.failed) == (6, 0)
    assert server.calls == 6 * (chunks + 1)
    assert 1 <= server.max_in_flight <= k
    if k > 1:
        assert server.max_in_flight > 1  # the limit is a cap, not serialisation


def test_pool_has_lookahead_workers_only_on_the_llm_path():
    llm = BackfillOptions(source="claude-code", judge="llm", concurrency=16)
    assert pool_size(llm) == 32
    assert pool_size(llm.model_copy(update={"concurrency": 1})) == 2
    assert pool_size(llm.model_copy(update={"concurrency": 64})) == 80
    assert pool_size(llm.model_copy(update={"judge": "heuristic"})) == 16
    assert pool_size(llm.model_copy(update={"dry_run": True})) == 16


def test_limiter_caps_requests_in_flight_across_threads():
    lock = threading.Lock()
    state = {"now": 0, "most": 0}
    gate = threading.Event()

    def handler(request: httpx2.Request) -> httpx2.Response:
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
        gate.wait(0.05)
        with lock:
            state["now"] -= 1
        return httpx2.Response(200, json={})

    limiter = RateLimiter(max_in_flight=3)
    client = limited_httpx2_client(limiter, inner=httpx2.MockTransport(handler))
    threads = [threading.Thread(target=client.get, args=("http://x/",)) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["most"] == 3 and limiter.peak_in_flight == 3


def test_a_failed_request_gives_its_permit_back():
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused")

    limiter = RateLimiter(max_in_flight=1)
    client = limited_httpx2_client(limiter, inner=httpx2.MockTransport(handler))
    for _ in range(3):  # with a leaked permit the second request would block forever
        with pytest.raises(httpx2.ConnectError):
            client.get("http://x/")


def test_a_stopped_limiter_sends_nothing_more():
    from scorer.errors import RunStopped
    from scorer.judge.retry import classify, stopped

    stop = StopSignal()
    limiter = RateLimiter(max_in_flight=1)
    limiter.watch(stop)
    sent: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(str(request.url))
        return httpx2.Response(200, json={})

    client = limited_httpx2_client(limiter, inner=httpx2.MockTransport(handler))
    errors: list[BaseException] = []

    def waiting_for_the_slot() -> None:
        try:
            client.get("http://x/second")
        except RunStopped as exc:
            errors.append(exc)

    with limiter.slot():  # the one slot is taken: the next request waits
        waiter = threading.Thread(target=waiting_for_the_slot)
        waiter.start()
        waiter.join(0.3)
        assert waiter.is_alive() and not sent
        stop.set()
        waiter.join(2)
    assert not waiter.is_alive() and len(errors) == 1 and not sent
    with pytest.raises(RunStopped):  # and nothing new goes out either
        client.get("http://x/third")
    paused, paused_stop = RateLimiter(), StopSignal()
    paused.watch(paused_stop)
    paused.pause(60)
    paused_stop.set()
    with pytest.raises(RunStopped):
        paused.acquire()  # a 60 s pause does not hold a stopped run
    wrapped = ValueError("transport")
    wrapped.__cause__ = RunStopped("stopped")
    assert stopped(wrapped) and not classify(wrapped).retry


def test_waiting_requests_get_permits_notes_first_then_in_arrival_order():
    """A chunked session's final call waits for its notes calls: serving those first keeps
    every slot busy to the end (2-chunk backfills at K = 16 no longer lose a wave)."""
    import time

    from scorer.priority import DEFAULT, NOTES, call_priority

    limiter = RateLimiter(max_in_flight=1)
    order: list[str] = []
    lock = threading.Lock()

    def request(name: str, prio: int) -> None:
        with call_priority(prio), limiter.slot(), lock:
            order.append(name)

    threads = []
    with limiter.slot():  # the only permit is taken: everyone below queues
        for name, prio in [("final-a", DEFAULT), ("final-b", DEFAULT), ("notes-c", NOTES),
                           ("final-d", DEFAULT), ("notes-e", NOTES)]:  # fmt: skip
            t = threading.Thread(target=request, args=(name, prio))
            t.start()
            threads.append(t)
            time.sleep(0.05)  # a definite arrival order
        assert order == []
    for t in threads:
        t.join(5)
    assert order == ["notes-c", "notes-e", "final-a", "final-b", "final-d"]
    assert limiter.peak_in_flight == 1


class FinalCallsFail(FakeJudgeServer):
    """Chunk-notes calls succeed; every final scoring call answers 500."""

    def handle_post(self, path: str, body: dict) -> tuple[int, Any, dict]:
        schema = json.dumps(body.get("output_config", {}))
        if path.endswith("/v1/messages") and '"progress"' not in schema:
            with self._lock:
                self.calls += 1
            return 500, json.loads(error_response(500).content), {}
        return super().handle_post(path, body)


def llm_opts(root: Path, **kw: Any) -> BackfillOptions:
    return BackfillOptions(source="claude-code", projects_root=root, judge="llm", **kw)


def use_server(monkeypatch, server: FakeJudgeServer) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    get_settings.cache_clear()


def ledger_rows(run_key: str) -> list[dict[str, Any]]:
    ledger = Ledger(get_settings().store_path, run_key)
    try:
        return ledger.rows()
    finally:
        ledger.close()


def test_a_session_that_fails_after_its_notes_calls_still_bills_them(chunked, monkeypatch):
    root, _ = chunked
    with FinalCallsFail() as server:
        use_server(monkeypatch, server)
        summary = run_backfill(llm_opts(root, concurrency=2))
    assert (summary.scored, summary.failed) == (0, 6)
    rows = ledger_rows(summary.run_key)
    assert {r["state"] for r in rows} == {"failed"}
    assert all(r["cost_usd"] > 0 and r["input_tokens"] > 0 for r in rows)
    # Every notes call the fake answered is billed, in the ledger and in the summary.
    assert summary.input_tokens == server.input_tokens == sum(r["input_tokens"] for r in rows)
    assert summary.cost_usd == pytest.approx(sum(r["cost_usd"] for r in rows))
    assert {f.cost_usd > 0 for f in summary.failures} == {True}


def test_a_session_stopped_between_its_calls_bills_the_calls_it_made(chunked, monkeypatch):
    from scorer.jobs import pipeline

    root, _ = chunked
    real, contexts = pipeline.prepare_ref, []

    def remember(ctx, ref):
        contexts.append(ctx)
        return real(ctx, ref)

    monkeypatch.setattr(pipeline, "prepare_ref", remember)
    with FakeJudgeServer(latency=0.4) as server:
        use_server(monkeypatch, server)

        def stop_during_the_first_call() -> None:
            while server.calls < 1:
                time.sleep(0.01)
            time.sleep(0.1)  # the session's next notes call now waits for the one slot
            contexts[0].stop.set()

        threading.Thread(target=stop_during_the_first_call, daemon=True).start()
        summary = run_backfill(llm_opts(root, concurrency=1))
    assert server.calls == 1 and (summary.scored, summary.not_started) == (0, 6)
    rows = ledger_rows(summary.run_key)
    assert {(r["state"], r["attempts"]) for r in rows} == {("discovered", 0)}
    [billed] = [r for r in rows if r["cost_usd"] > 0]
    assert billed["input_tokens"] == server.input_tokens == summary.input_tokens > 0
    assert summary.cost_usd == pytest.approx(billed["cost_usd"])
