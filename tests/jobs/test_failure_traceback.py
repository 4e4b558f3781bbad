"""Issue 24, the race: a session failure keeps its traceback, and the fake Langfuse that
raced is now one request at a time.

The 2-in-92 "dictionary changed size during iteration" came from the test fake: its v3
scores read iterated `scores` while another backfill worker's POST added to it (the
traceback this run now keeps pointed there: `FakeLangfuse._get_scores`, reached from
`already_scored` before `bump_attempts`). `scripts/stress_acceptance.py` runs the
acceptance backfill many times under a CPU burner.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from langfuse.api.scores.types.create_score_request import CreateScoreRequest

from scorer.jobs.ledger import Ledger
from scorer.jobs.run_state import TRACEBACK_LIMIT, failure_trace
from scorer.settings import get_settings
from tests.jobs.test_backfill_langfuse import lf_env, run, synthetic  # noqa: F401 (fixture)
from tests.langfuse.fake_server import FakeLangfuse

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_a_failed_session_keeps_its_traceback_in_the_ledger_and_the_debug_log(
    tmp_path,
    lf_env,  # noqa: F811
    caplog,
):
    world = {
        sid: synthetic(tmp_path, sid, NOW - timedelta(hours=2 + k))
        for k, sid in enumerate(["healthy-1", "broken-2", "healthy-3"])
    }
    with FakeLangfuse([o for obs in world.values() for o in obs]) as fake:

        def explode(route: str, request: httpx.Request) -> None:
            if route == "scores_v3" and request.url.params.get("sessionId") == "broken-2":
                raise RuntimeError("dictionary changed size during iteration")

        fake.on_request = explode
        with caplog.at_level(logging.DEBUG, logger="scorer.jobs.run_state"):
            summary = run()
    assert (summary.scored, summary.failed) == (2, 1)
    (failure,) = summary.failures
    assert failure.reason == "RuntimeError: dictionary changed size during iteration"
    ledger = Ledger(get_settings().store_path, summary.run_key)
    row, healthy = ledger.get("broken-2"), ledger.get("healthy-1")
    ledger.close()
    assert row is not None and healthy is not None
    assert row["state"] == "failed" and row["attempts"] == 0  # before bump_attempts
    trace = row["traceback"]
    assert trace.startswith("Traceback (most recent call last)")
    # Where: our frames down to the raise, and the message.
    for where in ("already_scored", "langfuse_has_scores", "in explode", "RuntimeError: dict"):
        assert where in trace
    assert healthy["traceback"] is None
    logged = [r for r in caplog.records if r.getMessage() == "session broken-2 failed"]
    assert logged and logged[0].exc_info is not None


def test_a_long_traceback_keeps_its_outer_and_innermost_ends():
    # 200 distinct frames (repeated ones would be folded into one line by Python).
    code = "def f200():\n    raise ValueError('the real cause')\n" + "".join(
        f"def f{i}():\n    f{i + 1}()\n" for i in range(200)
    )
    frames: dict[str, Any] = {}
    exec(compile(code, "deep.py", "exec"), frames)
    try:
        frames["f0"]()
    except ValueError as exc:
        trace = failure_trace("s", exc)["traceback"]
    assert len(trace) == TRACEBACK_LIMIT and "\n…\n" in trace
    assert trace.startswith("Traceback (most recent call last)") and "in f0" in trace
    assert trace.endswith("in f200\nValueError: the real cause\n")


class _SlowDict(dict):
    """Iterating its values yields the GIL between items: a read is always interleaved."""

    def values(self) -> Any:
        for value in super().values():
            time.sleep(0.001)
            yield value


def test_the_fake_serves_one_request_at_a_time():
    with FakeLangfuse([]) as fake:
        fake.scores = _SlowDict(
            {f"s{i}": {"id": f"s{i}", "name": "n", "value": 1, "sessionId": "x"} for i in range(40)}
        )
        client, errors = fake.client(), []

        def read() -> None:
            try:
                client.api.scores.get_many(session_id="x", limit=100)
            except Exception as exc:  # the race surfaced as the client's error
                errors.append(exc)

        def write() -> None:
            for i in range(20):
                item = CreateScoreRequest(id=f"w{i}", name="n", value=1, session_id="x")
                client.api.scores.create(request=[item])

        threads = [threading.Thread(target=read) for _ in range(3)] + [
            threading.Thread(target=write)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert len(fake.scores) == 60
