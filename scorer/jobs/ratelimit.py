"""One shared rate limiter per API, and an HTTP transport wrapper that applies it.

Every worker that talks to an API goes through the same `RateLimiter`: a token bucket
(steady requests/second with a burst) plus a shared pause. When any worker sees a 429
(or 529 "overloaded"), the wrapper reads `retry-after` and pauses the whole bucket, so
the other workers stop hammering the API too instead of each discovering the limit on
its own. The SDKs' own retry loops then re-send the request after the pause.

The limiter can also cap how many requests are in flight at once (`max_in_flight`): one
permit per HTTP request, taken before the request is sent and given back when its response
headers arrive. Backfill sets it to `--concurrency`, so the judge's chunk-notes map calls
and final calls of every session share the same K slots. A thread that waits for its own
map calls holds no permit, so sessions can never deadlock each other.

Messages calls are also paced at the account's rate limits. The judge's sender marks each
call (`scorer.pacing.metered`); the limiter admits a marked request only when our copy of
the account's requests / input-tokens / output-tokens buckets for its model can take it
(`account_limits.ModelLimits`: learned from the first response, corrected by every one
after it), in the same queue as the permits. So `max_in_flight` is a cap, not the
throttle: at a low limit the buckets decide, whatever the cap. A request larger than the
whole input bucket raises `OverRateLimit` instead of waiting forever. Unmarked requests
(count_tokens, Message Batches, Langfuse) are not paced: they have their own limits.

A stopped run (the `StopSignal` the limiter `watch`es, set on Ctrl-C) sends nothing more
through the limiter: a request still waiting for its permit, its token or the end of a
pause raises `RunStopped` instead, so the run ends when the requests already on the wire
come back rather than after every queued one has been sent and answered.

The wrapper sits at the transport seam, which both httpx (Langfuse) and httpx2
(anthropic 2.x) expose as `handle_request`, so no SDK code is patched.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from scorer import pacing, priority

if TYPE_CHECKING:
    import httpx
    import httpx2
from scorer.errors import RunStopped
from scorer.jobs.account_limits import ModelLimits, PacingStatus
from scorer.pacing import MeteredRequest
from scorer.retry import parse_retry_after

PAUSE_STATUSES = frozenset({429, 529})
STOP_POLL = 0.1
"""Seconds between checks of `stop` while a request waits out a pause or a token."""


class StopSignal(threading.Event):
    """A `threading.Event` that also runs callbacks when it is set (a run's stop: the
    limiters wake the requests waiting for a permit, see `RateLimiter.watch`)."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []

    def on_set(self, callback: Callable[[], None]) -> None:
        """Run `callback` when the signal is set (at once if it already is)."""
        self._callbacks.append(callback)
        if self.is_set():
            callback()

    def set(self) -> None:
        super().set()
        for callback in list(self._callbacks):
            callback()


DEFAULT_PAUSE = 5.0
MAX_PAUSE = 300.0


def retry_after_seconds(headers: Any, default: float = DEFAULT_PAUSE) -> float:
    """The bucket pause for a 429/529: `parse_retry_after`, else `default`, within
    `[0, MAX_PAUSE]`.

    Args:
        headers: A mapping with case-insensitive `.get` (httpx/httpx2 headers or a dict).
        default: Used when no usable header is present.
    """
    seconds = parse_retry_after(headers)
    return _clamp(default if seconds is None else seconds)


def _clamp(seconds: float) -> float:
    return max(0.0, min(MAX_PAUSE, seconds))


@dataclass
class RateLimiter:
    """A thread-safe token bucket with a shared pause.

    Args:
        rate: Requests per second allowed on average (`0` or less: unlimited).
        burst: How many requests may go out back to back.
        clock: Monotonic clock (tests inject a fake one).
        sleep: Sleep function (tests inject a fake one).
        max_in_flight: Most requests in flight at once (`0` or less: no cap).
        wall: Wall clock (the API's `-reset` headers are times of day).
        pace: Pace metered Messages calls at the account's limits (False: only the
            permits, the request rate and the 429 pauses apply).
    """

    rate: float = 0.0
    burst: int = 10
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    max_in_flight: int = 0
    wall: Callable[[], float] = time.time
    pace: bool = True
    pauses: int = 0
    """How many times the limiter was paused by a 429/529 (reported in the summary)."""
    peak_in_flight: int = 0
    """The most requests this limiter saw in flight at one time."""
    _stop: StopSignal | None = field(default=None, init=False)
    """The run's stop, once `watch`ed: requests not yet sent then raise `RunStopped`."""
    _in_flight: int = field(default=0, init=False)
    _waiting: list[tuple[int, int]] = field(default_factory=list, init=False)
    """Heap of (priority, arrival) tickets of requests waiting for a permit."""
    _arrivals: Iterator[int] = field(default_factory=itertools.count, init=False)
    _slots: threading.Condition = field(default_factory=threading.Condition, init=False)
    _tokens: float = field(default=0.0, init=False)
    _last: float = field(default=0.0, init=False)
    _paused_until: float = field(default=0.0, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _models: dict[str, ModelLimits] = field(default_factory=dict, init=False)
    """The account's limits per model, as learned (guarded by `_slots`)."""

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)
        self._last = self.clock()

    def watch(self, stop: StopSignal) -> None:
        """Stop sending when `stop` is set: waiting requests wake up and raise `RunStopped`."""
        self._stop = stop
        stop.on_set(self._wake_all)

    def _wake_all(self) -> None:
        with self._slots:
            self._slots.notify_all()

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one in-flight permit (blocks while `max_in_flight` requests are out), and
        for a metered Messages call wait until the account's buckets can take it.

        Waiting requests get the permits in order of `priority.current()` (chunk-notes
        calls first), then of arrival.

        Raises:
            RunStopped: `stop` is set, or gets set while waiting for the permit.
            OverRateLimit: The metered request can never fit the account's input bucket.
        """
        self._check_stop()
        request = pacing.current() if self.pace else None
        if request is not None and request.listener is not None:
            request = None  # already admitted: a second HTTP request of the same call
        with self._slots:
            if self.max_in_flight > 0 or request is not None:
                self._wait_turn((priority.current(), next(self._arrivals)), request)
            self._in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._slots:
                self._in_flight -= 1
                self._slots.notify_all()

    def _wait_turn(self, ticket: tuple[int, int], request: MeteredRequest | None) -> None:
        """Wait (holding `_slots`) until `ticket` is first in line, a permit is free and the
        buckets can take `request`; then charge it."""
        heapq.heappush(self._waiting, ticket)
        try:
            while True:
                self._check_stop()
                if self._waiting[0] == ticket and not self._full():
                    wait = 0.0 if request is None else self._pace_wait(request)
                    if wait == 0.0:
                        break
                    self._slots.wait(timeout=None if wait is None else max(wait, 0.001))
                else:
                    self._slots.wait()
            if request is not None:
                self._models[request.model].take(request, self.clock())
                request.listener = self
        except BaseException:
            self._waiting.remove(ticket)
            heapq.heapify(self._waiting)
            self._slots.notify_all()  # the next in line may be free to go now
            raise
        heapq.heappop(self._waiting)
        self._slots.notify_all()  # another permit may be free for the new head

    def _full(self) -> bool:
        return 0 < self.max_in_flight <= self._in_flight

    def _pace_wait(self, request: MeteredRequest) -> float | None:
        now = self.clock()
        limits = self._models.get(request.model)
        if limits is None:
            limits = self._models[request.model] = ModelLimits(request.model, now)
        return limits.wait(request, now)

    def answered(
        self, request: MeteredRequest, headers: Mapping[str, str] | None, usage: Any
    ) -> None:
        """Settle an admitted request from its response (`pacing.Listener`)."""
        with self._slots:
            self._models[request.model].answered(request, headers, usage, self.clock(), self.wall())
            self._slots.notify_all()

    def pacing_status(self) -> PacingStatus | None:
        """The most-used account limit of the busiest model (None: nothing learned yet)."""
        with self._slots:
            now = self.clock()
            found = [s for m in self._models.values() if (s := m.status(now)) is not None]
        return max(found, key=lambda s: s.used, default=None)

    def learned_limits(self) -> dict[str, dict[str, float]]:
        """The account's limits learned this run, by model (for `jobs.forecast`)."""
        with self._slots:
            found = {name: m.learned() for name, m in self._models.items()}
        return {name: limits for name, limits in found.items() if limits}

    def acquire(self) -> None:
        """Block until a request may go out (pause over and a token available).

        Raises:
            RunStopped: `stop` is set before the wait is over.
        """
        while True:
            self._check_stop()
            wait = self._try_take()
            if wait <= 0:
                return
            self.sleep(min(wait, STOP_POLL) if self._stop is not None else wait)

    def _check_stop(self) -> None:
        if self._stop is not None and self._stop.is_set():
            raise RunStopped("run stopped before this request was sent")

    def _try_take(self) -> float:
        with self._lock:
            now = self.clock()
            if now < self._paused_until:
                return self._paused_until - now
            if self.rate <= 0:
                return 0.0
            self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
            self._last = now
            if self._tokens >= 1:
                self._tokens -= 1
                return 0.0
            # Floor the wait: a float-dust deficit must not spin on a tiny sleep.
            return max((1 - self._tokens) / self.rate, 0.001)

    def pause(self, seconds: float) -> None:
        """Hold every worker of this API for `seconds` (extends, never shortens, a pause)."""
        with self._lock:
            # Every 429/529 counts, even one inside a longer pause already running: the
            # count is how often the API pushed back, not how the pauses overlapped.
            self.pauses += 1
            self._paused_until = max(self._paused_until, self.clock() + seconds)

    @property
    def paused_for(self) -> float:
        """Seconds left in the current pause (0 when not paused)."""
        with self._lock:
            return max(0.0, self._paused_until - self.clock())


class LimitedTransport:
    """Wraps an httpx/httpx2 transport: a permit and a token per request, pause on 429/529.

    Works with both libraries because it only relies on `handle_request(request)`
    returning a response with `.status_code` and `.headers`, and on `close()`.

    Args:
        inner: The real transport (e.g. `httpx2.HTTPTransport()` or a MockTransport).
        limiter: The limiter shared by every client of this API.
    """

    def __init__(self, inner: Any, limiter: RateLimiter) -> None:
        self.inner = inner
        self.limiter = limiter

    def handle_request(self, request: Any) -> Any:
        # The permit covers the wait for the response headers, which is where a judge
        # call spends its time; the small body is read after it is given back, so an
        # unread or abandoned response can never leak a permit.
        with self.limiter.slot():
            self.limiter.acquire()
            response = self.inner.handle_request(request)
        metered = pacing.current()
        if metered is not None and metered.listener is self.limiter:
            metered.responded_at = self.limiter.clock()  # `-remaining` is as of now
        if response.status_code in PAUSE_STATUSES:
            self.limiter.pause(retry_after_seconds(response.headers))
        return response

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> LimitedTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def limited_transport_class(base: type) -> type:
    """A `LimitedTransport` that also subclasses `base` (httpx clients type-check it)."""

    class _Limited(LimitedTransport, base):
        def __init__(self, inner: Any, limiter: RateLimiter) -> None:
            LimitedTransport.__init__(self, inner, limiter)

    _Limited.__name__ = f"Limited{base.__name__}"
    return _Limited


def limited_httpx2_client(
    limiter: RateLimiter, inner: httpx2.BaseTransport | None = None, **kwargs: Any
) -> httpx2.Client:
    """An `httpx2.Client` for the anthropic SDK whose requests go through `limiter`."""
    import httpx2

    cls = limited_transport_class(httpx2.BaseTransport)
    transport = cls(inner or httpx2.HTTPTransport(), limiter)
    return httpx2.Client(transport=transport, **kwargs)


def limited_httpx_client(
    limiter: RateLimiter, inner: httpx.BaseTransport | None = None, **kwargs: Any
) -> httpx.Client:
    """An `httpx.Client` for the Langfuse SDK whose requests go through `limiter`."""
    import httpx

    cls = limited_transport_class(httpx.BaseTransport)
    transport = cls(inner or httpx.HTTPTransport(), limiter)
    return httpx.Client(transport=transport, **kwargs)
