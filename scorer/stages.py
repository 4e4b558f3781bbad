"""Stage reports from deep inside the scoring path, for whoever is watching (a spinner).

`score_session` and the judges call `report_stage("fetch")`, `report_stage("final")`, ...;
nothing happens unless a caller installed a listener with `watch_stages(callback)`. A
contextvar carries the listener, so the scoring code takes no extra parameter and
concurrent scorings (backfill threads) do not see each other's listener.

Worker threads do not inherit contextvars; code that fans out to a pool wraps its
worker with `counted_stage` in the calling thread, and the workers tick it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True)
class Stage:
    """One step of scoring a session.

    Attributes:
        name: `fetch`, `prepare`, `judge`, `chunk`, `final`, `store`.
        done: For counted stages (`chunk`): how many are finished.
        total: For counted stages: how many there are.
    """

    name: str
    done: int | None = None
    total: int | None = None

    def __str__(self) -> str:
        if self.total is None:
            return self.name
        return f"{self.name} {self.done}/{self.total}"


StageListener = Callable[[Stage], None]

_listener: ContextVar[StageListener | None] = ContextVar("scorer_stage_listener", default=None)


@contextmanager
def watch_stages(listener: StageListener | None) -> Iterator[None]:
    """Send every `report_stage` made in this context to `listener` (None: keep the
    listener already installed, if any)."""
    if listener is None:
        yield
        return
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def report_stage(name: str, done: int | None = None, total: int | None = None) -> None:
    """Tell the listener (if any) that scoring reached this stage; never raises."""
    listener = _listener.get()
    if listener is not None:
        _safe(listener, Stage(name, done, total))


def stage_counter(name: str, total: int) -> Callable[[], None]:
    """Report `name 0/total` now and return a thread-safe `tick()` for each one finished.

    Call it in the thread that holds the listener; the ticks may come from any thread.
    """
    listener = _listener.get()
    lock = threading.Lock()
    done = 0

    def tick() -> None:
        nonlocal done
        with lock:
            done += 1
            stage = Stage(name, done, total)
        if listener is not None:
            _safe(listener, stage)

    if listener is not None:
        _safe(listener, Stage(name, 0, total))
    return tick


def counted_stage(name: str, fn: Callable[[T], R], total: int) -> Callable[[T], R]:
    """`fn` wrapped to tick a `stage_counter(name, total)` after each call (for pool.map).

    Example:
        >>> pool.map(counted_stage("chunk", notes_for, len(chunks)), chunks)
    """
    tick = stage_counter(name, total)

    def run(item: T) -> R:
        result = fn(item)
        tick()
        return result

    return run


def _safe(listener: StageListener, stage: Stage) -> None:
    with suppress(Exception):  # a broken display must never break scoring
        listener(stage)
