"""Pacing at the account's rate limits: `account_limits.ModelLimits` on explicit times, then
the shared `RateLimiter` with the judge's real sender against the metered fake API."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from types import SimpleNamespace

import anthropic
import httpx2
import pytest

from scorer.errors import OverRateLimit
from scorer.jobs.account_limits import ModelLimits, parse_headers
from scorer.jobs.ratelimit import RateLimiter, limited_httpx2_client
from scorer.judge.client import ContextWindowExceeded, api_failure, send
from scorer.pacing import MeteredRequest
from tests.fakes.anthropic import FakeAnthropic, message_response
from tests.fakes.ratelimits import Limits

MODEL = "claude-sonnet-5-5"
WALL = 1_800_000_000.0
H = "anthropic-ratelimit-"


def headers(remaining: dict[str, int], limits=(50, 200_000, 40_000), reset_in=(0, 0, 0)):
    """Rate-limit headers as the API sends them (whole-second resets)."""
    out = {}
    for kind, limit, later in zip(
        ("requests", "input-tokens", "output-tokens"), limits, reset_in, strict=True
    ):
        when = datetime.fromtimestamp(WALL + later, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        out[f"{H}{kind}-limit"] = str(limit)
        out[f"{H}{kind}-remaining"] = str(remaining.get(kind, limit))
        out[f"{H}{kind}-reset"] = when
    return out


def usage(input_tokens=0, output_tokens=0, read=0, write=0):
    return SimpleNamespace(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cache_read_input_tokens=read,
        cache_creation_input_tokens=write,
    )


def req(chars=10_000, cached=0, max_tokens=16_000) -> MeteredRequest:
    return MeteredRequest(MODEL, chars, cached, max_tokens)


def learned(**remaining: int) -> ModelLimits:
    """Limits known from a first answer (the probe)."""
    limits = ModelLimits(MODEL, 0.0)
    probe = req()
    assert limits.wait(probe, 0.0) == 0.0
    limits.take(probe, 0.0)
    limits.answered(probe, headers(remaining), usage(4_000, 400), 0.0, WALL)
    return limits


def test_headers_parse_as_the_docs_define_them():
    parsed = parse_headers(headers({"input-tokens": 150_000}, reset_in=(1, 15, 0)), WALL)
    assert parsed["input-tokens"].limit == 200_000
    assert parsed["input-tokens"].remaining == 150_000
    assert parsed["input-tokens"].reset_in == 15.0 and not parsed["input-tokens"].precise
    assert parse_headers({"anthropic-ratelimit-requests-limit": "x"}, WALL) == {}


def test_one_probe_until_the_first_answer_names_the_limits():
    limits = ModelLimits(MODEL, 0.0)
    first, second = req(), req()
    assert limits.wait(first, 0.0) == 0.0
    limits.take(first, 0.0)
    assert limits.wait(second, 0.1) is None  # waits for the probe's answer
    limits.answered(first, headers({"input-tokens": 196_000}), usage(4_000, 400), 2.0, WALL)
    assert limits.known and limits.limit("input-tokens") == 200_000
    assert limits.buckets["input-tokens"].level == 196_000  # the server's word
    assert limits.wait(second, 2.0) == 0.0


def test_a_request_waits_until_the_buckets_can_take_it_then_pays_what_it_used():
    limits = learned(**{"input-tokens": 10_000})
    big = req(chars=100_000)  # 0.4 tokens a character, as the probe was billed, + 10 %
    assert limits.estimate_input(big, 0.0) == 44_000
    wait = limits.wait(big, 0.0)
    assert wait == pytest.approx((44_000 - 10_000) * 60 / 200_000)
    limits.take(big, wait)
    limits.answered(big, headers({"input-tokens": 0}), usage(35_000, 2_000), wait + 2, WALL)
    # charged 44k up front, 35k used: 9k back, then lowered to the reported 0
    assert limits.buckets["input-tokens"].level == 0
    assert limits.charged["input-tokens"] == 4_000 + 35_000


def test_other_clients_spending_lower_our_buckets():
    limits = learned()
    one = req(chars=1_000)
    limits.take(one, 1.0)
    reported = {"input-tokens": 50_000, "requests": 10}
    limits.answered(one, headers(reported), usage(400, 100), 1.5, WALL)
    assert limits.buckets["input-tokens"].level == 50_000
    assert limits.buckets["requests"].level == 10


def test_a_429_gives_the_charge_back():
    limits = learned()
    one = req(chars=10_000)
    limits.take(one, 1.0)
    level = limits.buckets["input-tokens"].level
    limits.answered(one, {**headers({}), "retry-after": "3"}, None, 1.0, WALL)
    assert limits.buckets["input-tokens"].level == pytest.approx(level + 4_400)


def test_cache_reads_are_not_charged_while_the_cache_is_warm():
    limits = learned()
    hit = req(chars=12_000, cached=2_000)
    limits.take(hit, 1.0)
    limits.answered(hit, headers({}), usage(4_000, 400, read=800), 2.0, WALL)
    assert limits.estimate_input(hit, 3.0) == 4_400  # 10k uncached chars at 0.4, + 10 %
    assert limits.estimate_input(hit, 3.0 + 5 * 60) == 5_280  # gone cold: all of it


def test_the_cached_prefix_and_the_rest_have_their_own_tokens_per_character():
    """A rubric's prose is fewer tokens a character than a transcript: one ratio of the
    whole prompt would under-estimate the transcript alone, which is what a warm cache
    charges (a 429 at a low limit)."""
    limits = learned()
    first = req(chars=12_000, cached=6_000)
    limits.take(first, 1.0)
    # 6k chars of transcript billed 3,000 tokens (0.5), the 6k-char prefix 1,500 (0.25)
    limits.answered(first, headers({}), usage(3_000, 400, write=1_500), 2.0, WALL)
    hit = req(chars=16_000, cached=6_000)
    assert limits.estimate_input(hit, 3.0) == 5_500  # 10k chars at 0.5, + 10 %
    assert limits.estimate_input(hit, 3.0 + 5 * 60) == pytest.approx(7_150, abs=1)  # + 6k at 0.25


def test_the_refill_time_counts_from_when_the_response_came():
    limits = learned()
    one = req(chars=1_000)
    limits.take(one, 1.0)
    one.responded_at = 1.0
    stamp = datetime.fromtimestamp(WALL + 3.0, UTC).isoformat(timespec="milliseconds")
    scaled = {**headers({"input-tokens": 100_000}), f"{H}input-tokens-reset": stamp}
    # settled half a second after the headers came: `-reset` was 3 s away when they did
    limits.answered(one, scaled, usage(400, 100), 1.5, WALL + 0.5)
    assert limits.period == pytest.approx(6.0)


def test_the_refill_time_is_not_learned_from_a_deficit_within_the_rounding():
    limits = learned()
    one = req(chars=1_000)
    limits.take(one, 1.0)
    stamp = datetime.fromtimestamp(WALL + 0.6, UTC).isoformat(timespec="milliseconds")
    # 2,000 short of 20k: the thousands' rounding could make it 1,500 or 2,500 (±25 %)
    small = {**headers({"input-tokens": 18_000}, limits=(50, 20_000, 40_000))}
    small[f"{H}input-tokens-reset"] = stamp
    limits.answered(one, small, usage(400, 100), 1.5, WALL)
    assert limits.period == 60.0


def test_a_request_larger_than_the_whole_bucket_is_refused_not_queued():
    limits = learned()
    with pytest.raises(OverRateLimit, match="200,000 input tokens per minute"):
        limits.wait(req(chars=1_000_000), 1.0)


def test_max_tokens_above_the_whole_output_bucket_waits_for_a_full_one():
    limits = learned(**{"output-tokens": 40_000})
    assert limits.wait(req(max_tokens=64_000), 1.0) == 0.0


def test_no_rate_limit_headers_turn_pacing_off():
    limits = ModelLimits(MODEL, 0.0)
    probe = req()
    limits.take(probe, 0.0)
    limits.answered(probe, {"content-type": "application/json"}, usage(4_000, 400), 1.0, WALL)
    assert limits.unmetered and limits.wait(req(chars=10**9), 1.0) == 0.0


def test_the_refill_time_is_learned_from_precise_resets():
    limits = learned()
    for i in range(1):
        one = req(chars=1_000)
        limits.take(one, 1.0 + i)
        stamp = datetime.fromtimestamp(WALL + 3.0, UTC).isoformat(timespec="milliseconds")
        scaled = {**headers({"input-tokens": 100_000}), f"{H}input-tokens-reset": stamp}
        limits.answered(one, scaled, usage(400, 100), 1.5 + i, WALL)
    assert limits.period == pytest.approx(6.0)  # half the bucket refills in 3 s


def test_status_names_the_binding_limit():
    limits = learned()
    one = req(chars=100_000)
    limits.take(one, 1.0)
    limits.answered(one, headers({}), usage(180_000, 2_000), 2.0, WALL)
    status = limits.status(3.0)
    assert status is not None and status.binding == "input-tokens"
    assert status.text() == "input tokens 92% of 200k/min"


# --- the shared limiter with the real sender --------------------------------------------


PARAMS = {
    "model": MODEL,
    "max_tokens": 2_000,
    "system": [{"type": "text", "text": "rubric", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": "x" * 4_000}],
}


def paced_client(fake: FakeAnthropic, limiter: RateLimiter) -> anthropic.Anthropic:
    inner = httpx2.MockTransport(fake.handler)
    return anthropic.Anthropic(
        api_key="k",
        base_url="https://api.test",
        max_retries=0,
        http_client=limited_httpx2_client(limiter, inner=inner),
    )


def test_a_burst_stays_within_the_account_limits(fast_retry_waits):
    """24 calls from 8 threads at 10 requests a (fake) minute of 0.5 s: none answered 429."""
    n = 24
    replies = [message_response("ok", input_tokens=1_300, output_tokens=300) for _ in range(n)]
    fake = FakeAnthropic(replies, limits=Limits(10, 100_000, 50_000), time_scale=120)
    limiter = RateLimiter(max_in_flight=8)
    client = paced_client(fake, limiter)
    threads = [threading.Thread(target=send, args=(client, PARAMS)) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert fake.account is not None
    assert (fake.account.admitted, fake.account.refused) == (n, 0)
    assert limiter.learned_limits()[MODEL]["rpm"] == 10
    assert limiter.pacing_status() is not None


def test_a_request_too_large_for_the_account_becomes_a_rechunk():
    fake = FakeAnthropic(
        [message_response("ok", input_tokens=1_000)] * 2, limits=Limits(50, 3_000, 50_000)
    )
    client = paced_client(fake, RateLimiter())
    send(client, PARAMS)  # the probe: 4,006 characters billed 1,000 tokens
    big = {**PARAMS, "messages": [{"role": "user", "content": "x" * 20_000}]}
    with pytest.raises(anthropic.APIConnectionError) as caught:
        send(client, big)  # ~5,000 tokens at the learned ratio: more than the 3,000 bucket
    mapped = api_failure(caught.value, 1_000_000)
    assert isinstance(mapped, ContextWindowExceeded) and mapped.limit == 3_000
    assert "3,000 input tokens per minute" in str(mapped)
    assert len(fake.message_bodies) == 1  # the big one was never sent
    assert fake.account is not None and fake.account.refused == 0
