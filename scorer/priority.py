"""Which of a run's waiting API requests goes out first (lower first).

A backfill's judge requests queue for `--concurrency` slots (`jobs.ratelimit`). A chunked
session's chunk-notes calls must all return before its final call can go, so serving
notes calls first (the longest remaining chain first, as in Hu's list schedule) keeps
every slot busy until the end, where first-come order could leave a wave of slots idle
behind a few final calls. The judge marks its calls with `call_priority`; the limiter
reads the mark in the same thread.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

NOTES = 0
"""A chunk-notes (map) call: another call of its session waits for it."""
DEFAULT = 1
"""Any other call (a final or single scoring call, count_tokens, a batch poll)."""

_PRIORITY: ContextVar[int] = ContextVar("call_priority", default=DEFAULT)


@contextmanager
def call_priority(priority: int) -> Iterator[None]:
    """Requests made by this thread inside the block wait with `priority`."""
    token = _PRIORITY.set(priority)
    try:
        yield
    finally:
        _PRIORITY.reset(token)


def current() -> int:
    """The priority of a request made now, in this thread."""
    return _PRIORITY.get()
