"""The final state through the jobs: the LLM judge reads it and cites it like any event
(`score_session`), it is turned off by the option or `SCORER_FINAL_STATE=0`, and the
backfill reads it in its threads and in its prep workers."""

from __future__ import annotations

import json
from datetime import timedelta

from scorer.jobs.backfill import default_services
from scorer.jobs.discovery import SessionRef
from scorer.jobs.prep_pool import load_and_prepare
from scorer.jobs.run_state import BackfillOptions
from scorer.jobs.score import score_session
from scorer.judge.base import make_judge
from scorer.live.final_state import FinalStateOptions
from scorer.prepare.prepared import PrepOptions
from scorer.settings import get_settings
from scorer.sources import resolve
from tests.fakes.anthropic import FakeAnthropic, message_response, valid_scoring_payload
from tests.live.workspace_helpers import START, commit, make_repo, transcript

KEY = "sk-ant-api03-" + "Qw7" * 30 + "BB"
TASK = "Write the results to `out/results.json`."


def _transcript(tmp_path):
    repo = make_repo(tmp_path / "app")
    body = json.dumps({"accuracy": 0.93, "anthropic_api_key": KEY})
    commit(repo, {"out/results.json": body + "\n"}, "results", START + timedelta(minutes=10))
    return transcript(tmp_path / "projects" / "-app" / "s.jsonl", cwd=repo, task=TASK)


def _sent(fake: FakeAnthropic) -> str:
    return json.dumps(fake.message_bodies)


def test_the_llm_judge_reads_the_final_state_and_cites_it(tmp_path):
    path = _transcript(tmp_path)
    cited = (8, 9, 10, 11)  # the answer, the state, the changes, the deliverable
    fake = FakeAnthropic([message_response(valid_scoring_payload(events=cited))])
    judge = make_judge("llm", client=fake.client())
    result = score_session(resolve(str(path)), judge=judge, sinks=[])
    card = result.card
    assert card.status == "scored", card.unscored_reason
    assert card.unknown_refs == []
    refs = {e.event for s in card.scores.values() for e in s.evidence if e.valid}
    assert refs == set(cited)
    sent = _sent(fake)
    assert "FINAL STATE (observed by session-scorer when it scored this session" in sent
    assert "deliverable out/results.json (named by the task): exists" in sent
    assert "0.93" in sent and KEY not in sent and "Qw7Qw7" not in sent
    assert card.meta["final_state"]["events"] == [9, 11]


def test_turned_off_by_the_option_or_the_setting(tmp_path, monkeypatch):
    path = _transcript(tmp_path)
    fake = FakeAnthropic([message_response(valid_scoring_payload())] * 2)
    judge = make_judge("llm", client=fake.client())
    score_session(resolve(str(path)), judge=judge, sinks=[], final_state=False)
    monkeypatch.setenv("SCORER_FINAL_STATE", "0")
    get_settings.cache_clear()
    card = score_session(resolve(str(path)), judge=judge, sinks=[]).card
    assert "FINAL STATE" not in _sent(fake) and "final_state" not in card.meta


def test_the_backfill_reads_it_in_threads_and_in_prep_workers(tmp_path):
    path = _transcript(tmp_path)
    ref = SessionRef(session_id="s", source="claude-code", origin=str(path))
    for enabled, n in ((None, 11), (False, 8)):
        opts = BackfillOptions(judge="heuristic", final_state=enabled)
        services = default_services(opts, get_settings())
        assert services.load(ref).n_events == n
    worker = load_and_prepare(str(path), PrepOptions(), FinalStateOptions())
    assert [e.index for e in worker.events][-3:] == [9, 10, 11]
    assert "FINAL STATE" in worker.events[-3].text
    assert len(load_and_prepare(str(path), PrepOptions()).events) == 8
