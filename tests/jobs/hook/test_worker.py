"""`HookJob`, the worker's job, run in process on the real transcripts: which session id,
dedup, the Stop debounce, the minimum size, the project lists, the daily cost cap and the
Langfuse push (fake Langfuse behind respx, fake judge on loopback)."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from scorer.jobs.hook.ledger import HookLedger
from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.request import MANUAL, HookRequest
from scorer.jobs.hook.worker import HookEnv, HookJob
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from tests.conftest import require
from tests.jobs.helpers import FakeJudgeServer
from tests.jobs.hook.helpers import REAL, SHORT, real
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse

TOOL_HEAVY = next(r for r in REAL if r.endswith("/tool_heavy.jsonl"))
SUBAGENT = next(r for r in REAL if r.endswith("/subagent.jsonl"))
HOOK_ID = "0f0f0f0f-1111-2222-3333-444444444444"
"""The id Claude Code's hook gives (and the tracing plugin files traces under)."""


@pytest.fixture
def transcript(tmp_path, cc_projects) -> Path:
    """A copy of a real transcript, under a name that is not its session id."""
    path = tmp_path / "projects" / "-workspace" / "session.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copyfile(require(real(TOOL_HEAVY)), path)
    return path


def _env(clean_env: Path, **kw) -> HookEnv:
    base = HookEnv.from_settings(get_settings())
    return replace(base, projects_root=clean_env.parent / "projects", **kw)


def _job(path, clean_env, *, event="SessionEnd", policy=None, session_id=HOOK_ID, **kw):
    request = HookRequest(session_id, path, event=event, cwd="/workspace")
    return HookJob(request, policy or HookPolicy(), _env(clean_env), **kw)


def test_scored_under_the_hooks_session_id_then_not_again(transcript, clean_env):
    first = _job(transcript, clean_env).run()
    assert first.state == "scored" and first.card.judge == "heuristic"  # no key: heuristic
    assert first.card.session_id == HOOK_ID  # not the transcript's d6e0bada-…
    assert first.card.meta["trigger"] == "SessionEnd"
    with ScoreStore() as store:
        assert store.latest(HOOK_ID).scores.keys() == first.card.scores.keys()
    again = _job(transcript, clean_env).run()
    assert (again.state, again.reason) == ("unchanged", "unchanged since it was scored")
    forced = _job(transcript, clean_env, rescore=True).run()
    assert forced.state == "scored"
    with HookLedger(get_settings().store_path) as ledger:
        assert ledger.row(HOOK_ID, _job(transcript, clean_env).identity)["runs"] == 2


def test_a_transcript_alone_is_scored_under_its_own_id(transcript, clean_env):
    outcome = _job(transcript, clean_env, session_id=None, event=MANUAL).run()
    assert outcome.session_id == outcome.card.session_id == REAL[TOOL_HEAVY]


def test_a_session_id_alone_is_found_under_the_projects_root(transcript, clean_env):
    named = transcript.with_name(f"{HOOK_ID}.jsonl")
    transcript.rename(named)
    request = HookRequest(HOOK_ID, None, event=MANUAL)
    outcome = HookJob(request, HookPolicy(), _env(clean_env)).run()
    assert outcome.state == "scored" and outcome.card.session.cwd == "/home/marco/projects/spotter"


def test_small_sessions_wait_until_they_grow(tmp_path, clean_env, cc_projects):
    path = tmp_path / "s.jsonl"
    shutil.copyfile(real(SHORT[0]), path)
    skipped = _job(path, clean_env).run()
    assert skipped.state == "skipped" and "2 tool call(s)" in skipped.reason
    assert _job(path, clean_env).run().state == "unchanged"
    assert _job(path, clean_env, enforce=False).run().state == "scored"  # /score: no policy
    shutil.copyfile(real(TOOL_HEAVY), path)  # (a different session's bytes: it "grew")
    assert _job(path, clean_env).run().state == "scored"


def test_project_lists_fall_back_to_the_transcripts_cwd(transcript, clean_env):
    request = HookRequest(HOOK_ID, transcript, event="SessionEnd", cwd=None)
    policy = HookPolicy(ignore_projects=("spotter",))
    outcome = HookJob(request, policy, _env(clean_env)).run()
    assert outcome.state == "skipped"
    assert (
        outcome.reason
        == "project /home/marco/projects/spotter is ignored (SCORER_HOOK_IGNORE_PROJECTS)"
    )


def test_policy_refusals_never_touch_the_transcript(tmp_path, clean_env):
    missing = tmp_path / "gone.jsonl"
    off = _job(missing, clean_env, policy=HookPolicy(enabled=False)).run()
    assert off.state == "refused" and "SCORER_HOOK_ENABLED" in off.reason
    gone = _job(missing, clean_env).run()
    assert (gone.state, gone.reason) == ("failed", f"transcript not found: {missing}")


def test_a_stop_waits_for_the_session_to_stay_quiet(transcript, clean_env):
    policy = HookPolicy(events=frozenset({"Stop"}), stop_debounce=5)
    waits: list[float] = []
    quiet = _job(transcript, clean_env, event="Stop", policy=policy, sleep=waits.append).run()
    assert quiet.state == "scored" and sum(waits) == pytest.approx(5, abs=0.1)

    def another_hook_meanwhile(seconds: float) -> None:
        with HookLedger(get_settings().store_path) as ledger:
            ledger.trigger(HOOK_ID, "Stop")

    busy = _job(transcript, clean_env, event="Stop", policy=policy, sleep=another_hook_meanwhile)
    assert busy.run().state == "superseded"


def test_push_to_langfuse_as_session_scores(transcript, clean_env, monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    get_settings.cache_clear()
    with FakeLangfuse() as fake:
        outcome = _job(transcript, clean_env).run()
        assert outcome.state == "scored" and outcome.push_error is None
        assert {s: len(i) for s, i in fake.session_score_ids().items()} == {HOOK_ID: 8}  # + p(goal)
        assert outcome.pushed and HOOK_ID in outcome.pushed[0]
        not_pushed = _job(transcript, clean_env, policy=HookPolicy(push=False), rescore=True)
        assert not_pushed.run().pushed == []

        fake.fail("scores", *[httpx.Response(500, json={"message": "down"})] * 20)
        failed = _job(transcript, clean_env, rescore=True).run()
    assert failed.state == "scored" and "500" in failed.push_error
    with ScoreStore() as store:  # kept for `scorer scores push`
        assert [c.session_id for c in store.unpushed()] == [HOOK_ID]


def test_the_daily_cost_cap_stops_llm_judging(tmp_path, clean_env, cc_projects, monkeypatch):
    with FakeJudgeServer() as judge:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", judge.url)
        get_settings.cache_clear()
        paths = []
        for name in (TOOL_HEAVY, SUBAGENT):
            paths.append(tmp_path / Path(name).name)
            shutil.copyfile(real(name), paths[-1])
        first = _job(paths[0], clean_env, session_id="a").run()
        assert first.state == "scored" and first.card.judge == "llm" and first.card.cost_usd > 0
        with HookLedger(get_settings().store_path) as ledger:
            assert ledger.spent_today() == pytest.approx(first.card.cost_usd)
        calls = judge.calls
        tight = HookPolicy(daily_cost_cap=first.card.cost_usd + 0.01)
        capped = _job(paths[1], clean_env, session_id="b", policy=tight).run()
        assert capped.state == "capped" and "SCORER_HOOK_DAILY_COST_CAP" in capped.reason
        assert judge.calls == calls  # nothing was sent
        later = _job(paths[1], clean_env, session_id="b", policy=HookPolicy(daily_cost_cap=9)).run()
        assert later.state == "scored" and judge.calls > calls
        heuristic = HookPolicy(judge="heuristic", daily_cost_cap=0)
        assert _job(paths[1], clean_env, session_id="c", policy=heuristic).run().state == "scored"


def test_a_session_closed_before_its_first_prompt_is_skipped_quietly(tmp_path, clean_env, caplog):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with caplog.at_level("INFO", logger="scorer.hook"):
        outcome = _job(empty, clean_env).run()
        gone = _job(tmp_path / "never-written.jsonl", clean_env).run()
    assert (outcome.state, outcome.reason) == ("skipped", f"{empty} is empty")
    assert _job(empty, clean_env).run().state == "unchanged"
    assert gone.state == "failed"
    assert [r.levelname for r in caplog.records if "never-written" in r.getMessage()] == ["INFO"]


def test_a_broken_store_file_is_a_logged_failure(transcript, clean_env, caplog):
    clean_env.mkdir(parents=True, exist_ok=True)
    (clean_env / "scores.sqlite3").write_bytes(b"garbage" * 1000)
    with caplog.at_level("WARNING", logger="scorer.hook"):
        outcome = _job(transcript, clean_env).run()
    assert outcome.state == "failed" and "cannot open the hook ledger" in outcome.reason
    assert any("cannot open the hook ledger" in r.getMessage() for r in caplog.records)


def test_a_session_a_backfill_is_scoring_is_left_to_it(transcript, clean_env):
    """One writer per session across processes (issue 33 item 1): the hook skips a session
    whose lease another live process holds, and the next hook call for the same transcript
    does not judge it either (the other process stores it)."""
    from tests.jobs.test_one_writer import LeaseHolder

    with LeaseHolder(get_settings().store_path, HOOK_ID) as holder:
        outcome = _job(transcript, clean_env).run()
        assert outcome.state == "busy" and outcome.card is None
        assert outcome.reason == f"being scored by process {holder.pid} (score-backfill)"
        with ScoreStore() as store:
            assert store.latest(HOOK_ID) is None
        assert _job(transcript, clean_env).run().state == "unchanged"
    assert _job(transcript, clean_env, rescore=True).run().state == "scored"  # gone: free
