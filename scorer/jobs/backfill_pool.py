"""The thread pool that runs a backfill's sessions (or hands them to Message Batches),
and what Ctrl-C does to it: what has not started is cancelled, the judge calls on the wire
finish and are stored, and the run returns what it did with `Context.interrupted` set
(`run_backfill` then raises `RunInterrupted` with the summary); a second Ctrl-C quits at
once."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import AbstractContextManager
from typing import Any

from scorer._text import plural
from scorer.jobs.discovery import SessionRef
from scorer.jobs.outcomes import estimate_if_judged
from scorer.jobs.pipeline import process
from scorer.jobs.run_state import BackfillOptions, Context, NoProgress, SessionResult, Tracker

__all__ = ["MAX_LOOKAHEAD", "ProgressFactory", "drain", "pool_size", "run_pool"]

MAX_LOOKAHEAD = 16
"""The LLM path runs `min(concurrency, MAX_LOOKAHEAD)` extra look-ahead workers (each holds
one prepared session in memory while it waits for a request slot)."""

ProgressFactory = Callable[[int, bool], AbstractContextManager[Tracker]]
"""Builds a progress display from (total sessions, dry run); see `cli.progress`."""

log = logging.getLogger(__name__)


def run_pool(
    ctx: Context, refs: list[SessionRef], progress: ProgressFactory | None
) -> list[SessionResult]:
    step = estimate_if_judged if ctx.opts.dry_run else process

    def worker(ctx: Context, ref: SessionRef) -> SessionResult:
        result = step(ctx, ref)
        ctx.emit("finished", ref.session_id, result)
        return result

    make_tracker = progress or (lambda total, dry_run: NoProgress())
    if ctx.opts.batch_api and not ctx.opts.dry_run:
        with make_tracker(len(refs), False) as bar:
            from scorer.jobs.batches import run_batches  # imports the SDK: LLM runs only

            return run_batches(ctx, refs, on_result=bar.advance)
    with (
        make_tracker(len(refs), ctx.opts.dry_run) as bar,
        ThreadPoolExecutor(max_workers=pool_size(ctx.opts), thread_name_prefix="backfill") as pool,
    ):
        limiter = ctx.services.limiters.get("anthropic")
        if limiter is not None and ctx.opts.judge == "llm" and not ctx.opts.dry_run:
            bar.watch_pacing(limiter.pacing_status)
        futures = [pool.submit(worker, ctx, ref) for ref in refs]
        shown: set[Future[SessionResult]] = set()
        try:
            for fut in as_completed(futures):  # the bar counts what is done, in any order
                bar.advance(fut.result())
                shown.add(fut)
        except KeyboardInterrupt:
            # Calls on the wire finish and are written; requests still waiting for a slot
            # raise RunStopped (the limiter watches ctx.stop); the rest wait for a resume.
            ctx.stop.set()
            ctx.interrupted = True
            drain(pool, futures)
        results = [_final(fut, ref) for fut, ref in zip(futures, refs, strict=True)]
        for fut, result in zip(futures, results, strict=True):
            if fut not in shown:  # finished while draining: the bar shows the truth
                bar.advance(result)
    return results


def _final(fut: Future[SessionResult], ref: SessionRef) -> SessionResult:
    """A session's result; one Ctrl-C cancelled before it started was not started."""
    if fut.cancelled():
        return SessionResult(session_id=ref.session_id, outcome="not_started", reason="run stopped")
    return fut.result()


def drain(pool: ThreadPoolExecutor, futures: list[Future[Any]]) -> None:
    """After Ctrl-C: cancel what has not started and wait for the calls on the wire, saying
    so; a second Ctrl-C quits at once (exit 130: the ledger and the store are written in
    transactions, and the next run retries what was cut)."""
    busy = sum(f.running() for f in futures)
    if busy:
        log.warning(
            "interrupted: waiting for %s on the wire to finish and be stored "
            "(Ctrl-C again to quit now; the next run retries them)",
            plural(busy, "session"),
        )
    try:
        pool.shutdown(wait=True, cancel_futures=True)
    except KeyboardInterrupt:
        log.warning("quit with %s unfinished: run the same command again", plural(busy, "session"))
        sys.stderr.flush()
        os._exit(130)  # the worker threads would be joined at exit: do not wait for them


def pool_size(opts: BackfillOptions) -> int:
    """Worker threads: `concurrency`, plus look-ahead workers on the LLM path.

    The judge's requests are capped at `concurrency` in flight by the shared limiter, so
    the extra workers never add API load: they fetch and prepare the next sessions while
    the others wait on the network, which keeps prep off the critical path. With one
    prepared session waiting per slot, a slot freed by a finished call is taken at once,
    and the finished session's store and ledger writes overlap the next call.
    """
    k = max(1, opts.concurrency)
    if opts.judge != "llm" or opts.dry_run:
        return k
    return k + min(k, MAX_LOOKAHEAD)
