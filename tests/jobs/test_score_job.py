"""The score job: the judging step with the LLM judge, re-chunking when Claude counts more
tokens than our estimate, and the public `score_session`."""

from __future__ import annotations

import json

from scorer.jobs.step import judge_session
from scorer.judge.base import make_judge
from scorer.models import Scorecard
from scorer.prepare import Prepared, prepare
from scorer.sinks.base import publish
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import (
    FakeAnthropic,
    error_response,
    message_response,
    notes_payload,
    valid_scoring_payload,
)

DEMO = REPO / "examples" / "demo-session.jsonl"


def judge_and_store(prepared: Prepared, client) -> Scorecard:
    card = judge_session(prepared, make_judge("llm", client=client)).card
    assert card is not None
    with ScoreStore() as store:
        publish(card, [store])
    return card


def test_prompt_too_long_rechunks_with_a_smaller_budget_and_scores(monkeypatch):
    prepared = prepare(resolve(str(DEMO)).load(), budget=2_000)
    assert len(prepared.chunks) == 1

    def reply(body):
        # after re-chunking the session no longer fits one chunk: notes calls, then a final
        if "open_questions" in json.dumps(body.get("output_config")):
            return message_response(notes_payload())
        return message_response(valid_scoring_payload())

    too_long = error_response(400, message="prompt is too long: 250000 tokens > 200000 maximum")
    fake = FakeAnthropic([too_long] + [reply] * 12)
    card = judge_and_store(prepared, fake.client())
    assert card.status == "scored", card.unscored_reason
    assert card.n_chunks >= 2
    assert any("re-chunked" in n for n in card.meta["notes"])
    assert prepared.notes == ()  # frozen: the re-chunk made a new Prepared
    assert ScoreStore().latest(card.session_id, judge="llm") is not None


def test_real_big_session_multi_chunk_llm_path(big_session, monkeypatch):
    """The 2.7 MB real session with a small budget: notes per chunk, then one final call."""
    prepared = prepare(resolve(str(big_session)).load(), budget=20_000)
    n = len(prepared.chunks)
    assert n >= 4 and all(c.tokens <= 20_000 for c in prepared.chunks)
    cited = (prepared.chunks[-1].event_indices[-1], 99_999)  # one real, one invented

    def reply(body):
        if "open_questions" in json.dumps(body.get("output_config")):
            return message_response(notes_payload(events=(cited[0],)), cache_read=900)
        return message_response(valid_scoring_payload(events=cited), cache_write=1_500)

    fake = FakeAnthropic([reply] * (n + 1))
    card = judge_and_store(prepared, fake.client())
    assert card.status == "scored", card.unscored_reason
    bodies = fake.message_bodies
    assert len(bodies) == n + 1 and card.n_chunks == n
    final = json.dumps(bodies[-1]["messages"])
    assert "quote" in final  # the chunk notes reach the final call
    assert all(b["system"][0]["cache_control"] == {"type": "ephemeral"} for b in bodies)
    assert card.usage.requests == n + 1
    assert card.usage.cache_read_tokens == 900 * n and card.usage.cache_write_tokens == 1_500
    assert card.unknown_refs == [99_999]
    goal = card.scores["goal_achievement"]
    assert [e.valid for e in goal.evidence] == [True, False]


def test_score_session_is_the_public_api(clean_env):
    from scorer import score_session

    prepared, card, published = score_session(
        resolve(str(DEMO)), judge="heuristic", task="add stats"
    )
    assert published.written == ["store"]
    assert card.status == "scored" and card.judge == "heuristic"
    assert prepared.session.task  # the transcript's own task wins over the fallback
    assert ScoreStore().latest(card.session_id, judge="heuristic") is not None
