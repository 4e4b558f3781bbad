"""`score-backfill --batch-api`: real anthropic SDK → loopback fake Message Batches API."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scorer.jobs import batches
from scorer.jobs.backfill import BackfillOptions, run_backfill
from scorer.jobs.batch_requests import custom_id, session_hash
from scorer.jobs.ledger import Ledger
from scorer.judge.cost import Pricing
from scorer.models import JudgeUsage
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.jobs.helpers import FA, FakeJudgeServer, make_projects, score_counts, transcript_lines

REPO = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-5-5"


class Crash(BaseException):
    """Stands in for a kill: nothing in the run may catch it."""


class ScriptedBatches(FakeJudgeServer):
    """The fake server, with chosen batch results per custom_id prefix.

    `script` maps a session hash to "errored", "expired", "invalid" (unparseable reply
    text) or "final errored" (only its final request after the notes), and
    `direct_invalid` makes direct (repair) calls answer garbage too.
    """

    def __init__(self, script: dict[str, str], direct_invalid: bool = False, **kw) -> None:
        super().__init__(**kw)
        self.script, self.direct_invalid = script, direct_invalid

    def handle_post(self, path: str, body: dict):
        if self.direct_invalid and path.endswith("/v1/messages"):
            with self._lock:
                self.calls += 1
            return 200, FA.message_json("not json {", input_tokens=50, output_tokens=5), {}
        return super().handle_post(path, body)

    def handle_get(self, path: str):
        parts = path.split("?")[0].rstrip("/").split("/")
        if parts[-1] != "results":
            return super().handle_get(path)
        lines = []
        for r in self.batches[parts[-2]]["requests"]:
            what = self.script.get(r["custom_id"].split("-")[1])
            if what == "final errored":
                what = "errored" if r["custom_id"].startswith("f-") else None
            result = {"type": "succeeded", "message": self.reply_for(r["params"])}
            if what == "errored":
                error = {"type": "overloaded_error", "message": "try later"}
                result = {"type": "errored", "error": {"type": "error", "error": error}}
            elif what == "expired":
                result = {"type": "expired"}
            elif what == "invalid":
                result["message"] = FA.message_json("{oops", input_tokens=70, output_tokens=3)
            lines.append(json.dumps({"custom_id": r["custom_id"], "result": result}))
        lines.reverse()  # results come in any order: matching is by custom_id
        return 200, ("\n".join(lines) + "\n").encode(), {"content-type": "application/binary"}


@pytest.fixture
def judge_env(monkeypatch):
    monkeypatch.setenv("SCORER_BATCH_POLL_SECONDS", "0")

    def use(server: FakeJudgeServer) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()

    return use


def opts(root: Path, **kw) -> BackfillOptions:
    return BackfillOptions(
        source="claude-code", projects_root=root, judge="llm", batch_api=True, **kw
    )


def long_projects(root: Path, n: int, steps: int = 40) -> list[str]:
    """Sessions long enough to be chunked under a small SCORER_CHUNK_BUDGET."""
    folder = root / "-home-dev-long"
    folder.mkdir(parents=True, exist_ok=True)
    when = datetime.now(UTC) - timedelta(hours=3)
    ids = []
    for i in range(n):
        sid = str(uuid.UUID(int=(i + 1) * 104729))
        lines = transcript_lines(sid, when, n_steps=steps)
        (folder / f"{sid}.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
        os.utime(folder / f"{sid}.jsonl", (when.timestamp(), when.timestamp()))
        ids.append(sid)
    return ids


def requests_of(server: FakeJudgeServer) -> list[list[str]]:
    return [[r["custom_id"] for r in b["requests"]] for b in server.batches.values()]


# --- custom ids ---------------------------------------------------------------------


@given(st.text(min_size=1, max_size=500), st.integers(min_value=0, max_value=99_999))
def test_custom_ids_fit_the_api_rules(session_id, index):
    for cid in (
        custom_id(session_id, "score"),
        custom_id(session_id, "final"),
        custom_id(session_id, "notes", index),
    ):
        assert len(cid) <= 64 and re.fullmatch(r"[a-zA-Z0-9_-]+", cid)
        assert session_hash(session_id) in cid
    assert custom_id(session_id, "notes", 1) != custom_id(session_id, "notes", 2)


# --- end to end ---------------------------------------------------------------------


def test_single_chunk_sessions_go_through_one_batch_at_half_price(tmp_path, judge_env):
    root = tmp_path / "projects"
    ids = make_projects(root, 6)
    with FakeJudgeServer(batch_polls=2) as server:
        judge_env(server)
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed, summary.unscored) == (6, 0, 0)
        assert server.calls == 0 and server.batch_creates == 1  # nothing sent directly
        assert sorted(requests_of(server)[0]) == sorted(custom_id(s, "score") for s in ids)
        assert summary.input_tokens == server.input_tokens
        full = Pricing().cost_usd(
            JudgeUsage(input_tokens=summary.input_tokens, output_tokens=summary.output_tokens),
            MODEL,
        )
        assert summary.cost_usd == pytest.approx(full / 2, abs=1e-5)
        again = run_backfill(opts(root))
        assert again.skipped == 6 and server.batch_creates == 1
    ledger = Ledger(get_settings().store_path, summary.run_key)
    [batch] = ledger.batches()
    assert batch["status"] == "ended" and batch["phase"] == "first"
    rows = ledger.rows()
    assert {r["state"] for r in rows} == {"written"} and {r["batch_id"] for r in rows} == {
        batch["batch_id"]
    }
    assert all(r["cost_usd"] > 0 and r["output_tokens"] == 400 + 2_000 for r in rows)  # + thinking
    card = ScoreStore().latest(ids[0], judge="llm", model=MODEL)
    assert card.meta["batch"] == {"ids": [batch["batch_id"]], "direct_requests": 0}
    assert set(score_counts(get_settings().store_path).values()) == {7}


def test_chunked_sessions_get_a_second_batch_of_final_requests(tmp_path, judge_env, monkeypatch):
    monkeypatch.setenv("SCORER_CHUNK_BUDGET", "1500")
    monkeypatch.setenv("SCORER_CHUNK_OVERLAP", "0")
    root = tmp_path / "projects"
    short = make_projects(root, 2)
    long = long_projects(root, 3)
    with FakeJudgeServer() as server:
        judge_env(server)
        summary = run_backfill(opts(root))
    assert (summary.scored, summary.failed) == (5, 0) and server.calls == 0
    first, final = requests_of(server)
    assert sorted(final) == sorted(custom_id(s, "final") for s in long)
    assert {c for c in first if c.startswith("s-")} == {custom_id(s, "score") for s in short}
    cards = {s: ScoreStore().latest(s, judge="llm", model=MODEL) for s in long}
    for sid, card in cards.items():
        notes = [c for c in first if c.startswith(f"n-{session_hash(sid)}-")]
        assert card.n_chunks == len(notes) > 1
        assert len(card.meta["chunk_notes"]) == card.n_chunks
        assert card.usage.requests == card.n_chunks + 1  # notes + final, all batched
        assert card.cost_usd == Pricing().cost_usd(card.usage, MODEL, batch=True)
    # The final request is built from the notes, exactly as the direct judge builds it.
    final_body = next(
        r["params"]
        for b in server.batches.values()
        for r in b["requests"]
        if r["custom_id"] == custom_id(long[0], "final")
    )
    assert "<chunk_notes_" in final_body["messages"][0]["content"]
    assert set(score_counts(get_settings().store_path).values()) == {7}


def test_a_final_request_that_errors_after_the_notes_bills_the_notes(
    tmp_path, judge_env, monkeypatch
):
    monkeypatch.setenv("SCORER_CHUNK_BUDGET", "1500")
    root = tmp_path / "projects"
    failing, fine = long_projects(root, 2)
    with ScriptedBatches({session_hash(failing): "final errored"}) as server:
        judge_env(server)
        summary = run_backfill(opts(root))
    assert (summary.scored, summary.failed) == (1, 1)
    [failed] = summary.failures
    row = Ledger(get_settings().store_path, summary.run_key).get(failing)
    notes = [r for b in server.batches.values() for r in b["requests"]
             if r["custom_id"].startswith(f"n-{session_hash(failing)}-")]  # fmt: skip
    assert len(notes) > 1 and row["state"] == "failed"
    assert row["input_tokens"] == failed.input_tokens > 0
    assert row["cost_usd"] == failed.cost_usd > 0
    card = ScoreStore().latest(fine, judge="llm", model=MODEL)
    assert summary.cost_usd == pytest.approx(card.cost_usd + failed.cost_usd)
    assert summary.input_tokens == card.usage.input_tokens + failed.input_tokens


def test_errored_expired_invalid_results(tmp_path, judge_env):
    root = tmp_path / "projects"
    ids = make_projects(root, 4)
    script = {
        session_hash(ids[0]): "errored",
        session_hash(ids[1]): "expired",
        session_hash(ids[2]): "invalid",
    }
    with ScriptedBatches(script) as server:
        judge_env(server)
        summary = run_backfill(opts(root))
        assert (summary.scored, summary.failed) == (2, 2)
        reasons = {f.session_id: f.reason for f in summary.failures}
        assert "errored (overloaded_error: try later)" in reasons[ids[0]]
        assert reasons[ids[1]] == "score: batch request expired"
        assert server.calls == 1  # the invalid reply got one direct repair call
        repaired = ScoreStore().latest(ids[2], judge="llm", model=MODEL)
        assert repaired.meta["batch"]["direct_requests"] == 1
        batch_part = JudgeUsage(input_tokens=repaired.usage.input_tokens, output_tokens=3)
        assert repaired.cost_usd > Pricing().cost_usd(batch_part, MODEL, batch=True)
        # The failed ones are submitted again by the next run (fresh requests, new batch).
        server.script = {}
        again = run_backfill(opts(root))
        assert (again.scored, again.skipped, again.failed) == (2, 2, 0)
        assert server.batch_creates == 2
        assert sorted(requests_of(server)[1]) == sorted(custom_id(s, "score") for s in ids[:2])
        row = Ledger(get_settings().store_path, summary.run_key).get(ids[0])
        assert row["attempts"] == 2 and row["state"] == "written"


def test_invalid_after_repair_is_unscored_with_raw_reply(tmp_path, judge_env):
    root = tmp_path / "projects"
    ids = make_projects(root, 1)
    with ScriptedBatches({session_hash(ids[0]): "invalid"}, direct_invalid=True) as server:
        judge_env(server)
        summary = run_backfill(opts(root))
    assert summary.unscored == 1 and server.calls == 1
    [failure] = summary.failures
    assert "invalid structured output after one repair" in failure.reason
    assert failure.cost_usd > 0 and failure.input_tokens > 0
    row = Ledger(get_settings().store_path, summary.run_key).get(ids[0])
    assert row["state"] == "unscored" and row["cost_usd"] == failure.cost_usd
    assert score_counts(get_settings().store_path).get(ids[0], 0) == 0  # never zeros


@pytest.mark.parametrize("crash_at_poll", [1, 2])
def test_restart_mid_batch_polls_instead_of_resubmitting(
    tmp_path, judge_env, monkeypatch, crash_at_poll
):
    """Crash while phase 1 (1) or phase 2 (2) is in flight; rerun; nothing resubmitted."""
    monkeypatch.setenv("SCORER_CHUNK_BUDGET", "1500")
    monkeypatch.setenv("SCORER_CHUNK_OVERLAP", "0")
    root = tmp_path / "projects"
    ids = make_projects(root, 3) + long_projects(root, 2)
    polls = {"n": 0}

    def crash(_seconds: float) -> None:
        polls["n"] += 1
        if polls["n"] == crash_at_poll:
            raise Crash

    with FakeJudgeServer(batch_polls=1) as server:
        judge_env(server)
        monkeypatch.setattr(batches, "_sleep", crash)
        with pytest.raises(Crash):
            run_backfill(opts(root))
        creates = server.batch_creates
        assert creates == crash_at_poll
        monkeypatch.setattr(batches, "_sleep", lambda s: None)
        summary = run_backfill(opts(root))
        written_before = 0 if crash_at_poll == 1 else 3  # the single-chunk ones
        assert (summary.skipped, summary.scored) == (written_before, 5 - written_before)
        assert summary.failed == summary.unscored == 0
        assert server.batch_creates == 2  # phase 1 + finals, each submitted exactly once
        assert server.calls == 0
    counts = score_counts(get_settings().store_path)
    assert set(counts) == set(ids) and set(counts.values()) == {7}


def _cli(root: Path) -> list[str]:
    flags = ["--batch-api", "--json", "--no-progress"]
    return [sys.executable, "-m", "scorer.cli.backfill", "--projects-root", str(root), *flags]


# The kill point: SIGKILL this very process the moment `Ledger.add_batch` has returned
# (its transaction committed), before anything else runs. Deterministic, not a race.
_KILL_AFTER_ADD_BATCH = """
import os, signal, sys
from scorer.jobs.ledger import Ledger
from scorer.cli.backfill import main
_add = Ledger.add_batch
def _add_then_die(self, *args, **kwargs):
    _add(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
Ledger.add_batch = _add_then_die
sys.argv = ["score-backfill", *sys.argv[1:]]
main()
"""


def _session_states(db: Path) -> dict[str, tuple[str, str | None]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT session_id, state, batch_id FROM backfill_sessions")
        return {sid: (state, bid) for sid, state, bid in rows}


@pytest.mark.slow
def test_kill_9_right_after_the_batch_commit_then_rerun_resumes_polling(tmp_path):
    root = tmp_path / "projects"
    ids = make_projects(root, 8)
    home = tmp_path / "home"
    with FakeJudgeServer(batch_polls=10_000) as server:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SCORER_"))}
        env.update(SCORER_HOME=str(home), ANTHROPIC_API_KEY="test")
        env.update(ANTHROPIC_BASE_URL=server.url, SCORER_BATCH_POLL_SECONDS="0.05")
        killed = subprocess.run(
            [sys.executable, "-c", _KILL_AFTER_ADD_BATCH, *_cli(root)[3:]],
            env=env,
            cwd=REPO,
            capture_output=True,
            timeout=120,
        )
        assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
        assert server.batch_creates == 1
        # Everything the batch row names is already `fetched` in that batch.
        states = _session_states(home / "scores.sqlite3")
        assert set(states) == set(ids)
        assert {state for state, _ in states.values()} == {"fetched"}
        assert len({bid for _, bid in states.values()}) == 1
        server.batch_polls = 0  # the batch has ended meanwhile
        rerun = subprocess.run(_cli(root), env=env, cwd=REPO, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout.strip().splitlines()[-1])
    assert summary["scored"] == 8 and summary["failed"] == 0
    assert server.batch_creates == 1 and server.calls == 0
    counts = score_counts(home / "scores.sqlite3")
    assert set(counts) == set(ids) and set(counts.values()) == {7}


def test_cost_cap_leaves_the_rest_for_the_next_run(tmp_path, judge_env):
    root = tmp_path / "projects"
    make_projects(root, 6)
    with FakeJudgeServer() as server:
        judge_env(server)
        dry = run_backfill(opts(root, dry_run=True))
        cap = dry.estimated_cost_usd / 6 * 2.5  # room for two sessions' batch estimates
        summary = run_backfill(opts(root, max_cost=cap))
        assert (summary.scored, summary.not_started) == (2, 4)
        assert [len(r) for r in requests_of(server)] == [2] and summary.cost_usd <= cap
        rest = run_backfill(opts(root))
        assert (rest.scored, rest.skipped) == (4, 2) and server.batch_creates == 2


def test_batch_path_agrees_too_long_is_unscored_and_outage_is_failed(
    tmp_path, judge_env, monkeypatch
):
    """The two paths classify alike: content the judge cannot take is final (unscored);
    an errored batch request (an outage) is `failed` and submitted again next run."""
    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    with ScriptedBatches({session_hash(ids[1]): "errored"}) as server:
        judge_env(server)
        with monkeypatch.context() as patch:
            patch.setenv("SCORER_CONTEXT_WINDOW", "1000")
            get_settings.cache_clear()
            too_long = run_backfill(opts(root, rescore=True))
        get_settings.cache_clear()
        assert (too_long.unscored, too_long.failed) == (2, 0) and server.batch_creates == 0
        first = run_backfill(opts(root))
        assert (first.scored, first.failed) == (1, 1)
        assert first.failures[0].session_id == ids[1]
        server.script = {}
        second = run_backfill(opts(root))
        assert (second.scored, second.skipped, second.failed) == (1, 1, 0)


# --- the run's judge options reach batched requests ---------------------------------------


class RefusingPrimary(FakeJudgeServer):
    """Refuses every request to `model` (batched or not); answers other models normally.

    Direct `/v1/messages` bodies are kept in `direct`."""

    def __init__(self, model: str = MODEL, **kw) -> None:
        super().__init__(**kw)
        self.refused_model, self.direct = model, []

    def handle_post(self, path: str, body: dict):
        if path.endswith("/v1/messages"):
            self.direct.append(body)
        return super().handle_post(path, body)

    def reply_for(self, body: dict) -> dict:
        if body["model"] != self.refused_model:
            return {**super().reply_for(body), "model": body["model"]}  # as the API answers
        details = {"type": "refusal", "category": "cyber", "explanation": "policy"}
        return FA.message_json(
            "", stop_reason="refusal", output_tokens=3, model=body["model"], stop_details=details
        )


def test_batch_requests_carry_effort_and_a_refusal_falls_back_to_the_fallback_model(
    tmp_path, judge_env
):
    root = tmp_path / "projects"
    ids = make_projects(root, 2)
    with RefusingPrimary() as server:
        judge_env(server)
        summary = run_backfill(opts(root, effort="high", fallback_model="claude-opus-4-6"))
        batched = [r["params"] for b in server.batches.values() for r in b["requests"]]
    assert len(batched) == 2 and {p["output_config"]["effort"] for p in batched} == {"high"}
    assert {p["model"] for p in batched} == {MODEL}
    # Each refused batched request is sent again, directly, to the fallback model.
    assert [b["model"] for b in server.direct] == ["claude-opus-4-6"] * 2
    assert {b["output_config"]["effort"] for b in server.direct} == {"high"}
    assert summary.scored == 2, summary.failures
    card = ScoreStore().latest(ids[0], judge="llm", model=MODEL)
    assert card.effort == "high" and card.answered_by == "claude-opus-4-6"
    assert [(r.model, r.category) for r in card.refusals] == [(MODEL, "cyber")]
    assert card.meta["batch"]["direct_requests"] == 1


def test_a_batch_refusal_without_a_fallback_is_unscored_refused(tmp_path, judge_env):
    root = tmp_path / "projects"
    make_projects(root, 1)
    with RefusingPrimary() as server:
        judge_env(server)
        summary = run_backfill(opts(root, fallback_model=""))
    assert server.direct == [] and summary.unscored == 1
    assert "refused" in (summary.failures[0].reason or "")
