"""`score-backfill --source langfuse` end to end against the respx fake Langfuse.

The world: the real Claude Code transcripts converted to plugin-shaped observations and
moved into a 3.5-day window, plus synthetic sessions (one with > 1000 observations, one
still active, one with another tag, one in another environment, one before the window).
Everything between the fake HTTP server and the heuristic judge is real: discovery, the
rate-limited Langfuse client from `default_services`, `LangfuseSource`, prepare, the
store, the ledger, `push_scorecard` and the annotation queue.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from scorer.jobs import discovery
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.judge.rubric import default_rubric
from scorer.settings import get_settings
from scorer.sinks.langfuse import langfuse_has_scores
from tests.conftest import CC_PROJECTS, require
from tests.jobs.helpers import fake_clock_limiters, transcript_lines
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse
from tests.langfuse.plugin_fixture import convert_transcript

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
START = datetime(2026, 11, 19, 0, 0, tzinfo=UTC)
# Where each real transcript's last observation is moved to. `short` starts inside the
# 5-minute overlap of the first two discovery sub-windows, so it is listed twice.
REAL_ENDS = {
    "short.jsonl": datetime(2026, 11, 19, 23, 57, 30, tzinfo=UTC),
    "subagent.jsonl": datetime(2026, 11, 20, 10, 0, tzinfo=UTC),
    "tool_heavy.jsonl": datetime(2026, 11, 20, 18, 0, tzinfo=UTC),
    "sample_main_transcript.jsonl": datetime(2026, 11, 21, 9, 0, tzinfo=UTC),
    "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl": datetime(2026, 11, 21, 15, 0, tzinfo=UTC),
}
BIG = "synthetic-big-session"
SMALL = "synthetic-small-session"
ACTIVE = "synthetic-active-session"
OTHER_TAG = "synthetic-other-tag"
OTHER_ENV = "synthetic-staging"
TOO_OLD = "synthetic-before-window"


# --- building the world ----------------------------------------------------------------


def _iso(when: datetime) -> str:
    return when.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def retime(observations: list[dict], end_at: datetime) -> list[dict]:
    """Shift every timestamp so the last observation ends at `end_at`."""
    last = max(_parse(o.get("endTime") or o["startTime"]) for o in observations)
    delta = end_at - last
    out = []
    for o in observations:
        o = dict(o)
        for key in ("startTime", "endTime"):
            if o.get(key):
                o[key] = _iso(_parse(o[key]) + delta)
        out.append(o)
    return out


def rename(observations: list[dict], session_id: str, salt: str, **overrides: Any) -> list[dict]:
    """A copy under another session id, with fresh observation and trace ids."""

    def new(value: str | None) -> str | None:
        return None if value is None else f"{salt}-{value}"

    out = []
    for o in observations:
        o = dict(o, id=new(o["id"]), traceId=new(o["traceId"]), sessionId=session_id)
        o["parentObservationId"] = new(o.get("parentObservationId"))
        out.append({**o, **overrides})
    return out


def synthetic(tmp: Path, session_id: str, end_at: datetime, **overrides: Any) -> list[dict]:
    path = tmp / f"{session_id}.jsonl"
    rows = transcript_lines(session_id, end_at - timedelta(minutes=2), n_steps=3)
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return [{**o, **overrides} for o in retime(convert_transcript(path), end_at)]


@pytest.fixture
def world(tmp_path) -> dict[str, list[dict]]:
    """session id → its observations (only the first seven are to be scored)."""
    require(CC_PROJECTS)
    sessions: dict[str, list[dict]] = {}
    for path in sorted(CC_PROJECTS.glob("*/*.jsonl")):
        if path.name in REAL_ENDS:
            obs = retime(convert_transcript(path), REAL_ENDS[path.name])
            sessions[obs[0]["sessionId"]] = obs
    assert len(sessions) == 5, "the shared data set changed"
    big_src = next(obs for obs in sessions.values() if len(obs) > 400)
    copies = [
        retime(rename(big_src, BIG, f"c{k}"), datetime(2026, 11, 22, 4 + 2 * k, tzinfo=UTC))
        for k in range(3)
    ]
    sessions[BIG] = [o for copy in copies for o in copy]
    sessions[SMALL] = synthetic(tmp_path, SMALL, datetime(2026, 11, 20, 5, tzinfo=UTC))
    sessions[ACTIVE] = synthetic(tmp_path, ACTIVE, NOW - timedelta(minutes=5))
    sessions[OTHER_TAG] = synthetic(
        tmp_path, OTHER_TAG, datetime(2026, 11, 20, 12, tzinfo=UTC), tags=["other-app"]
    )
    sessions[OTHER_ENV] = synthetic(
        tmp_path, OTHER_ENV, datetime(2026, 11, 21, 12, tzinfo=UTC), environment="staging"
    )
    sessions[TOO_OLD] = synthetic(tmp_path, TOO_OLD, datetime(2026, 11, 18, 12, tzinfo=UTC))
    return sessions


def scoreable(world: dict[str, list[dict]]) -> set[str]:
    return set(world) - {ACTIVE, OTHER_TAG, OTHER_ENV, TOO_OLD}


@pytest.fixture
def lf_env(monkeypatch, fast_retry_waits) -> list[float]:
    """Langfuse env pointing at the fake; limiter pauses and retry waits are recorded."""
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    get_settings.cache_clear()
    waits = fast_retry_waits.langfuse

    fake_clock_limiters(monkeypatch)  # the shared limiters pause in fake time
    monkeypatch.setattr(discovery, "PAGE_LIMIT", 4)  # several discovery pages per window
    yield waits
    get_settings.cache_clear()


def opts(**kw: Any) -> BackfillOptions:
    base = dict(
        source="langfuse",
        start=START,
        end=NOW,
        tags=["claude-code"],
        environment="default",
        judge="heuristic",
        concurrency=3,
        idle_minutes=30,
    )
    return BackfillOptions(**{**base, **kw})


def run(**kw: Any):
    return run_backfill(opts(**kw), now=NOW)


def fake_for(world: dict[str, list[dict]]) -> FakeLangfuse:
    return FakeLangfuse([o for obs in world.values() for o in obs])


# --- what the fake saw -------------------------------------------------------------------


def session_fetches(fake: FakeLangfuse) -> Counter[str]:
    """sessionId → v2 list calls made to read that session (not discovery)."""
    return Counter(
        r.url.params["sessionId"]
        for r in fake.observation_requests
        if "sessionId" in r.url.params and "filter" not in r.url.params
    )


def discovery_requests(fake: FakeLangfuse) -> list[httpx.Request]:
    return [r for r in fake.observation_requests if "filter" in r.url.params]


def batches_by_session(fake: FakeLangfuse) -> dict[str, list[list[dict]]]:
    out: dict[str, list[list[dict]]] = defaultdict(list)
    for batch in fake.score_batches:
        sids = {item["sessionId"] for item in batch}
        assert len(sids) == 1, "one batch never mixes sessions"
        out[sids.pop()].append(batch)
    return out


def stored_runs() -> Counter[str]:
    with sqlite3.connect(get_settings().store_path) as db:
        return Counter(dict(db.execute("SELECT session_id, COUNT(*) FROM runs GROUP BY 1")))


# --- 1. the happy path, re-runs and overlapping windows ---------------------------------


def test_langfuse_backfill_end_to_end_then_skips(world, lf_env):
    expected = scoreable(world)
    assert len(expected) == 7 and len(world[BIG]) > 1000
    rubric = default_rubric()
    with fake_for(world) as fake:
        first = run()
        assert (first.discovered, first.active, first.selected) == (7, 1, 7)
        assert (first.scored, first.failed, first.unscored) == (7, 0, 0), first.failures

        found = discovery_requests(fake)
        assert len(found) >= 2 * 4  # 4 sub-windows, several cursor pages each
        conds = json.loads(found[0].url.params["filter"])
        cols = {(c["column"], c["operator"]) for c in conds}
        assert {("isRootObservation", "="), ("startTime", ">="), ("startTime", "<")} <= cols
        assert {("tags", "all of"), ("environment", "any of")} <= cols
        assert not {"fromStartTime", "isRootObservation", "tags"} & set(found[0].url.params)

        fetches = session_fetches(fake)
        sizes = {sid: len(world[sid]) for sid in expected}
        assert set(fetches) == expected and ACTIVE not in fetches
        assert all(fetches[sid] <= math.ceil(n / 1000) + 1 for sid, n in sizes.items())
        assert fetches[BIG] == 3

        per_session = batches_by_session(fake)
        assert set(per_session) == expected
        config_ids = {cfg["name"]: cfg["id"] for cfg in fake.configs.values()}
        for batches in per_session.values():
            # The seven and goal_probability (the heuristic judge's cards carry it too).
            assert len(batches) == 1 and len(batches[0]) == 8
            items = batches[0]
            assert {i["name"] for i in items} == {s.name for s in rubric.all_configs}
            assert len(fake.configs) == 8, sorted(c["name"] for c in fake.configs.values())
            assert all(i["configId"] == config_ids[i["name"]] for i in items)
            assert all("traceId" not in i for i in items)  # session-level scores
            assert {i["metadata"]["judge"] for i in items} == {"heuristic"}
        ids = fake.session_score_ids()
        assert {sid: len(v) for sid, v in ids.items()} == dict.fromkeys(expected, 8)
        assert dict(stored_runs()) == dict.fromkeys(expected, 1)
        posted = len(fake.score_batches)

        again = run()  # same command: the ledger says written
        assert (again.scored, again.skipped) == (0, 7)
        assert len(fake.score_batches) == posted and sum(session_fetches(fake).values()) == sum(
            fetches.values()
        )

        # An overlapping window is another run key: the store says scored.
        overlap = run(start=START + timedelta(days=1))
        assert overlap.run_key != first.run_key
        assert overlap.scored == 0 and overlap.skipped == overlap.selected == 6

        # The local store and ledger are gone: Langfuse's v3 scores say scored.
        get_settings().store_path.unlink()
        reads_before = len(fake.score_reads)
        wiped = run()
        assert (wiped.scored, wiped.skipped, wiped.failed) == (0, 7, 0)
        assert len(fake.score_reads) - reads_before == 7
        read = fake.score_reads[-1].url.params
        assert read["fields"] == "details" and int(read["limit"]) <= 100
        assert len(fake.score_batches) == posted
        assert sum(session_fetches(fake).values()) == sum(fetches.values())  # not refetched

        # A different judge is not "already scored" by the heuristic's scores in Langfuse.
        assert not langfuse_has_scores(
            fake.client(),
            SMALL,
            rubric_version=rubric.version,
            model="claude-sonnet-5-5",
            judge="llm",
        )


def test_v3_score_check_pages_and_matches_rubric_judge_and_model(lf_env):
    from scorer.sinks.langfuse import push_scorecard
    from tests.langfuse.conftest import make_scorecard

    rubric = default_rubric()
    with FakeLangfuse() as fake:
        client = fake.client()

        def has(**kw: Any) -> bool:
            args = dict(rubric_version=rubric.version, model="claude-sonnet-5-5", judge="llm")
            return langfuse_has_scores(client, "s1", **{**args, **kw})

        assert not has()
        assert push_scorecard(make_scorecard("s1"), client=fake.client()).ok
        assert has() and has(model=None)
        assert not has(model="claude-opus-5") and not has(judge="heuristic")
        assert not has(rubric_version="0.0-old")
        # 100 scores of an older rubric sort before ours: the check follows the cursor.
        ours = [i for i in fake.scores.values() if i["sessionId"] == "s1"]
        for n in range(100):
            old = dict(ours[n % 7], id=f"0000-old-{n:03d}")
            old["metadata"] = {**old["metadata"], "rubric_version": "0.0-old"}
            fake.scores[old["id"]] = old
        fake.score_reads.clear()
        assert has()
        assert len(fake.score_reads) == 2 and "cursor" in fake.score_reads[-1].url.params
        # One of the seven missing (a 207 rejected it): not scored, push again.
        del fake.scores[ours[0]["id"]]
        assert not has()


# --- 2. faults ---------------------------------------------------------------------------


def test_faults_every_session_scored_once_or_failed_with_reason(world, lf_env):
    waits = lf_env
    expected = scoreable(world)
    permanent = "Score value out of range for config goal_achievement"
    transient_left = [1]

    def reject(item: dict) -> str | None:
        # One session gets a transient rejection of one item (once), another a permanent one.
        if item["sessionId"] == SMALL and item["name"] == "tool_efficiency" and transient_left:
            transient_left.pop()  # each session is pushed by one worker: no race here
            return "tool_efficiency: internal server error, try again"
        if item["sessionId"] == BIG and item["name"] == "goal_achievement":
            return permanent
        return None

    with fake_for(world) as fake:
        fake.fail("observations", httpx.Response(429, headers={"Retry-After": "7"}))
        fake.fail("scores_v3", httpx.Response(429, headers={"Retry-After": "4"}))
        fake.fail(
            "scores",
            httpx.Response(429, headers={"Retry-After": "3"}, json={"message": "slow down"}),
            httpx.Response(500, json={"message": "boom"}),
        )
        fake.reject = reject
        summary = run()
        # BIG is judged and stored, but Langfuse holds 7 of its 8 scores: incomplete.
        assert summary.scored + summary.incomplete == 7 and summary.incomplete == 1
        assert summary.failed == 0
        failure = summary.failures[0]
        assert failure.outcome == "incomplete"
        assert failure.session_id == BIG and "goal_achievement" in failure.reason
        assert "out of range" in failure.reason
        assert summary.rate_limit_pauses["langfuse"] >= 2  # the limiter paused on 429s
        assert {7.0, 4.0, 3.0} <= set(waits)  # Retry-After honoured by the retry policy

        ids = fake.session_score_ids()
        assert {sid: len(v) for sid, v in ids.items() if sid != BIG} == dict.fromkeys(
            expected - {BIG}, 8
        )
        assert len(ids[BIG]) == 7  # the rejected item is not there
        small = batches_by_session(fake)[SMALL]
        assert [len(b) for b in small] == [8, 1]  # only the rejected item was re-sent
        row = Ledger(get_settings().store_path, summary.run_key).get(BIG)
        assert row["state"] == "stored" and "goal_achievement" in row["reason"]

        fake.reject = None  # the config was fixed: the next run pushes the stored card
        judged_before = dict(stored_runs())
        again = run()
        assert (again.scored, again.skipped, again.failed, again.incomplete) == (1, 6, 0, 0)
        assert {sid: len(v) for sid, v in fake.session_score_ids().items()} == dict.fromkeys(
            expected, 8
        )
        assert dict(stored_runs()) == judged_before == dict.fromkeys(expected, 1)


# --- 3. crash at the push step, then resume ----------------------------------------------


class Crash(BaseException):
    """Stands in for a kill: not an Exception, so no handler of ours records anything."""


def test_crash_after_langfuse_accepted_the_batch_then_resume(world, lf_env):
    expected = scoreable(world)
    crashed = threading.Event()
    with fake_for(world) as fake:

        def dead(route: str, request: httpx.Request) -> None:
            if crashed.is_set():
                raise Crash("the process is dead")

        def die_after_third_batch(route: str, response: httpx.Response) -> None:
            if route == "scores" and len(fake.score_batches) == 3:
                crashed.set()  # Langfuse stored the scores; we never hear back
                raise Crash("killed before the response arrived")

        fake.on_request, fake.on_response = dead, die_after_third_batch
        with pytest.raises(Crash):
            run(concurrency=2)
        assert len(fake.session_score_ids()) == 3  # the third batch reached Langfuse
        fake.on_request = fake.on_response = None
        crashed.clear()
        resumed = run(concurrency=2)
        # Two sessions were written before the crash; the rest finish now.
        assert (resumed.scored, resumed.skipped, resumed.failed) == (5, 2, 0)
        ids = fake.session_score_ids()
        assert {sid: len(v) for sid, v in ids.items()} == dict.fromkeys(expected, 8)
        assert dict(stored_runs()) == dict.fromkeys(expected, 1)
        ledger = Ledger(get_settings().store_path, resumed.run_key)
        assert set(ledger.states().values()) == {"written"}
        reasons = Counter(row["reason"] for row in ledger.rows())
        ledger.close()
        # The session killed after its push (and any other stored one) was pushed again
        # from the store, not re-judged: same score ids, one stored run.
        assert reasons["resumed after interruption"] >= 1


# --- 4. escalation to an annotation queue ------------------------------------------------


def test_escalation_queue_created_once_bound_to_configs_and_deduped(world, lf_env):
    del world[BIG]  # three full runs: keep them quick
    expected = scoreable(world)
    with fake_for(world) as fake:
        first = run(escalate_below=0.9, calibration_sample=2)
        assert first.scored == len(expected) == 6
        queued = set(first.escalated) | set(first.calibration)
        assert first.escalated, "the heuristic judge rated no session below 0.9"
        assert len(first.calibration) == min(2, 6 - len(first.escalated))
        assert queued <= expected and not set(first.escalated) & set(first.calibration)
        assert len(fake.queues) == 1
        queue = next(iter(fake.queues.values()))
        rubric_names = {s.name for s in default_rubric().scores}
        by_name = {cfg["name"]: cfg["id"] for cfg in fake.configs.values()}
        assert sorted(queue["scoreConfigIds"]) == sorted(by_name[n] for n in rubric_names)
        items = fake.queue_items[queue["id"]]
        assert sorted(i["objectId"] for i in items) == sorted(queued)
        assert {i["objectType"] for i in items} == {"SESSION"}

        again = run(escalate_below=0.9, calibration_sample=2)
        assert (again.scored, again.escalated, again.calibration) == (0, [], [])

        # Another run key that re-scores everything: the queue dedupes against the server.
        rescored = run(escalate_below=0.9, calibration_sample=2, rescore=True)
        assert rescored.scored == 6 and rescored.run_key != first.run_key
        assert len(fake.queues) == 1
        objects = [i["objectId"] for i in fake.queue_items[queue["id"]]]
        assert len(objects) == len(set(objects)) >= len(queued)
        assert {sid: len(v) for sid, v in fake.session_score_ids().items()} == dict.fromkeys(
            expected, 8
        )
