"""Our reads, config sync, score writes, re-scores, verify, backfill discovery and the
fallbacks against a real self-hosted Langfuse (see conftest.py for what it needs).

Every assertion is on what the server answers afterwards, read with plain HTTP; `wire`
records every exchange the scorer had with it, so "no request was refused" is checked
on the real answers.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import httpx
import pytest

from scorer import langfuse_caps
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.ledger import Ledger
from scorer.jobs.score import score_session
from scorer.judge.rubric import default_rubric
from scorer.langfuse_client import make_client as make_langfuse_client
from scorer.models import Scorecard
from scorer.settings import get_settings
from scorer.sinks.base import publish
from scorer.sinks.langfuse import LangfuseSink, langfuse_has_scores, push_scorecard, sync_configs
from scorer.sinks.langfuse.modes import SERVERS_FILE
from scorer.sources import SourceOptions, resolve
from tests.langfuse_real.conftest import PUBLIC, SECRET, Exchange, RealServer, Uploaded

RUBRIC = default_rubric()
NAMES = {cfg.name for cfg in RUBRIC.all_configs}
"""The seven and goal_probability: the heuristic judge's cards carry a probability."""


def server_get(server: RealServer, path: str, **params: Any) -> Any:
    answer = httpx.get(f"{server.url}{path}", params=params, auth=(PUBLIC, SECRET), timeout=30)
    answer.raise_for_status()
    return answer.json()


def session_scores(server: RealServer, session_id: str, want: int = 8, wait: float = 90) -> list:
    """The session's scores once the worker stored `want` of them (ingestion is async)."""
    deadline = time.monotonic() + wait
    while True:
        rows = server_get(
            server, "/api/public/v3/scores", sessionId=session_id, fields="details", limit=100
        )["data"]
        if len(rows) >= want or time.monotonic() > deadline:
            return rows
        time.sleep(2)


def refused(wire: list[Exchange]) -> list[Exchange]:
    return [x for x in wire if x.status >= 400]


def score(session_id: str, *, push: bool = True) -> Scorecard:
    """`score-session <id> --source langfuse --judge heuristic [--push]`, in process."""
    source = resolve(session_id, source="langfuse", options=SourceOptions())
    card = score_session(source, judge="heuristic", sinks=[]).card
    if push:
        done = publish(card, [LangfuseSink()])
        assert done.ok, done.problem()
    return card


def test_reads_match_the_local_transcript(uploaded: Uploaded, on_real_server):
    for name, sid in uploaded.ids.items():
        remote = resolve(sid, source="langfuse", options=SourceOptions()).load()
        local = resolve(str(uploaded.files[name]), options=SourceOptions()).load()
        tools = [e.tool_name for e in remote.events if e.kind == "tool_call"]
        assert tools == [e.tool_name for e in local.events if e.kind == "tool_call"], name
        prompt = [e.text.split()[:8] for e in remote.events if e.kind == "prompt"][:1]
        assert (
            prompt
            and prompt == [e.text.split()[:8] for e in local.events if e.kind == "prompt"][:1]
        )


def test_configs_sync_is_idempotent(on_real_server):
    first = sync_configs()
    again = sync_configs()
    assert not again.changed and sorted(again.unchanged) == sorted(NAMES)
    assert again.ids == first.ids
    held = server_get(on_real_server, "/api/public/score-configs", limit=100)["data"]
    live = {c["name"]: c["id"] for c in held if not c["isArchived"] and c["name"] in NAMES}
    assert live == first.ids


def test_score_session_and_its_rerun_send_nothing_refused(uploaded, on_real_server, wire):
    sid = uploaded.ids["short"]
    score(sid)
    rows = session_scores(on_real_server, sid)
    assert {r["name"] for r in rows} == NAMES and len(rows) == 8
    prob = next(r for r in rows if r["name"] == "goal_probability")
    assert prob["dataType"] == "NUMERIC" and 0 <= prob["value"] <= 1 and prob["comment"]
    assert all(r["configId"] for r in rows)
    first = {r["id"]: (r["value"], r["timestamp"]) for r in rows}
    score(sid)  # the re-run: same ids, same values
    time.sleep(10)
    rows = session_scores(on_real_server, sid)
    assert {r["id"]: (r["value"], r["timestamp"]) for r in rows} == first
    assert refused(wire) == []
    scores_sent = [x for x in wire if x.method == "POST" and "/scores" in x.url]
    assert scores_sent == []  # self-hosted 4.16 takes scores on the ingestion endpoint
    assert [x.url.rsplit("/", 1)[-1] for x in wire if x.method == "POST"].count("ingestion") == 2


def test_a_changed_value_updates_the_one_row_and_keeps_its_timestamp(uploaded, on_real_server):
    sid = uploaded.ids["tool_heavy"]
    card = score(sid)
    before = {r["name"]: r for r in session_scores(on_real_server, sid)}
    rescored = card.model_copy(deep=True)
    rescored.created_at = card.created_at + timedelta(days=3)
    rescored.meta["first_scored_at"] = card.created_at.isoformat()
    dim = rescored.scores["tool_efficiency"]
    dim.value = 1 if dim.value != 1 else 5
    push_scorecard(rescored)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        after = {r["name"]: r for r in session_scores(on_real_server, sid)}
        if after["tool_efficiency"]["value"] == dim.value:
            break
        time.sleep(2)
    assert after["tool_efficiency"]["value"] == dim.value
    assert after["tool_efficiency"]["id"] == before["tool_efficiency"]["id"]
    assert after["tool_efficiency"]["timestamp"] == before["tool_efficiency"]["timestamp"]
    by_id = server_get(on_real_server, "/api/public/v3/scores", id=before["tool_efficiency"]["id"])
    assert len(by_id["data"]) == 1  # one row, not one per push


def test_backfill_discovers_scores_and_verifies(uploaded, on_real_server, wire):
    opts = BackfillOptions(
        source="langfuse",
        start=uploaded.first - timedelta(minutes=5),
        end=uploaded.last + timedelta(hours=1),
        judge="heuristic",
        concurrency=3,
        idle_minutes=1,
        verify_sample=3,
    )
    summary = run_backfill(opts, now=uploaded.last + timedelta(days=1))
    ledger = Ledger(get_settings().store_path, summary.run_key)
    rows = {r["session_id"]: r for r in ledger.rows()}
    ledger.close()
    ours = {sid: (rows[sid]["state"], rows[sid]["reason"]) for sid in uploaded.ids.values()}
    assert {state for state, _ in ours.values()} <= {"written", "skipped"}, (ours, summary)
    assert summary.failed == 0, summary.failures
    for sid in uploaded.ids.values():
        assert {r["name"] for r in session_scores(on_real_server, sid)} == NAMES
        assert langfuse_has_scores(
            make_langfuse_client(), sid, rubric_version=RUBRIC.version, model=None,
            judge="heuristic",
        )  # fmt: skip
    assert refused(wire) == []
    from typer.testing import CliRunner

    from scorer.cli.main import app

    verified = CliRunner().invoke(app, ["scores", "verify"])
    assert verified.exit_code == 0, verified.output


def test_a_refused_list_falls_back_once_and_is_remembered(uploaded, on_real_server, wire):
    """Force the list body (as for an unknown version): the real server refuses it once,
    the card goes one score per request, and the next process sends no list at all."""
    sid = uploaded.ids["fasthooks"]
    langfuse_caps.capabilities(make_langfuse_client()).score_write = "list"
    result = push_scorecard(score(sid, push=False))
    assert result.ok and result.path == "single" and len(result.accepted) == 8
    lists = [x.status for x in wire if x.method == "POST" and x.url.endswith("/scores")]
    assert lists[0] == 400 and 400 not in lists[1:]
    assert (get_settings().home / SERVERS_FILE).exists()
    langfuse_caps.reset()  # a new process: the remembered refusal, no second 400
    wire.clear()
    push_scorecard(score(sid, push=False))
    assert refused(wire) == []
    assert {r["name"] for r in session_scores(on_real_server, sid)} == NAMES


@pytest.mark.parametrize("name", ["short", "tool_heavy"])
def test_legacy_reads_match_v2(uploaded, on_real_server, name):
    """The v3 fallback reads (sessions → traces → v1 observations), which this server
    still serves in dual write mode, give the same session as the v2 read."""
    sid = uploaded.ids[name]
    v2 = resolve(sid, source="langfuse", options=SourceOptions()).load()
    langfuse_caps.capabilities(make_langfuse_client()).observations_v2 = False
    legacy = resolve(sid, source="langfuse", options=SourceOptions()).load()
    assert [e.kind for e in legacy.events] == [e.kind for e in v2.events]
    assert [e.tool_name for e in legacy.events] == [e.tool_name for e in v2.events]
