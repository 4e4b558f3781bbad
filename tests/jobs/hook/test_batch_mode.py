"""`SCORER_HOOK_MODE=batch` (issue 32 item 8): sessions wait in a queue and go out as
Message Batches (half price) when N wait or M minutes pass; the next hook run collects.

`HookJob` and `HookBatches` in process on copies of real transcripts; the LLM judge and
Message Batches behind `FakeJudgeServer` on loopback (the real SDK), so the requests, the
intents, adoption and the prices are the backfill machinery's own.
"""

from __future__ import annotations

import shutil
import sqlite3
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scorer.jobs.estimate import estimate_prepared
from scorer.jobs.hook.batch import FOLDER, HookBatches
from scorer.jobs.hook.batch_run import load_as
from scorer.jobs.hook.ledger import HookLedger
from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.worker import HookEnv, HookJob
from scorer.jobs.ledger import Ledger
from scorer.jobs.setup import run_settings
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.config import JudgeConfig
from scorer.prepare import PrepOptions
from scorer.prepare.own_output import work_fingerprint
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.conftest import require
from tests.jobs.helpers import FakeJudgeServer
from tests.jobs.hook.helpers import REAL, real

NAMES = [r for r in REAL if not r.endswith("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl")]
"""Three real single-chunk sessions (6 to 25 tool calls)."""
SUBAGENT = next(r for r in REAL if r.endswith("/subagent.jsonl"))


class Crash(BaseException):
    """Stands in for a kill: nothing in the hook may catch it."""


class Clock:
    """Real time plus whatever the fake sleeps added."""

    def __init__(self) -> None:
        self.offset = timedelta()
        self.naps: list[float] = []

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def sleep(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.offset += timedelta(seconds=seconds)


@pytest.fixture
def server(monkeypatch, clean_env):
    """The fake Messages API + Message Batches; a batch ends on its second poll."""
    monkeypatch.setenv("SCORER_BATCH_POLL_SECONDS", "0")
    monkeypatch.setenv("SCORER_BATCH_ADOPT_SECONDS", "0.3")
    with FakeJudgeServer(batch_polls=1) as fake:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
        get_settings.cache_clear()
        yield fake


@pytest.fixture
def sessions(tmp_path, cc_projects) -> dict[str, Path]:
    """Session id → a copy of a real transcript (the hook's id is not the file's)."""
    out = {}
    for i, name in enumerate(NAMES):
        path = tmp_path / "projects" / "-workspace" / Path(name).name
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(require(real(name)), path)
        out[f"s{i}"] = path
    return out


def env(clean_env: Path) -> HookEnv:
    return replace(HookEnv.from_settings(get_settings()), projects_root=clean_env / "none")


def batch_policy(**kw) -> HookPolicy:
    return HookPolicy(mode="batch", **{"batch_size": 3, "batch_minutes": 60, **kw})


def job(path: Path, sid: str, clean_env: Path, policy: HookPolicy | None = None, **kw) -> HookJob:
    request = HookRequest(sid, path, event="SessionEnd", cwd="/workspace")
    return HookJob(request, policy or batch_policy(), env(clean_env), **kw)


def rows() -> dict[str, dict]:
    with HookLedger(get_settings().store_path) as ledger:
        found = ledger.select("SELECT * FROM hook_sessions")
    return {r["session_id"]: r for r in found}


def spent_today() -> float:
    with HookLedger(get_settings().store_path) as ledger:
        return ledger.spent_today()


def stored() -> dict[str, int]:
    with sqlite3.connect(get_settings().store_path) as db:
        return dict(db.execute("SELECT session_id, COUNT(*) FROM runs GROUP BY 1").fetchall())


def requests_of(server: FakeJudgeServer, batch_id: str) -> list[dict]:
    return server.batches[batch_id]["requests"]


def test_sessions_wait_then_go_out_as_one_batch_collected_by_the_next_hook(
    server, sessions, clean_env, caplog
):
    ids = list(sessions)
    caplog.set_level("INFO", logger="scorer.hook")
    first = [job(sessions[s], s, clean_env).run() for s in ids[:2]]
    assert [o.state for o in first] == ["queued", "queued"]
    assert server.batch_creates == 0 and server.calls == 0  # queueing spends nothing
    assert {s: r["state"] for s, r in rows().items()} == dict.fromkeys(ids[:2], "queued")
    assert "Message Batch queue: 2 of 3 waiting; sent at" in caplog.text

    assert job(sessions[ids[2]], ids[2], clean_env).run().state == "queued"
    assert server.batch_creates == 1  # the third made it due: one batch of three
    assert len(requests_of(server, "msgbatch_0001")) == 3
    ledger = rows()
    assert {ledger[s]["state"] for s in ids} == {"submitted"}
    assert {ledger[s]["batch_id"] for s in ids} == {"msgbatch_0001"}
    assert all(ledger[s]["reserved_usd"] > 0 for s in ids)  # held against today's cap
    assert stored() == {}

    # The next hook run (the first session's SessionEnd once more, say) collects the
    # batch, which has ended meanwhile; the session is not sent again.
    again = job(sessions[ids[0]], ids[0], clean_env).run()
    assert (again.state, again.reason) == ("submitted", "in Message Batch msgbatch_0001")
    assert server.batch_creates == 1
    ledger = rows()
    assert {s: (ledger[s]["state"], ledger[s]["runs"]) for s in ids} == dict.fromkeys(
        ids, ("scored", 1)
    )
    assert all(ledger[s]["reserved_usd"] == 0 for s in ids)
    assert {ledger[s]["reason"] for s in ids} == {"collected from Message Batch msgbatch_0001"}
    assert stored() == dict.fromkeys(ids, 1)
    with ScoreStore() as store:
        cards = [store.latest(s) for s in ids]
    assert {c.backend for c in cards} == {"batch"}
    assert {c.meta["trigger"] for c in cards} == {"SessionEnd"}
    assert {tuple(c.meta["batch"]["ids"]) for c in cards} == {("msgbatch_0001",)}
    assert spent_today() == pytest.approx(sum(c.cost_usd for c in cards))
    assert server.calls == 0  # no direct call: no repair, no second opinion needed
    assert "collected: scored overall" in caplog.text
    folder = get_settings().store_path.parent / FOLDER
    assert [p.name for p in folder.iterdir()] == [".lock"]  # the copies are gone


def test_the_oldest_session_goes_out_after_the_minutes_with_nobody_else_ending(
    server, sessions, clean_env, caplog
):
    sid = next(iter(sessions))
    policy = batch_policy(batch_size=10, batch_minutes=30)
    assert job(sessions[sid], sid, clean_env, policy).run().state == "queued"
    assert server.batch_creates == 0
    clock = Clock()
    with caplog.at_level("INFO", logger="scorer.hook"):
        HookBatches(policy, env(clean_env), sleep=clock.sleep, now=clock.now).keep_time()
    assert server.batch_creates == 1 and rows()[sid]["state"] == "submitted"
    assert sum(clock.naps) == pytest.approx(30 * 60, abs=2)
    assert max(clock.naps) <= 60  # it looks at the queue at least once a minute
    assert "the oldest waited 30 min (SCORER_HOOK_BATCH_MINUTES=30)" in caplog.text
    # Nothing queued any more: the timer is gone, a new one may start.
    with HookLedger(get_settings().store_path) as ledger:
        assert ledger.select("SELECT * FROM hook_batch_timer") == []


def test_an_explicit_score_judges_at_once_and_collects_first(server, sessions, clean_env):
    a, b = list(sessions)[:2]
    policy = batch_policy(batch_size=1)
    assert job(sessions[a], a, clean_env, policy).run().state == "queued"  # sent at once
    assert rows()[a]["state"] == "submitted" and server.batch_creates == 1
    # `/score` on a queued session judges it now, directly (the user is waiting).
    queued_policy = batch_policy(batch_size=5)
    assert job(sessions[b], b, clean_env, queued_policy).run().state == "queued"
    now = job(sessions[b], b, clean_env, queued_policy, enforce=False).run()
    assert now.state == "scored" and now.card.backend == "api" and server.calls == 1
    # `/score` on a submitted one collects the ended batch first and shows its card.
    shown = job(sessions[a], a, clean_env, queued_policy, enforce=False).run()
    assert (shown.state, shown.reason) == ("unchanged", "unchanged since it was scored")
    assert rows()[a]["state"] == "scored" and server.calls == 1
    assert stored() == {a: 1, b: 1}


def test_a_session_that_grows_while_queued_is_judged_once_on_its_final_work(
    server, sessions, clean_env, tmp_path
):
    lines = require(real(SUBAGENT)).read_text().splitlines(keepends=True)
    grows = tmp_path / "grows.jsonl"
    grows.write_text("".join(lines[: len(lines) // 2]))
    other = next(iter(sessions))
    policy = batch_policy(batch_size=2)
    assert job(grows, "g", clean_env, policy).run().state == "queued"
    early = rows()["g"]["fingerprint"]
    grows.write_text("".join(lines))  # resumed, more work, ended again
    assert job(grows, "g", clean_env, policy).run().state == "queued"
    assert rows()["g"]["fingerprint"] != early and rows()["g"]["state"] == "queued"
    assert server.batch_creates == 0
    assert job(sessions[other], other, clean_env, policy).run().state == "queued"
    assert server.batch_creates == 1 and len(requests_of(server, "msgbatch_0001")) == 2
    HookBatches(policy, env(clean_env)).round()
    final = load_as(grows, "g")
    assert rows()["g"]["fingerprint"] == work_fingerprint(final)
    assert rows()["g"]["runs"] == 1
    prepared = PrepOptions.from_settings(run_settings()).run(final)
    with ScoreStore() as store:
        card = store.latest("g")
    assert card.session.n_events == len(prepared.events)  # the final work, not the half
    assert card.meta["origin"] == str(grows)  # the transcript, not the copy that was judged


def test_a_session_that_grows_while_in_a_batch_is_queued_again_when_collected(
    server, sessions, clean_env, tmp_path
):
    lines = require(real(SUBAGENT)).read_text().splitlines(keepends=True)
    grows = tmp_path / "grows.jsonl"
    grows.write_text("".join(lines[: len(lines) // 2]))
    policy = batch_policy(batch_size=1)
    assert job(grows, "g", clean_env, policy).run().state == "queued"
    assert rows()["g"]["state"] == "submitted"
    grows.write_text("".join(lines))
    seen = job(grows, "g", clean_env, batch_policy(batch_size=5)).run()
    assert seen.state == "submitted" and "newer transcript" in seen.reason
    # That hook's round collected the ended batch (the older work's card) and queued the
    # session again for its newer work.
    row = rows()["g"]
    assert (row["state"], row["runs"]) == ("queued", 1)
    assert row["fingerprint"] == work_fingerprint(load_as(grows, "g"))
    HookBatches(policy, env(clean_env)).round()  # due (size 1): the new work goes out
    HookBatches(policy, env(clean_env)).round()  # and comes back
    assert server.batch_creates == 2 and (rows()["g"]["state"], rows()["g"]["runs"]) == (
        "scored",
        2,
    )
    assert stored() == {"g": 1}  # the newer card replaced the older


def test_a_worker_killed_between_create_and_its_record_adopts_the_batch(
    server, sessions, clean_env, monkeypatch
):
    ids = list(sessions)
    policy = batch_policy(batch_size=3)
    for sid in ids[:2]:
        job(sessions[sid], sid, clean_env, policy).run()
    original = Ledger.add_batch

    def killed(self, *args, **kwargs):
        raise Crash("killed after create, before the batch was recorded")

    monkeypatch.setattr(Ledger, "add_batch", killed)
    with pytest.raises(Crash):
        job(sessions[ids[2]], ids[2], clean_env, policy).run()
    assert server.batch_creates == 1  # the server made it; nobody wrote its id down
    assert {rows()[s]["state"] for s in ids} == {"submitted"}
    assert {rows()[s]["batch_id"] for s in ids} == {None}
    monkeypatch.setattr(Ledger, "add_batch", original)

    batches = HookBatches(policy, env(clean_env))
    assert batches.round() == []  # adopted (on its request count), not sent again
    assert server.batch_creates == 1
    assert {rows()[s]["batch_id"] for s in ids} == {"msgbatch_0001"}
    collected = batches.round()
    assert sorted((c.session_id, c.state) for c in collected) == [(s, "scored") for s in ids]
    assert server.batch_creates == 1 and stored() == dict.fromkeys(ids, 1)


def test_the_daily_cap_counts_batch_prices(server, sessions, clean_env):
    a, b, c = list(sessions)
    direct = job(sessions[a], "direct", clean_env, HookPolicy(daily_cost_cap=9)).run()
    assert direct.state == "scored" and direct.card.backend == "api"
    judge = AnthropicJudge(None, JudgeConfig.from_settings(run_settings()), verify_tokens=False)
    prepared = PrepOptions.from_settings(run_settings()).run(load_as(sessions[a], "x"))
    full = estimate_prepared(prepared, judge, exact=False).cost_usd  # what the hook reserves
    half = estimate_prepared(prepared, judge, batch=True, exact=False).cost_usd
    assert half < full  # (the expected second opinions are direct: at the full price)
    spent = direct.card.cost_usd
    # Room for the session at batch prices, not at full price: the direct path caps it...
    cap = spent + (full + half) / 2
    capped = job(sessions[a], "d2", clean_env, HookPolicy(daily_cost_cap=cap)).run()
    assert capped.state == "capped"
    # ...and the batch sends it, then caps the next one (the first one's reservation holds).
    policy = batch_policy(batch_size=2, daily_cost_cap=cap)
    job(sessions[a], a, clean_env, policy).run()
    job(sessions[a], "copy-of-a", clean_env, policy).run()
    ledger = rows()
    assert ledger[a]["state"] == "submitted"
    assert ledger[a]["reserved_usd"] == pytest.approx(half)
    assert ledger["copy-of-a"]["state"] == "capped" and ledger["copy-of-a"]["retry"] == 1
    HookBatches(policy, env(clean_env)).round()
    with ScoreStore() as store:
        card = store.latest(a)
    assert card.backend == "batch"
    assert card.cost_usd == pytest.approx(direct.card.cost_usd / 2, rel=1e-6)
    assert spent_today() == pytest.approx(spent + card.cost_usd)
    assert rows()[a]["reserved_usd"] == 0
    del b, c


def test_without_a_key_batch_mode_falls_back_to_direct_with_one_line(sessions, clean_env, caplog):
    sid = next(iter(sessions))
    with caplog.at_level("INFO", logger="scorer.hook"):
        outcome = job(sessions[sid], sid, clean_env).run()
    assert outcome.state == "scored" and outcome.card.judge == "heuristic"
    notes = [r.getMessage() for r in caplog.records if "SCORER_HOOK_MODE=batch" in r.getMessage()]
    assert notes == [
        f"{sid}: SCORER_HOOK_MODE=batch needs ANTHROPIC_API_KEY (Message Batches are an API "
        "feature): judged directly by the heuristic judge"
    ]
    through_claude = HookJob(
        HookRequest(sid, sessions[sid]), batch_policy(), replace(env(clean_env), claude_found=True)
    )
    assert through_claude.route == "claude-code" and not through_claude.batch_mode


def test_an_uncertain_batch_verdict_gets_its_second_opinions_directly(
    server, sessions, clean_env, tmp_path, monkeypatch
):
    """The batch path settles the goal with the same judge (`AnthropicJudge.settle_goal`):
    a verdict in the uncertain band is asked twice more, directly, at the full price."""
    from scorer.judge import probability
    from tests.judge.test_probability import MODELS, one_feature

    unsure = MODELS.model_copy(update={"llm": one_feature("core_conf_mean", band=(0.5, 0.95))})
    (tmp_path / "configs").mkdir()
    (tmp_path / "configs" / probability.MODEL_FILE).write_text(unsure.model_dump_json())
    monkeypatch.setattr(probability, "data_dir", lambda name: tmp_path / "configs")
    sid = next(iter(sessions))
    job(sessions[sid], sid, clean_env, batch_policy(batch_size=1)).run()
    assert server.batch_creates == 1 and server.calls == 0
    (collected,) = HookBatches(batch_policy(), env(clean_env)).round()
    card = collected.card
    assert server.calls == 2  # the sample and the adversarial opinion, not batched
    assert [o["kind"] for o in card.meta["second_opinions"]] == ["sample", "adversarial"]
    assert card.backend == "batch" and card.usage.requests == 3
    assert spent_today() == pytest.approx(card.cost_usd)  # both prices, counted today


def test_a_refused_batch_leaves_its_sessions_failed_and_their_next_hook_queues_them_again(
    server, sessions, clean_env, caplog
):
    sid = next(iter(sessions))
    policy = batch_policy(batch_size=1)
    server.create_faults = [400]
    with caplog.at_level("WARNING", logger="scorer.hook"):
        job(sessions[sid], sid, clean_env, policy).run()
    row = rows()[sid]
    assert (row["state"], row["retry"], row["reserved_usd"]) == ("failed", 1, 0)
    assert row["reason"].startswith("batch create failed")
    assert f"{sid}: not sent: failed $0.0000: batch create failed" in caplog.text
    assert spent_today() == 0
    assert job(sessions[sid], sid, clean_env, policy).run().state == "queued"
    # Sent again under the same open intent: the fake made the batch before its 400, so
    # the intent machinery adopts it rather than paying for a second one.
    assert rows()[sid]["state"] == "submitted" and server.batch_creates == 1
    assert rows()[sid]["batch_id"] == "msgbatch_0001"


def test_a_chunked_session_takes_two_batches_over_two_rounds(server, clean_env, cc_projects):
    """Notes for each chunk, then the final call built from them: one batch each."""
    name = next(r for r in REAL if r.endswith("ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
    path = require(real(name))
    policy = batch_policy(batch_size=1)
    job(path, "long", clean_env, policy).run()
    notes = [r["custom_id"][0] for r in requests_of(server, "msgbatch_0001")]
    assert notes == ["n", "n"] and rows()["long"]["batch_id"] == "msgbatch_0001"
    assert HookBatches(policy, env(clean_env)).round() == []  # notes in: the final goes out
    assert [r["custom_id"][0] for r in requests_of(server, "msgbatch_0002")] == ["f"]
    assert rows()["long"]["batch_id"] == "msgbatch_0002"
    (collected,) = HookBatches(policy, env(clean_env)).round()
    assert (collected.state, collected.batch_id) == ("scored", "msgbatch_0002")
    assert collected.card.meta["batch"]["ids"] == ["msgbatch_0001", "msgbatch_0002"]
    assert server.batch_creates == 2 and server.calls == 0


def test_the_final_state_is_read_when_sent_and_kept_for_the_collection(server, clean_env, tmp_path):
    """The judge sees the workspace as it was when the batch went out; collected later,
    the card's timeline holds those very events, not the workspace as it is by then."""
    from tests.jobs.hook.test_worker_final_state import _final, _work

    repo, path = _work(tmp_path)
    job(path, "fs", clean_env, batch_policy(batch_size=1)).run()
    (request,) = requests_of(server, "msgbatch_0001")
    assert "FINAL STATE (observed by session-scorer" in str(request["params"]["messages"])
    (repo / "app.py").write_text("print('changed later')\n")  # the user kept working
    (collected,) = HookBatches(batch_policy(), env(clean_env)).round()
    card = collected.card
    head = _final(card)[0]
    assert "git status: clean" in head  # as sent, not the modified app.py of now
    assert card.meta["final_state"]["events"] == [9, 12] and card.session.n_events == 12


def test_a_session_another_writer_holds_is_not_sent_and_leases_end_with_the_round(
    server, sessions, clean_env
):
    from scorer.jobs.session_leases import SessionLeases

    a, b = list(sessions)[:2]
    policy = batch_policy(batch_size=2)
    job(sessions[a], a, clean_env, policy).run()
    with SessionLeases(get_settings().store_path, "score-backfill") as backfill:
        assert backfill.take(a) is None  # a backfill is judging it right now
        job(sessions[b], b, clean_env, policy).run()
    assert (rows()[a]["state"], rows()[b]["state"]) == ("skipped", "submitted")
    assert rows()[a]["reason"].startswith("being scored by process")
    assert len(requests_of(server, "msgbatch_0001")) == 1  # not paid for twice
    with HookLedger(get_settings().store_path) as ledger:  # nobody holds b: it is at Anthropic
        assert ledger.select("SELECT * FROM session_leases") == []
