"""The judge against Sonnet 5.5's documented behaviour, through the real SDK client:
thinking budgets, truncation, refusals, context window, the answering model."""

from __future__ import annotations

import warnings

import pytest

from scorer.errors import ConfigError
from scorer.judge.anthropic import ContextWindowExceeded
from scorer.judge.catalog import NONSTREAMING_MAX_TOKENS
from scorer.prepare import prepare
from scorer.settings import get_settings
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import (
    FakeAnthropic,
    context_exceeded_response,
    message_response,
    refusal_response,
    thinking_reply,
    valid_scoring_payload,
)
from tests.judge.test_anthropic import CharCounter, chunk, judge_for, make_judge, run

DEMO = REPO / "examples" / "demo-session.jsonl"


def test_effort_is_explicit_and_max_tokens_holds_thinking_plus_answer():
    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    [body] = fake.message_bodies
    assert body["output_config"]["effort"] == "medium" and card.effort == "medium"
    assert body["max_tokens"] == 8_000 + 8_000  # answer + medium thinking allowance
    assert "stream" not in body  # under the SDK's non-streaming limit


def test_effort_setting_and_bad_effort(monkeypatch):
    monkeypatch.setenv("SCORER_EFFORT", "low")
    get_settings.cache_clear()
    assert judge_for(counter=CharCounter()).effort == "low"
    with pytest.raises(ConfigError, match="effort must be one of"):
        judge_for(counter=CharCounter(), effort="extreme")


def test_high_effort_budget_streams_instead_of_raising():
    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    card = run(make_judge(fake, effort="high"), [chunk(0, range(1, 3))])
    [body] = fake.message_bodies
    assert body["max_tokens"] == 24_000 > NONSTREAMING_MAX_TOKENS
    assert body["stream"] is True and card.status == "scored"


def test_sdk_non_streaming_guard_never_escapes():
    # claude-opus-4-0 allows only 8,192 non-streaming tokens in the SDK: it raises
    # ValueError for 16,000; the judge streams instead.
    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        card = run(make_judge(fake, model="claude-opus-4-0"), [chunk(0, range(1, 3))])
    assert card.status == "scored" and fake.message_bodies[0]["stream"] is True


def test_thinking_that_eats_the_budget_is_retried_once_with_a_larger_one():
    reply = thinking_reply(valid_scoring_payload(), thinking_tokens=15_000, answer_tokens=2_000)
    fake = FakeAnthropic([reply, reply])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    first, second = fake.message_bodies
    assert second["max_tokens"] == 2 * first["max_tokens"]
    assert second["messages"] == first["messages"]  # the same request, no repair prompt
    assert card.status == "scored" and card.usage.requests == 2
    assert card.usage.output_tokens == 16_000 + 17_000  # thinking billed as output


def test_cut_off_even_with_the_larger_budget_ends_unscored_after_one_repair():
    reply = thinking_reply(valid_scoring_payload(), thinking_tokens=70_000, answer_tokens=2_000)
    fake = FakeAnthropic([reply] * 3)
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.status == "unscored" and card.unscored_code == "invalid_output"
    assert [b["max_tokens"] for b in fake.message_bodies] == [16_000, 32_000, 32_000]
    assert "max_tokens" in fake.message_bodies[2]["messages"][-1]["content"]


def test_refusal_is_kept_and_retried_on_the_fallback_model():
    answer = message_response(valid_scoring_payload(), model="claude-sonnet-4-6")
    fake = FakeAnthropic([refusal_response("cyber"), answer])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    first, second = fake.message_bodies
    assert (first["model"], second["model"]) == ("claude-sonnet-5-5", "claude-sonnet-4-6")
    assert second["messages"] == first["messages"]
    assert card.status == "scored" and card.answered_by == "claude-sonnet-4-6"
    [refusal] = card.refusals
    assert (refusal.model, refusal.category, refusal.call) == (
        "claude-sonnet-5-5",
        "cyber",
        "score",
    )


def test_refused_by_the_fallback_too_is_unscored_refused(monkeypatch):
    monkeypatch.setenv("SCORER_FALLBACK_MODEL", "claude-opus-4-6")
    get_settings.cache_clear()
    fake = FakeAnthropic(
        [refusal_response("cyber"), refusal_response(None, model="claude-opus-4-6")]
    )
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.status == "unscored" and card.unscored_code == "refused"
    assert card.unscored_reason.startswith("refused")
    assert [r.category for r in card.refusals] == ["cyber", None]
    assert fake.message_bodies[1]["model"] == "claude-opus-4-6"


def test_no_fallback_configured_refusal_is_unscored_at_once():
    fake = FakeAnthropic([refusal_response("bio")])
    card = run(make_judge(fake, fallback_model=""), [chunk(0, range(1, 3))])
    assert card.unscored_code == "refused" and len(fake.message_bodies) == 1


def test_the_answering_model_is_recorded():
    reply = message_response(valid_scoring_payload(), model="claude-sonnet-5-5-20261101")
    fake = FakeAnthropic([reply])
    card = run(make_judge(fake), [chunk(0, range(1, 3))])
    assert card.model == "claude-sonnet-5-5" and card.answered_by == "claude-sonnet-5-5-20261101"
    assert card.model_dump(mode="json")["answered_by"] == "claude-sonnet-5-5-20261101"


def test_context_window_comes_from_the_model_table_and_can_be_overridden(monkeypatch):
    assert judge_for(counter=CharCounter()).context_window == 1_000_000
    old = judge_for(counter=CharCounter(), model="claude-sonnet-4-5")
    assert old.context_window == 200_000
    monkeypatch.setenv("SCORER_CONTEXT_WINDOW", "300000")
    get_settings.cache_clear()
    assert judge_for(counter=CharCounter()).context_window == 300_000


def test_single_call_ceiling_setting_stops_a_request_before_sending(monkeypatch):
    monkeypatch.setenv("SCORER_MAX_PROMPT_TOKENS", "100")
    get_settings.cache_clear()
    fake = FakeAnthropic()
    with pytest.raises(ContextWindowExceeded) as info:
        run(make_judge(fake), [chunk(0, range(1, 3))])
    assert info.value.limit == 100 and fake.message_bodies == []


def test_count_tokens_only_near_the_limit_and_claude_counts_decide(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    get_settings.cache_clear()
    fake = FakeAnthropic([message_response(valid_scoring_payload())], count_tokens_value=None)
    judge = judge_for(fake.client())
    run(judge, [chunk(0, range(1, 3))])
    assert fake.count_token_bodies == []  # far from a 1M window: no pre-flight call

    estimate = judge.estimate_chunk(chunk(0, range(1, 3)), "score")
    ceiling = int(estimate / 0.9)  # the estimate fits, but only just
    monkeypatch.setenv("SCORER_MAX_PROMPT_TOKENS", str(ceiling))
    get_settings.cache_clear()
    near = FakeAnthropic(count_tokens_value=ceiling + 1)
    with pytest.raises(ContextWindowExceeded) as info:
        run(judge_for(near.client()), [chunk(0, range(1, 3))])
    [counted] = near.count_token_bodies
    assert counted["output_config"]["effort"] == "medium" and "max_tokens" not in counted
    assert info.value.tokens == ceiling + 1  # Claude's count decides, not the estimate
    assert near.message_bodies == []


def test_context_window_exceeded_stop_reason_rechunks_and_scores():
    prepared = prepare(resolve(str(DEMO)).load())
    fake = FakeAnthropic(
        [context_exceeded_response(990_000), message_response(valid_scoring_payload())]
    )
    card = judge_for(fake.client()).judge(prepared)
    assert card.status == "scored" and len(fake.message_bodies) == 2
    assert "re-chunked" in card.meta["notes"][0]
    assert card.usage.requests == 2 and card.usage.input_tokens == 990_000 + 100  # both billed


def test_too_long_after_every_rechunk_is_unscored_too_long():
    prepared = prepare(resolve(str(DEMO)).load())
    fake = FakeAnthropic([context_exceeded_response()] * 3)
    card = judge_for(fake.client()).judge(prepared)
    assert card.status == "unscored" and card.unscored_code == "too_long"
    assert len(card.meta["notes"]) == 2
    assert card.usage.requests == 3 and card.cost_usd > 0


def test_the_output_schema_is_built_once_per_process(monkeypatch):
    from scorer.judge import schema

    built: list[str] = []
    real = schema.structured_schema
    monkeypatch.setattr(schema, "structured_schema", lambda m: built.append(m.__name__) or real(m))
    schema.output_config.cache_clear()
    fake = FakeAnthropic([message_response(valid_scoring_payload())] * 3)
    judge = make_judge(fake)
    for _ in range(3):
        run(judge, [chunk(0, range(1, 3))])
    assert built == ["ScoringReply"]
    schema.output_config.cache_clear()


def test_near_limit_notes_request_is_counted_as_it_would_be_sent(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    get_settings.cache_clear()
    chunks = [chunk(0, range(1, 3)), chunk(1, range(3, 40)).model_copy(update={"tokens": 900})]
    judge = judge_for(FakeAnthropic().client())
    ceiling = int(judge.estimate_chunk(chunks[1], "notes") / 0.9)
    monkeypatch.setenv("SCORER_MAX_PROMPT_TOKENS", str(ceiling))
    get_settings.cache_clear()
    fake = FakeAnthropic(count_tokens_value=ceiling + 5)
    with pytest.raises(ContextWindowExceeded) as info:
        run(judge_for(fake.client()), chunks)
    [counted] = fake.count_token_bodies
    assert "chunk 2 of 2" in counted["messages"][0]["content"]
    assert info.value.chunk_index == 1 and fake.message_bodies == []
