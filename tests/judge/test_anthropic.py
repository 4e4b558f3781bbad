"""The Sonnet judge driven through the real anthropic client and a MockTransport fake."""

from __future__ import annotations

import json
import threading

import httpx2
import pytest

import scorer
from scorer.errors import CredentialsError, JudgeError
from scorer.judge import retry
from scorer.judge.anthropic import AnthropicJudge, ContextWindowExceeded, ModelDeprecationWarning
from scorer.judge.config import JudgeConfig
from scorer.judge.prompts import default_prompts
from scorer.judge.rubric import default_rubric
from scorer.judge.schema import ChunkNotes, output_config
from scorer.models import Chunk
from scorer.settings import get_settings
from tests.fakes.anthropic import (
    FakeAnthropic,
    error_response,
    message_response,
    notes_payload,
    valid_scoring_payload,
)

HEADER = "# Task\nFix the failing date parser in utils.py"


class CharCounter:
    """A cheap token estimate so most tests skip tiktoken."""

    def count(self, text: str) -> int:
        return len(text) // 4


def chunk(index: int, events: range, marker: str = "") -> Chunk:
    lines = [f"#{e} tool_call Bash: pytest -k parse_{e} {marker}" for e in events]
    return Chunk(
        index=index, text=HEADER + "\n\n" + "\n".join(lines), event_indices=list(events), tokens=50
    )


def judge_for(client=None, *, counter=None, max_concurrency: int = 4, **options) -> AnthropicJudge:
    """The judge as a command builds it: its options over the settings (env vars)."""
    config = JudgeConfig.from_settings(get_settings(), **options)
    return AnthropicJudge(client, config, counter=counter, max_concurrency=max_concurrency)


def make_judge(fake: FakeAnthropic, **kwargs) -> AnthropicJudge:
    kwargs.setdefault("counter", CharCounter())
    return judge_for(fake.client(), **kwargs)


def run(judge: AnthropicJudge, chunks: list[Chunk]):
    return judge.judge_chunks(HEADER, chunks, session_id="s1", source="claude-code")


def test_single_chunk_request_body_and_scorecard():
    fake = FakeAnthropic(
        [
            message_response(
                valid_scoring_payload(events=(1, 2)),
                input_tokens=1200,
                output_tokens=800,
                cache_write=3000,
            )
        ]
    )
    card = run(make_judge(fake), [chunk(0, range(1, 6))])

    [body] = fake.message_bodies
    assert body["model"] == "claude-sonnet-5-5"
    assert "temperature" not in body and "tool_choice" not in body and "tools" not in body
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert body["output_config"]["format"]["type"] == "json_schema"
    assert "goal_achievement" in body["output_config"]["format"]["schema"]["properties"]
    assert "#3 tool_call Bash" in body["messages"][0]["content"]

    assert card.status == "scored" and card.n_chunks == 1
    assert (
        card.prompt_version == default_prompts().version
        and card.prompt_hash == default_prompts().hash
    )
    assert card.rubric_hash == default_rubric().hash and card.package_version == scorer.__version__
    assert card.scores["tool_efficiency"].value == 4.0
    assert card.scores["goal_achievement"].label == "complete"
    assert card.scores["goal_achievement"].value == 2.0
    assert card.recommendation == "complete" and card.accomplishments == ["fixed the bug"]
    assert card.unknown_refs == []
    assert card.usage.requests == 1 and card.usage.cache_write_tokens == 3000
    # 1200×2 + 800×10 + 3000×2.5 per million
    assert card.cost_usd == pytest.approx((2400 + 8000 + 7500) / 1e6)


def test_overall_is_the_weighted_formula():
    labels = {"goal_achievement": "exceeded", "error_handling": "struggled"}
    fake = FakeAnthropic([message_response(valid_scoring_payload(numeric=2, labels=labels))])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    # numeric 2 → 0.25; exceeded → 1; struggled → 1/3
    expected = 0.30 * 1 + 0.10 * (1 / 3) + (0.15 + 0.20 + 0.20 + 0.05) * 0.25
    assert card.overall == pytest.approx(expected, abs=1e-4)
    assert card.scores["overall_quality"].normalized == card.overall


def test_our_output_config_equals_what_messages_parse_sends():
    fake = FakeAnthropic([message_response(notes_payload())])
    client = fake.client()
    parsed = client.messages.parse(
        model="claude-sonnet-5-5",
        max_tokens=100,
        messages=[{"role": "user", "content": "hi"}],
        output_format=ChunkNotes,
    )
    assert parsed.parsed_output.progress == "progress"
    assert fake.message_bodies[0]["output_config"] == output_config(ChunkNotes)


def test_multi_chunk_notes_run_concurrently_then_one_final_call():
    barrier = threading.Barrier(3, timeout=5)  # breaks unless all 3 notes calls overlap

    def notes_reply(body: dict) -> httpx2.Response:
        barrier.wait()
        text = body["messages"][0]["content"]
        n = text.split("chunk ", 1)[1][:1]  # "chunk 2 of 3"
        return message_response(
            notes_payload(events=(int(n),), progress=f"PROGRESS-{n}"), cache_read=900
        )

    chunks = [
        chunk(0, range(1, 11), "A" * 50),
        chunk(1, range(9, 21)),
        chunk(2, range(19, 31), "LAST"),
    ]
    fake = FakeAnthropic(
        [notes_reply] * 3 + [message_response(valid_scoring_payload(events=(30,)))]
    )
    card = run(make_judge(fake, max_concurrency=4), chunks)

    bodies = fake.message_bodies
    assert len(bodies) == 4
    expected_config = {"effort": "medium", **output_config(ChunkNotes)}
    assert all(b["output_config"] == expected_config for b in bodies[:3])
    final = bodies[3]["messages"][0]["content"]
    assert all(f"PROGRESS-{n}" in final for n in (1, 2, 3))
    assert "#30 tool_call Bash" in final and "LAST" in final  # tail of the last chunk
    assert "A" * 50 not in final  # earlier chunks only through their notes
    assert {b["system"][0]["text"] for b in bodies} == {bodies[0]["system"][0]["text"]}
    assert card.status == "scored" and card.n_chunks == 3
    assert card.usage.requests == 4 and card.usage.cache_read_tokens == 2700
    assert [n["progress"] for n in card.meta["chunk_notes"]] == [
        "PROGRESS-1",
        "PROGRESS-2",
        "PROGRESS-3",
    ]


def test_429_honours_retry_after_then_succeeds(fast_retry_waits):
    fake = FakeAnthropic(
        [
            error_response(429, headers={"retry-after": "7"}),
            error_response(429, headers={"retry-after": "9999"}),
            message_response(valid_scoring_payload()),
        ]
    )
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.status == "scored" and len(fake.message_bodies) == 3
    assert fast_retry_waits == [7.0, retry.MAX_RETRY_AFTER]
    assert card.usage.requests == 1  # failed attempts carry no usage


@pytest.mark.parametrize(
    "failure",
    [error_response(529), error_response(500), error_response(503), httpx2.ConnectTimeout("slow")],
    ids=["529", "500", "503", "timeout"],
)
def test_transient_failure_then_success(failure, fast_retry_waits):
    fake = FakeAnthropic([failure, message_response(valid_scoring_payload())])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.status == "scored"
    assert len(fast_retry_waits) == 1 and 0 <= fast_retry_waits[0] <= 30


def test_overloaded_after_all_retries_is_a_judge_error_not_unscored():
    # Infrastructure, not content: the session fails (retried next run), never unscored.
    fake = FakeAnthropic([error_response(529, message="Overloaded")] * retry.MAX_ATTEMPTS)
    with pytest.raises(JudgeError, match=r"529.*Overloaded"):
        run(make_judge(fake), [chunk(0, range(1, 3))])
    assert len(fake.message_bodies) == retry.MAX_ATTEMPTS


def test_invalid_json_twice_is_unscored_with_raw_reply():
    fake = FakeAnthropic([message_response("not json {"), message_response('{"summary": "half"}')])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.status == "unscored" and card.scores == {} and card.overall is None
    assert card.raw_reply == '{"summary": "half"}'
    assert "invalid structured output after one repair" in card.unscored_reason
    assert card.usage.requests == 2
    repair = fake.message_bodies[1]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert repair[1]["content"] == "not json {"
    assert "could not be used" in repair[2]["content"] and "json" in repair[2]["content"].lower()


def test_unknown_evidence_refs_are_flagged():
    fake = FakeAnthropic([message_response(valid_scoring_payload(events=(2, 77, 5)))])
    card = run(make_judge(fake), [chunk(0, range(1, 4))])
    assert card.unknown_refs == [5, 77]
    refs = card.scores["output_quality"].evidence
    assert [(r.event, r.valid) for r in refs] == [(2, True), (77, False), (5, False)]


def test_rejected_key_raises_credentials_error():
    fake = FakeAnthropic([error_response(401, message="invalid x-api-key")])
    with pytest.raises(CredentialsError, match="ANTHROPIC_API_KEY"):
        run(make_judge(fake), [chunk(0, range(1, 3))])


def test_missing_key_raises_credentials_error_on_first_use():
    judge = AnthropicJudge(counter=CharCounter())  # constructing needs no key
    with pytest.raises(CredentialsError, match="ANTHROPIC_API_KEY"):
        run(judge, [chunk(0, range(1, 3))])


def test_bad_model_is_a_judge_error_and_too_long_asks_to_rechunk():
    fake = FakeAnthropic([error_response(404, message="model: claude-nope")])
    with pytest.raises(JudgeError, match="404"):
        run(make_judge(fake, model="claude-nope"), [chunk(0, range(1, 3))])
    fake.push(error_response(400, message="prompt is too long: 250000 tokens > 200000 maximum"))
    with pytest.raises(ContextWindowExceeded, match="re-chunk"):
        run(make_judge(fake), [chunk(0, range(1, 3))])


def test_deprecated_model_warns():
    with pytest.warns(ModelDeprecationWarning, match="2026-11-30"):
        make_judge(FakeAnthropic(), model="claude-sonnet-4-5")


def test_without_a_key_the_estimate_decides_and_count_tokens_is_skipped():
    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    card = run(judge_for(fake.client()), [chunk(0, range(1, 3))])  # real TokenCounter
    assert fake.count_token_bodies == []
    assert 1000 < card.meta["prompt_tokens"] < 10_000


def test_unknown_model_cost_is_marked_estimated():
    fake = FakeAnthropic(
        [message_response(valid_scoring_payload(), input_tokens=1_000_000, output_tokens=0)]
    )
    card = run(make_judge(fake, model="claude-future-9"), [chunk(0, range(1, 3))])
    assert card.meta["cost_estimated"] is True and card.cost_usd == pytest.approx(2.0)
    assert json.loads(card.model_dump_json())["model"] == "claude-future-9"
