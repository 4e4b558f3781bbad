"""Price arithmetic and the retry decision table."""

from __future__ import annotations

import anthropic
import httpx2
import pytest

from scorer.judge import retry
from scorer.judge.cost import ModelPrice, Pricing, cost_usd
from scorer.models import JudgeUsage

MILLION = 1_000_000


def test_sonnet_5_5_prices_per_million():
    assert cost_usd(JudgeUsage(input_tokens=MILLION), "claude-sonnet-5-5") == 2.0
    assert cost_usd(JudgeUsage(output_tokens=MILLION), "claude-sonnet-5-5") == 10.0
    assert cost_usd(JudgeUsage(cache_read_tokens=MILLION), "claude-sonnet-5-5") == 0.2
    assert cost_usd(JudgeUsage(cache_write_tokens=MILLION), "claude-sonnet-5-5") == 2.5


def test_mixed_usage_and_batch_discount():
    usage = JudgeUsage(
        input_tokens=10_000, output_tokens=2_000, cache_read_tokens=50_000, cache_write_tokens=4_000
    )
    full = (10_000 * 2 + 2_000 * 10 + 50_000 * 0.2 + 4_000 * 2.5) / MILLION
    assert cost_usd(usage, "claude-sonnet-5-5") == pytest.approx(full)
    assert cost_usd(usage, "claude-sonnet-5-5", batch=True) == pytest.approx(full / 2)


def test_unknown_and_dated_models():
    pricing = Pricing()
    assert pricing.is_estimated("claude-mystery") and not pricing.is_estimated(
        "claude-sonnet-5-5-20261001"
    )
    usage = JudgeUsage(output_tokens=MILLION)
    assert pricing.cost_usd(usage, "claude-mystery") == 10.0
    assert pricing.cost_usd(usage, "claude-sonnet-4-5-20250929") == 15.0
    custom = Pricing(
        models={"m": ModelPrice(input=1, output=1, cache_read=0, cache_write=7)}, fallback_model="m"
    )
    assert custom.cost_usd(JudgeUsage(cache_write_tokens=MILLION), "m") == 7.0


def _status_error(status: int, headers: dict | None = None) -> anthropic.APIStatusError:
    request = httpx2.Request("POST", "https://api.test/v1/messages")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    client = anthropic.Anthropic(api_key="x")
    return client._make_status_error("boom", body=None, response=response)


@pytest.mark.parametrize(
    ("status", "decision"),
    [
        (429, "rate_limited"),
        (529, "transient"),
        (500, "transient"),
        (502, "transient"),
        (408, "transient"),
        (400, "fatal"),
        (401, "fatal"),
        (403, "fatal"),
        (404, "fatal"),
        (413, "fatal"),
    ],
)
def test_classify_status(status, decision):
    assert retry.classify(_status_error(status)).kind == decision


def test_classify_network_and_other_errors():
    request = httpx2.Request("POST", "https://api.test")
    assert retry.classify(anthropic.APITimeoutError(request)).kind == "transient"
    assert retry.classify(anthropic.APIConnectionError(request=request)).kind == "transient"
    assert retry.classify(ValueError("x")).kind == "fatal"


def test_retry_after_headers():
    assert retry.retry_after_seconds(_status_error(429, {"retry-after": "3"})) == 3.0
    assert retry.retry_after_seconds(_status_error(429, {"retry-after-ms": "1500"})) == 1.5
    assert (
        retry.retry_after_seconds(_status_error(429, {"retry-after": "86400"}))
        == retry.MAX_RETRY_AFTER
    )
    # An HTTP date is honoured too (one parser for every client): past means now.
    assert (
        retry.retry_after_seconds(
            _status_error(429, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})
        )
        == 0.0
    )
    assert retry.retry_after_seconds(_status_error(429, {"retry-after": "soon"})) is None
    assert retry.retry_after_seconds(_status_error(500)) is None


def test_fatal_errors_are_not_retried(fast_retry_waits):
    calls = []

    def fail():
        calls.append(1)
        raise _status_error(400)

    with pytest.raises(anthropic.BadRequestError):
        retry.call_with_retries(fail)
    assert len(calls) == 1 and fast_retry_waits == []


def test_backoff_grows_and_stops_after_max_attempts(fast_retry_waits, monkeypatch):
    monkeypatch.setattr(retry, "_backoff", lambda state: 2.0**state.attempt_number)
    with pytest.raises(anthropic.InternalServerError):
        retry.call_with_retries(lambda: (_ for _ in ()).throw(_status_error(500)), attempts=4)
    assert fast_retry_waits == [2.0, 4.0, 8.0]
    monkeypatch.setattr(retry, "WAIT_MULTIPLIER", 0)
    fast_retry_waits.clear()
    with pytest.raises(anthropic.InternalServerError):
        retry.call_with_retries(lambda: (_ for _ in ()).throw(_status_error(500)), attempts=2)
    assert fast_retry_waits == [0.0]


def test_price_table_from_toml_overrides_and_extends(tmp_path, monkeypatch):
    from scorer.errors import ConfigError
    from scorer.judge.cost import load_pricing
    from scorer.models import JudgeUsage

    table = tmp_path / "prices.toml"
    table.write_text(
        "batch_multiplier = 0.4\n"
        "[models.claude-sonnet-5-5]\ninput = 4.0\noutput = 20.0\ncache_read = 0.4\n"
        "[models.my-model]\ninput = 1.0\noutput = 1.0\ncache_read = 0.1\n"
    )
    monkeypatch.setenv("SCORER_PRICES", str(table))
    from scorer.judge.config import JudgeConfig
    from scorer.settings import get_settings

    pricing = JudgeConfig.from_settings(get_settings()).pricing  # SCORER_PRICES at the edge
    assert load_pricing(table) == pricing
    usage = JudgeUsage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert pricing.cost_usd(usage, "claude-sonnet-5-5") == 24.0
    assert pricing.cost_usd(usage, "claude-sonnet-5-5", batch=True) == 9.6
    assert pricing.cost_usd(usage, "my-model") == 2.0
    assert not pricing.is_estimated("claude-sonnet-4-5")  # built-in entries kept
    table.write_text("models = 3\n")
    with pytest.raises(ConfigError):
        load_pricing(table)
