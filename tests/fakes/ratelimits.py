"""Rate limits that meter like the Messages API's, for the Anthropic fakes.

    account = MeteredAccount(Limits(rpm=50, itpm=200_000, otpm=40_000))
    grant = account.admit("claude-sonnet-5-5", input_tokens=12_000, max_tokens=16_000)
    if isinstance(grant, Refused): answer 429 with grant.headers (retry-after and all)
    ... reply ...
    headers = account.finish(grant, output_tokens=2_400)   # on the 200 response

What the real API does (platform.claude.com/docs/en/api/rate-limits, checked for this
module), reproduced here:
    three token buckets per model: requests (RPM), input tokens (ITPM) and output tokens
        (OTPM); each holds one minute of its limit, starts full and refills continuously
    a request is admitted only when every bucket can take its estimate: one request, its
        input tokens (`input_tokens + cache_creation_input_tokens`: cache reads are not
        charged) and `max_tokens` of output; when the request ends the output charge is
        adjusted to the tokens the reply used
    every response carries `anthropic-ratelimit-{requests,input-tokens,output-tokens}-
        {limit,remaining,reset}` and `anthropic-ratelimit-tokens-*` (the most restrictive
        token limit); token `-remaining` is rounded to the nearest thousand; `-reset` is the
        RFC 3339 time at which the bucket is full again
    over a limit: 429 `rate_limit_error` naming the limit, with `retry-after` (seconds until
        the bucket can take the request)

Two assumptions where the docs are silent: a `max_tokens` above the whole OTPM reserves
the whole bucket (it waits for a full bucket rather than never running), and an input
larger than the whole ITPM is refused every time (`retry-after` a full minute).

`time_scale` speeds the fake's clock up: its minute lasts `60 / time_scale` seconds, so a
benchmark of 20 limit-minutes runs in 2 real minutes at scale 10. Scaled, `-reset` carries
milliseconds and `retry-after` a fraction (the real API's whole seconds would be too coarse
for a 6-second minute); at scale 1 they are whole seconds like the real API's.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

HEADER = "anthropic-ratelimit-"
KINDS = ("requests", "input-tokens", "output-tokens")


@dataclass(frozen=True)
class Limits:
    """Requests, input tokens and output tokens per minute of one model."""

    rpm: int
    itpm: int
    otpm: int

    def of(self, kind: str) -> int:
        return {"requests": self.rpm, "input-tokens": self.itpm, "output-tokens": self.otpm}[kind]


@dataclass
class Bucket:
    """One token bucket: `capacity` tokens, refilled at `capacity / period` per second."""

    capacity: float
    period: float
    level: float
    last: float

    def refill(self, now: float) -> None:
        rate = self.capacity / self.period
        self.level = min(self.capacity, self.level + (now - self.last) * rate)
        self.last = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds `amount` (inf when it never can)."""
        if amount > self.capacity:
            return math.inf
        return max(0.0, (amount - self.level) * self.period / self.capacity)

    def full_in(self) -> float:
        return (self.capacity - self.level) * self.period / self.capacity


@dataclass
class Grant:
    """An admitted request: what it was charged up front."""

    model: str
    input_tokens: int
    output_reserved: int


@dataclass
class Refused:
    """A 429: which limit, how long to wait, and the headers to send."""

    limit: str
    retry_after: float
    headers: dict[str, str]

    @property
    def message(self) -> str:
        return f"This request would exceed your organization's rate limit of {self.limit}"


@dataclass
class MeteredAccount:
    """The organisation's buckets per model (thread-safe).

    Attributes:
        admitted / refused: Requests let through / answered 429.
        charged_input / charged_output: Tokens charged once requests finished.
    """

    limits: Limits
    time_scale: float = 1.0
    clock: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    admitted: int = 0
    refused: int = 0
    charged_input: int = 0
    charged_output: int = 0
    _buckets: dict[str, dict[str, Bucket]] = field(default_factory=dict, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    @property
    def period(self) -> float:
        """Seconds the fake's minute lasts."""
        return 60.0 / self.time_scale

    def reset(self) -> None:
        """Full buckets and zero counters (between benchmark runs)."""
        with self._lock:
            self._buckets.clear()
            self.admitted = self.refused = self.charged_input = self.charged_output = 0

    def admit(self, model: str, *, input_tokens: int, max_tokens: int) -> Grant | Refused:
        """Charge a request's estimate, or refuse it (nothing charged)."""
        with self._lock:
            buckets = self._refilled(model)
            need = {
                "requests": 1,
                "input-tokens": input_tokens,
                "output-tokens": min(max_tokens, self.limits.otpm),
            }
            waits = {k: buckets[k].wait_for(need[k]) for k in KINDS}
            worst = max(KINDS, key=waits.__getitem__)
            if waits[worst] > 0:
                self.refused += 1
                wait = self.period if math.isinf(waits[worst]) else waits[worst]
                headers = self._headers(buckets)
                headers["retry-after"] = self._seconds(wait)
                name = {"requests": "requests", "input-tokens": "input tokens"}.get(
                    worst, "output tokens"
                )
                limit = f"{self.limits.of(worst):,} {name} per minute"
                return Refused(limit, wait, headers)
            for kind in KINDS:
                buckets[kind].level -= need[kind]
            self.admitted += 1
            return Grant(model, input_tokens, need["output-tokens"])

    def finish(self, grant: Grant, *, output_tokens: int) -> dict[str, str]:
        """Adjust the output charge to what the reply used; the headers of the response."""
        with self._lock:
            buckets = self._refilled(grant.model)
            out = buckets["output-tokens"]
            out.level = min(out.capacity, out.level + grant.output_reserved - output_tokens)
            self.charged_input += grant.input_tokens
            self.charged_output += output_tokens
            return self._headers(buckets)

    def headers(self, model: str) -> dict[str, str]:
        """The rate-limit headers of a response that charged nothing."""
        with self._lock:
            return self._headers(self._refilled(model))

    def _refilled(self, model: str) -> dict[str, Bucket]:
        now = self.clock()
        if model not in self._buckets:
            self._buckets[model] = {
                k: Bucket(self.limits.of(k), self.period, self.limits.of(k), now) for k in KINDS
            }
        buckets = self._buckets[model]
        for bucket in buckets.values():
            bucket.refill(now)
        return buckets

    def _headers(self, buckets: dict[str, Bucket]) -> dict[str, str]:
        now = self.wall()
        out: dict[str, str] = {}
        for kind, bucket in buckets.items():
            left = max(0.0, bucket.level)
            remaining = math.floor(left) if kind == "requests" else round(left / 1000) * 1000
            out[f"{HEADER}{kind}-limit"] = str(int(bucket.capacity))
            out[f"{HEADER}{kind}-remaining"] = str(int(remaining))
            out[f"{HEADER}{kind}-reset"] = self._stamp(now + bucket.full_in())
        tight = min(("input-tokens", "output-tokens"), key=lambda k: buckets[k].level)
        for part in ("limit", "remaining", "reset"):
            out[f"{HEADER}tokens-{part}"] = out[f"{HEADER}{tight}-{part}"]
        return out

    def _stamp(self, when: float) -> str:
        """RFC 3339 in UTC: whole seconds (rounded up) at scale 1, milliseconds when scaled."""
        if self.time_scale == 1:
            return datetime.fromtimestamp(math.ceil(when), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        stamp = datetime.fromtimestamp(when, UTC).isoformat(timespec="milliseconds")
        return stamp.replace("+00:00", "Z")

    def _seconds(self, wait: float) -> str:
        return str(math.ceil(wait)) if self.time_scale == 1 else f"{wait:.3f}"
