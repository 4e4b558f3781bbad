"""Pause Python's cyclic garbage collector during bulk builds of acyclic data.

Parsing a transcript allocates hundreds of thousands of dicts, lists and models in one go.
Each allocation burst triggers collections, and the full ones walk every live object,
so a 27 MB session paid for several full scans of its own parse tree (about a third of
prep's time). Decoded JSON and the models built from it form no reference cycles, so
nothing is lost by deferring collection to the end of the build: reference counting
frees everything as usual, and the collector runs once afterwards if it needs to.

Process-wide and thread-safe: nested or concurrent pauses (backfill workers) keep the
collector off until the last one ends, and it is only re-enabled if it was on before.
"""

from __future__ import annotations

import atexit
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import wraps
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_was_enabled = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector off inside the block (reference counting still frees)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def without_gc(func: Callable[P, R]) -> Callable[P, R]:
    """Decorator form of `gc_paused`."""

    @wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            return func(*args, **kwargs)

    return wrapper


def freeze_at_exit() -> None:
    """Freeze every live object as the process exits, so that exit is cheap.

    At exit CPython runs the cyclic collector over the whole heap. After
    `import anthropic` (~1,400 pydantic models) that walk alone took 0.2 s of every
    LLM-judge command, 55 ms of a `--dry-run` and 45 ms of each prep worker. Frozen
    objects are skipped (`gc.freeze`). It is an `atexit` handler, registered when the
    process starts its work, so it runs after every handler registered later (the
    Langfuse SDK's flush, the prep pool's shutdown); reference counting still frees
    everything it frees today. Only objects held in a reference cycle are left to the OS:
    our files, transactions and connections are closed or committed explicitly, never
    by the collector.

    For a process's entry point only (a console script, a worker's initializer).
    """
    global _freeze_registered
    with _lock:
        if not _freeze_registered:
            atexit.register(gc.freeze)
            _freeze_registered = True


_freeze_registered = False
