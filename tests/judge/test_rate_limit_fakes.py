"""The Anthropic fakes meter like the real Messages API (token-bucket RPM / ITPM / OTPM),
checked through the real SDK client: the rate-limit headers on every response, 429 with
`retry-after` when over a limit, cache reads not charged, `max_tokens` reserved."""

from __future__ import annotations

import json
from datetime import datetime

import anthropic
import httpx2
import pytest

from tests.fakes.anthropic import FakeAnthropic, FakeJudgeServer, message_response
from tests.fakes.ratelimits import Grant, Limits, Refused

MODEL = "claude-sonnet-5-5"
H = "anthropic-ratelimit-"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def create(client: anthropic.Anthropic, max_tokens: int = 1000, **kw):
    return client.messages.with_raw_response.create(
        model=MODEL, max_tokens=max_tokens, messages=[{"role": "user", "content": "hi"}], **kw
    )


def stamp(value: str) -> datetime:
    """RFC 3339 with a `Z` (what the API sends)."""
    assert value.endswith("Z")
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def test_every_response_carries_the_limits_and_what_remains():
    fake = FakeAnthropic(
        [message_response("ok", input_tokens=4_000, output_tokens=700)],
        limits=Limits(rpm=50, itpm=30_000, otpm=8_000),
        clock=Clock(),
    )
    raw = create(fake.client(), max_tokens=5_000)
    assert raw.parse().usage.input_tokens == 4_000  # still the SDK's own Message
    h = raw.headers
    assert (h[H + "requests-limit"], h[H + "requests-remaining"]) == ("50", "49")
    assert (h[H + "input-tokens-limit"], h[H + "input-tokens-remaining"]) == ("30000", "26000")
    # max_tokens was reserved, then the charge adjusted to the 700 tokens used
    assert (h[H + "output-tokens-limit"], h[H + "output-tokens-remaining"]) == ("8000", "7000")
    assert h[H + "tokens-remaining"] == "7000"  # the most restrictive token limit
    for kind in ("requests", "input-tokens", "output-tokens"):
        reset = stamp(h[f"{H}{kind}-reset"])
        assert reset.tzinfo is not None and reset.microsecond == 0


def test_over_a_limit_is_a_429_with_retry_after_and_the_reply_stays_queued():
    clock = Clock()
    fake = FakeAnthropic(
        [message_response("one"), message_response("two")],
        limits=Limits(rpm=1, itpm=30_000, otpm=8_000),
        clock=clock,
    )
    client = fake.client()
    create(client)
    with pytest.raises(anthropic.RateLimitError) as caught:
        create(client)
    response = caught.value.response
    assert response.headers["retry-after"] == "60"  # one request per minute: a full minute
    assert response.headers[H + "requests-remaining"] == "0"
    body = json.loads(response.content)
    assert body["error"]["type"] == "rate_limit_error" and "1 requests per minute" in str(body)
    clock.now += 60
    assert create(client).parse().content[0].text == "two"
    assert (fake.account.admitted, fake.account.refused) == (2, 1)


def test_an_input_larger_than_the_whole_bucket_is_never_admitted():
    clock = Clock()
    fake = FakeAnthropic(
        [message_response("big", input_tokens=40_000)],
        limits=Limits(rpm=50, itpm=30_000, otpm=8_000),
        clock=clock,
    )
    for _ in range(2):
        with pytest.raises(anthropic.RateLimitError) as caught:
            create(fake.client())
        assert caught.value.response.headers["retry-after"] == "60"
        clock.now += 3600


def test_output_reserves_max_tokens_until_the_reply_ends():
    """Two replies in flight at once: the second finds the first's `max_tokens` reserved."""
    account_limits = Limits(rpm=50, itpm=100_000, otpm=20_000)
    fake = FakeAnthropic(limits=account_limits, clock=Clock())
    assert fake.account is not None
    first = fake.account.admit(MODEL, input_tokens=1_000, max_tokens=16_000)
    second = fake.account.admit(MODEL, input_tokens=1_000, max_tokens=16_000)
    assert isinstance(first, Grant) and first.output_reserved == 16_000
    assert isinstance(second, Refused) and "20,000 output tokens" in second.limit  # 4,000 left
    headers = fake.account.finish(first, output_tokens=2_000)
    assert headers[H + "output-tokens-remaining"] == "18000"


def test_a_streamed_reply_carries_the_headers_too():
    fake = FakeAnthropic([message_response("ok")], limits=Limits(50, 30_000, 8_000), clock=Clock())
    with fake.client().messages.stream(
        model=MODEL, max_tokens=100, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        stream.get_final_message()
        assert stream.response.headers[H + "requests-remaining"] == "49"


def test_the_loopback_server_caches_the_system_prompt_and_does_not_charge_the_reads():
    system = [{"type": "text", "text": "rubric " * 3000, "cache_control": {"type": "ephemeral"}}]
    with FakeJudgeServer(limits=Limits(50, 1_000_000, 100_000), time_scale=10) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
        first = create(client, system=system)
        second = create(client, system=system)
    one, two = first.parse().usage, second.parse().usage
    assert one.cache_creation_input_tokens and not one.cache_read_input_tokens
    assert two.cache_read_input_tokens == one.cache_creation_input_tokens
    charged = server.account.charged_input
    assert charged == one.input_tokens + one.cache_creation_input_tokens + two.input_tokens
    # scaled: the reset stamp keeps milliseconds (a fake minute lasts 6 s)
    assert "." in second.headers[H + "input-tokens-reset"]
    assert server.account.period == 6.0


def test_the_loopback_server_answers_429_through_the_sdk():
    with FakeJudgeServer(limits=Limits(1, 1_000_000, 100_000)) as server:
        client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
        create(client)
        with pytest.raises(anthropic.RateLimitError) as caught:
            create(client)
    assert caught.value.response.headers["retry-after"] == "60"
    assert isinstance(caught.value.response, httpx2.Response)
