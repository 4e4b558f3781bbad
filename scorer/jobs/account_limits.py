"""The account's rate limits for one model, as a run learns them from the API's responses.

The Messages API meters each model with three token buckets: requests, input tokens and
output tokens per minute (RPM / ITPM / OTPM). Each holds one minute of its limit and
refills continuously; a request is admitted only when every bucket can take it: one
request, its input tokens (cache reads are not charged) and its `max_tokens` of output
(adjusted to the tokens used when the reply ends). Every response says where the buckets
stand (`anthropic-ratelimit-{requests,input-tokens,output-tokens}-{limit,remaining,reset}`).

`ModelLimits` keeps a copy of those buckets on our side, so a request goes out only when
the account can take it:
    unknown limits   one request at a time (the probe) until a response names them and
                     a reply's usage tells how many tokens a character of prompt is
    admission        charge 1 request, the estimated input tokens and `max_tokens`
    answer           the charges become what the response used (`usage`); each bucket is
                     lowered to the `-remaining` the response reports (other clients of the
                     same organisation spend from it too); `-reset` (when the bucket is full
                     again) gives the refill time of a minute
    no headers       (a proxy that strips them) pacing is off; 429s still pause the run

Input tokens are estimated from characters, at the highest tokens-per-character ratio of
the recent responses (over-estimating costs a moment's wait, under-estimating a 429); the
cached system prompt is left out while the prompt cache is warm. The ratio is learned for
the cached prefix and for the rest apart (`usage` splits them: cache tokens vs
`input_tokens`): prose of a rubric runs ~3.5 characters a token, a transcript's JSON and
code ~2, so one ratio of the whole prompt under-estimates the transcript alone, which is
what a warm cache charges. Not thread-safe: the owning `RateLimiter` calls it under its
lock.
"""

from __future__ import annotations

import math
import statistics
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scorer.errors import OverRateLimit
from scorer.pacing import MeteredRequest

KINDS = ("requests", "input-tokens", "output-tokens")
HEADER = "anthropic-ratelimit-"
LABELS = {"requests": "requests", "input-tokens": "input tokens", "output-tokens": "output tokens"}
MINUTE = 60.0
PRIOR_TOKENS_PER_CHAR = 0.4
"""Before any response: 2.5 characters a token (transcripts run ~3; over-estimating is cheap)."""
RATIO_WINDOW = 32
MARGIN = 0.05
"""Added to the input estimate (twice this until a few replies have been seen)."""
BINDS = 0.8
"""A limit used this much over the last minute paces the run (the progress ETA follows it)."""
TOKEN_ROUNDING = 1000
"""The API rounds token `-remaining` to the nearest thousand (requests are exact)."""
PERIOD_ERROR = 0.05
"""Learn the refill time only from reports whose rounding moves it by at most this much."""
CACHE_MINUTES = 4.0
"""Treat the prompt cache as warm this many minutes after a response used it (it lives 5)."""


@dataclass(frozen=True)
class HeaderLimit:
    """One limit as a response reports it."""

    limit: int
    remaining: int | None
    reset_in: float | None
    """Seconds until the bucket is full again (from the RFC 3339 `-reset`)."""
    precise: bool
    """Whether `-reset` had fractions of a second (the real API sends whole seconds)."""


def parse_headers(headers: Mapping[str, str], wall: float) -> dict[str, HeaderLimit]:
    """The rate limits a response reports, by kind (absent or malformed ones left out)."""
    found: dict[str, HeaderLimit] = {}
    for kind in KINDS:
        try:
            limit = int(headers[f"{HEADER}{kind}-limit"])
        except (KeyError, TypeError, ValueError):
            continue
        remaining = _int(headers.get(f"{HEADER}{kind}-remaining"))
        reset, precise = _reset_in(headers.get(f"{HEADER}{kind}-reset"), wall)
        if limit > 0:
            found[kind] = HeaderLimit(limit, remaining, reset, precise)
    return found


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _reset_in(value: str | None, wall: float) -> tuple[float | None, bool]:
    if not value:
        return None, False
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None, False
    if when.tzinfo is None:
        return None, False
    return max(0.0, when.timestamp() - wall), "." in value  # fractions of a second


@dataclass
class Bucket:
    """Our copy of one of the account's buckets: `capacity` refilled per `period`."""

    capacity: float
    level: float
    last: float

    def refill(self, now: float, period: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.last) * self.capacity / period)
        self.last = now

    def wait(self, amount: float, period: float) -> float:
        """Seconds until the bucket holds `amount`."""
        return max(0.0, (amount - self.level) * period / self.capacity)


@dataclass(frozen=True)
class PacingStatus:
    """Where a model's limits stand, for the progress display."""

    binding: str
    """The limit most used over the last minute (`input-tokens`, ...)."""
    used: float
    """Its share used over the last minute (0..1)."""
    limit: int
    charged: dict[str, int]
    """Tokens (and requests) charged so far, by kind."""
    period: float = MINUTE
    """Seconds the bucket takes to refill (a minute on the real API)."""

    def text(self) -> str:
        """`input tokens 92% of 450k/min`."""
        return f"{LABELS[self.binding]} {self.used:.0%} of {_short(self.limit)}/min"

    def eta(self, done: int, left: int) -> float | None:
        """Seconds until `left` more sessions are through the binding limit, at what the
        `done` ones were charged on average (None: nothing to go on, or it does not bind)."""
        charged = self.charged.get(self.binding, 0)
        if done <= 0 or charged <= 0 or self.used < BINDS:
            return None
        return left * charged / done * self.period / self.limit


def _short(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:g}M"
    return f"{n / 1000:g}k" if n >= 1000 else str(n)


@dataclass
class ModelLimits:
    """The rate limits of one model on our side (see the module doc)."""

    model: str
    now: float
    buckets: dict[str, Bucket] = field(default_factory=dict)
    period: float = MINUTE
    """Seconds a bucket takes to refill its whole capacity (learned from `-reset`)."""
    unmetered: bool = False
    """Responses carry no rate-limit headers: admit without pacing."""
    probing: bool = False
    ratios: deque[float] = field(default_factory=lambda: deque(maxlen=RATIO_WINDOW))
    """Tokens per character of the prompt outside the cached prefix."""
    prefix_ratios: deque[float] = field(default_factory=lambda: deque(maxlen=RATIO_WINDOW))
    """Tokens per character of the cached prefix (when the API cached it)."""
    cache_warm_until: float = 0.0
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=64))
    charged: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    _recent: deque[tuple[float, str, int]] = field(default_factory=deque)
    _periods: deque[float] = field(default_factory=lambda: deque(maxlen=15))

    @property
    def known(self) -> bool:
        return self.unmetered or len(self.buckets) == len(KINDS)

    def limit(self, kind: str) -> int | None:
        bucket = self.buckets.get(kind)
        return int(bucket.capacity) if bucket else None

    def estimate_input(self, request: MeteredRequest, now: float) -> int:
        """Input tokens the request will be charged (cache reads left out while warm), with
        a margin: a little too many costs a moment's wait, too few a 429."""
        ratio = max(self.ratios, default=PRIOR_TOKENS_PER_CHAR)
        margin = MARGIN if len(self.ratios) >= RATIO_WINDOW // 4 else 2 * MARGIN
        cached = min(request.cached_chars, request.chars)
        tokens = (request.chars - cached) * ratio
        if now >= self.cache_warm_until:  # cold: the prefix is charged too
            tokens += cached * max(self.prefix_ratios, default=ratio)
        return math.ceil(tokens * (1 + margin))

    def wait(self, request: MeteredRequest, now: float) -> float | None:
        """Seconds until `request` may go (0: now), or None: wait for the probe's answer.

        Raises:
            OverRateLimit: Its input can never fit the input bucket.
        """
        if self.unmetered:
            return 0.0
        if not (self.known and self.ratios):
            if self.known:
                self._need(request, now)  # too large even at the prior ratio: say so now
            return None if self.probing else 0.0
        need = self._need(request, now)
        waits = []
        for kind, amount in need.items():
            bucket = self.buckets[kind]
            bucket.refill(now, self.period)
            waits.append(bucket.wait(amount, self.period))
        return max(waits)

    def _need(self, request: MeteredRequest, now: float) -> dict[str, float]:
        tokens = self.estimate_input(request, now)
        capacity = self.buckets["input-tokens"].capacity
        if tokens > capacity:
            raise OverRateLimit(tokens, int(capacity), self.model)
        out = min(request.max_tokens, self.buckets["output-tokens"].capacity)
        return {"requests": 1.0, "input-tokens": float(tokens), "output-tokens": float(out)}

    def take(self, request: MeteredRequest, now: float) -> None:
        """Charge an admitted request (a probe is charged by the server's first answer)."""
        request.admitted_at = now
        if self.unmetered:
            return
        if not (self.known and self.ratios):
            self.probing = request.probe = True
        if not self.known:
            return
        request.charge = self._need(request, now)
        for kind, amount in request.charge.items():
            self.buckets[kind].level -= amount

    def answered(
        self,
        request: MeteredRequest,
        headers: Mapping[str, str] | None,
        usage: Any,
        now: float,
        wall: float,
    ) -> None:
        """Settle a request's charges from its response (see the module doc)."""
        if request.probe:
            self.probing = False  # the probe's answer: the next request may go
        used = _used(usage)
        if used is not None:
            self._learn_usage(request, usage, used, now)
        if headers is None:  # no response at all: keep the charge (it may have been taken)
            return
        at = request.responded_at if request.responded_at is not None else now
        at = min(at, now)
        limits = parse_headers(headers, wall - (now - at))  # `-reset` is as of the response
        if not limits and not self.buckets:
            self.unmetered = True
            return
        for kind, amount in request.charge.items():  # what the API took instead
            if kind in self.buckets:
                actual = used.get(kind, 0) if used is not None else 0
                self.buckets[kind].level += amount - actual
        for kind, reported in limits.items():
            self._correct(kind, reported, now, at)

    def _learn_usage(
        self, request: MeteredRequest, usage: Any, used: dict[str, int], now: float
    ) -> None:
        cached = (getattr(usage, "cache_read_input_tokens", 0) or 0) + (
            getattr(usage, "cache_creation_input_tokens", 0) or 0
        )
        rest_chars = request.chars
        if cached and 0 < request.cached_chars < request.chars:
            # `input_tokens` is what follows the cached prefix: learn the two apart
            self.prefix_ratios.append(cached / request.cached_chars)
            rest_chars -= request.cached_chars
            rest = getattr(usage, "input_tokens", 0) or 0
        else:
            rest = (getattr(usage, "input_tokens", 0) or 0) + cached
        if rest_chars > 0:
            self.ratios.append(rest / rest_chars)
        if cached:
            self.cache_warm_until = now + CACHE_MINUTES * self.period
        self.latencies.append(now - request.admitted_at)
        for kind, amount in used.items():
            self.charged[kind] += amount
            self._recent.append((now, kind, amount))

    def _correct(self, kind: str, reported: HeaderLimit, now: float, at: float) -> None:
        """Trust the server's `-remaining` (as of `at`, refilled since) when it is lower."""
        self._learn_period(kind, reported)
        bucket = self.buckets.get(kind)
        if bucket is None:
            level = reported.limit if reported.remaining is None else reported.remaining
            self.buckets[kind] = Bucket(reported.limit, level, at)
            self.buckets[kind].refill(now, self.period)
            return
        bucket.refill(now, self.period)
        bucket.capacity = reported.limit
        if reported.remaining is not None:
            since = (now - at) * reported.limit / self.period
            bucket.level = min(bucket.level, reported.remaining + since)

    def _learn_period(self, kind: str, reported: HeaderLimit) -> None:
        """The refill time of a whole bucket: `limit × reset_in ÷ (limit − remaining)`,
        from reports whose deficit and reset time are large against their rounding (token
        `-remaining` is ± half a thousand: at 20k ITPM a deficit of 2,000 could be 1,500)."""
        if reported.remaining is None or reported.reset_in is None:
            return
        deficit = reported.limit - reported.remaining
        resolution = 0.001 if reported.precise else 1.0
        rounding = TOKEN_ROUNDING / 2 if kind != "requests" else 0.5
        if (
            deficit < 0.1 * reported.limit
            or rounding > PERIOD_ERROR * deficit
            or reported.reset_in < 20 * resolution
        ):
            return
        self._periods.append(reported.limit * reported.reset_in / deficit)
        self.period = min(max(statistics.median(self._periods), 1.0), 2 * MINUTE)

    def status(self, now: float) -> PacingStatus | None:
        """The most-used limit over the last minute (None before the limits are known)."""
        if self.unmetered or not self.known:
            return None
        while self._recent and self._recent[0][0] < now - self.period:
            self._recent.popleft()
        recent = dict.fromkeys(KINDS, 0)
        for _, kind, amount in self._recent:
            recent[kind] += amount
        shares = {k: recent[k] / self.buckets[k].capacity for k in KINDS}
        binding = max(KINDS, key=shares.__getitem__)
        limit = int(self.buckets[binding].capacity)
        used = min(shares[binding], 1.0)
        return PacingStatus(binding, used, limit, dict(self.charged), self.period)

    def learned(self) -> dict[str, float] | None:
        """What to remember for the next run's plan and forecast (None: nothing learned)."""
        if self.unmetered or not self.known:
            return None
        found: dict[str, float] = {
            "rpm": self.buckets["requests"].capacity,
            "itpm": self.buckets["input-tokens"].capacity,
            "otpm": self.buckets["output-tokens"].capacity,
        }
        found["period_s"] = round(self.period, 3)
        if self.latencies:
            found["latency_s"] = round(statistics.median(self.latencies), 3)
        return found


def _used(usage: Any) -> dict[str, int] | None:
    """What a reply was charged, by kind (cache reads are not charged)."""
    if usage is None:
        return None
    charged_input = (getattr(usage, "input_tokens", 0) or 0) + (
        getattr(usage, "cache_creation_input_tokens", 0) or 0
    )
    return {
        "requests": 1,
        "input-tokens": charged_input,
        "output-tokens": getattr(usage, "output_tokens", 0) or 0,
    }
