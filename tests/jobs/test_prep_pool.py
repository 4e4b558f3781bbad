"""Backfill prep in worker processes: same result as in a thread, errors and breakage handled.

These tests spawn real worker processes (about a second each), so they are few; every
other backfill test prepares in its threads (`SCORER_PREP_PROCESSES=0` in conftest).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from scorer.errors import EmptySessionError, SourceError
from scorer.jobs import backfill, prep_pool
from scorer.jobs.backfill import BackfillOptions, Services, run_backfill
from scorer.jobs.discovery import SessionRef
from scorer.jobs.pipeline import prepare_ref
from scorer.jobs.prep_pool import MAX_WORKERS, MIN_BYTES, PrepPool, pool_workers
from scorer.jobs.run_state import Context
from scorer.prepare import prepare
from scorer.settings import get_settings
from scorer.sources.claude_code import ClaudeCodeSource
from tests.conftest import BIG_SESSION
from tests.jobs.helpers import FakeJudgeServer, make_projects


def test_workers_follow_concurrency_cores_and_the_setting(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert pool_workers(1) == pool_workers(3) == 0  # the judge threads keep up
    assert pool_workers(4) == pool_workers(16) == MAX_WORKERS
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    assert pool_workers(16) == 2  # one per core: the judge threads mostly wait
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    assert pool_workers(16) == 0  # no spare core: processes would only add pickling
    assert pool_workers(16, setting=0) == 0
    assert pool_workers(1, setting=3) == 3


@pytest.fixture(scope="module")
def pool():
    prep = PrepPool(1)
    yield prep
    prep.close()


def test_worker_result_equals_the_in_thread_prep(pool):
    if not BIG_SESSION.exists():
        pytest.skip("real data not found")
    here = prepare(ClaudeCodeSource(BIG_SESSION).load())
    there = pool.prepare_file(str(BIG_SESSION))
    assert there.session == here.session
    assert there.header == here.header and there.events == here.events
    assert [c.text for c in there.chunks] == [c.text for c in here.chunks]
    assert there.redactions == here.redactions and there.signals == here.signals


def test_only_big_transcripts_go_to_a_worker(pool, tmp_path):
    small, big = tmp_path / "small.jsonl", tmp_path / "big.jsonl"
    small.write_bytes(b"x" * (MIN_BYTES - 1))
    big.write_bytes(b"x" * MIN_BYTES)
    assert not pool.wants(str(small)) and pool.wants(str(big))
    assert not pool.wants(str(tmp_path / "missing.jsonl"))  # its thread reports the error


def test_source_errors_from_a_worker_keep_their_type_and_message(pool, tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(EmptySessionError, match="is empty"):
        pool.prepare_file(str(empty))
    with pytest.raises(SourceError, match=r"cannot read|not a regular file"):
        pool.prepare_file(str(tmp_path / "missing.jsonl"))
    assert not pool.broken  # a bad session is not a broken pool


def test_a_killed_worker_falls_back_to_threads(tmp_path):
    ids = make_projects(tmp_path / "projects", 1)
    path = str(tmp_path / "projects" / "-home-dev-proj" / f"{ids[0]}.jsonl")
    prep = PrepPool(1)
    try:
        first = prep.prepare_file(path)
        for pid in list(prep._pool._processes):  # simulate an OOM kill
            os.kill(pid, signal.SIGKILL)
        again = prep.prepare_file(path)
        assert prep.broken
        assert again.session == first.session and again.chunks == first.chunks
        assert prep.prepare_file(path).session == first.session  # later ones in threads
    finally:
        prep.close()


def _ready_pool() -> PrepPool:
    prep = PrepPool(1)
    prep.start()
    deadline = time.monotonic() + 60
    while not prep.ready and time.monotonic() < deadline:
        time.sleep(0.05)
    assert prep.ready
    return prep


def test_backfill_with_prep_workers_scores_like_without(tmp_path, monkeypatch):
    make_projects(tmp_path / "projects", 6)
    monkeypatch.setattr(prep_pool, "MIN_BYTES", 0)  # these transcripts are small
    results: dict[str, Any] = {}
    pooled: list[str] = []
    real = PrepPool.prepare_file

    def counting(self: PrepPool, origin: str):
        pooled.append(origin)
        return real(self, origin)

    monkeypatch.setattr(PrepPool, "prepare_file", counting)
    with FakeJudgeServer(latency=0.01) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        for procs in ("0", "1"):
            monkeypatch.setenv("SCORER_PREP_PROCESSES", procs)
            monkeypatch.setenv("SCORER_HOME", str(tmp_path / f"home-{procs}"))
            get_settings.cache_clear()
            if procs == "1":  # a pool already warm, so every session can use it
                ready = _ready_pool()
                monkeypatch.setattr(backfill, "_prep_pool", lambda *args, pool=ready: pool)
            opts = BackfillOptions(
                source="claude-code", projects_root=tmp_path / "projects", judge="llm",
                concurrency=4,
            )  # fmt: skip
            results[procs] = run_backfill(opts)
    with_pool, without = results["1"], results["0"]
    assert (with_pool.scored, with_pool.failed) == (without.scored, without.failed) == (6, 0)
    assert with_pool.input_tokens == without.input_tokens  # the same prompts were sent
    assert len(pooled) == 6  # every session of the second run went through the workers
    assert ready._pool._processes is None or not ready._pool._processes  # run closed it


class StubPool:
    """Records what the run asked of its pool; big files are those named big*."""

    def __init__(self, ready: bool) -> None:
        self.ready, self.started, self.sent = ready, 0, []

    def start(self) -> None:
        self.started += 1

    def wants(self, origin: str) -> bool:
        return Path(origin).name.startswith("big")

    def prepare_file(self, origin: str):
        self.sent.append(origin)
        return prepare(ClaudeCodeSource(Path(origin)).load())

    def close(self) -> None:
        pass


def _refs(tmp_path, names):
    ids = make_projects(tmp_path / "projects", len(names))
    folder = tmp_path / "projects" / "-home-dev-proj"
    refs = []
    for sid, name in zip(ids, names, strict=True):
        path = folder / f"{sid}.jsonl"
        path.rename(folder / f"{name}-{sid}.jsonl")
        refs.append(
            SessionRef(
                session_id=sid, source="claude-code", origin=str(folder / f"{name}-{sid}.jsonl")
            )
        )
    return refs


def test_workers_start_only_when_a_selected_transcript_is_big(tmp_path):
    small_only = StubPool(ready=False)
    backfill._start_prep_pool(
        Services(None, None, None, prep=small_only), _refs(tmp_path / "a", ["small", "small"])
    )  # type: ignore[arg-type]
    mixed = StubPool(ready=False)
    backfill._start_prep_pool(
        Services(None, None, None, prep=mixed), _refs(tmp_path / "b", ["small", "big"])
    )  # type: ignore[arg-type]
    assert (small_only.started, mixed.started) == (0, 1)


@pytest.mark.parametrize(
    ("ready", "name", "pooled"),
    [(True, "big", True), (True, "small", False), (False, "big", False)],
)
def test_a_session_goes_to_the_pool_only_when_big_and_the_pool_is_ready(
    tmp_path, ready, name, pooled
):
    (ref,) = _refs(tmp_path, [name])
    stub = StubPool(ready=ready)
    services = Services(lambda r: ClaudeCodeSource(Path(r.origin)).load(), None, None, prep=stub)  # type: ignore[arg-type]
    ctx = Context(BackfillOptions(source="claude-code"), services, None, None, "m", "v")  # type: ignore[arg-type]
    prepared = prepare_ref(ctx, ref)
    assert prepared.session.session_id == ref.session_id
    assert stub.sent == ([ref.origin] if pooled else [])


def _freeze_registered() -> bool:
    from scorer import _gc

    return _gc._freeze_registered


def test_workers_freeze_their_heap_at_exit(pool):
    """The run waits for its workers to exit; their final collection is skipped."""
    pool.start()
    assert pool._pool.submit(_freeze_registered).result(timeout=60) is True
