"""Load and prepare local sessions in worker processes, off the judge threads' GIL.

A backfill's judge threads spend their time waiting on the network, but loading and
preparing a session (JSON decoding, redaction, rendering, tokenizing) is pure Python
that holds the GIL: about 60 ms for a 2.7 MB transcript. At high concurrency that work
delays every other thread's request and reply handling, and the process uses one core.
`PrepPool` does it in other processes instead; the thread that asked only unpickles the
result (~3 ms for the same session).

The workers are spawned (not forked: the run already has threads) once the run knows it
has a big transcript (`start`), and each imports the prep code and builds the tokenizer
straight away; sessions are prepared in their threads until the workers are ready, so
nothing waits on their start-up. Workers ignore Ctrl-C: the parent stops the run and
shuts them down.

Only local files of `MIN_BYTES` or more go through the pool; a Langfuse session is
fetched by the parent's rate-limited client and prepared in its thread. A broken pool (a
worker killed, out of memory) is not fatal: the session is prepared in its thread and so
are all later ones.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from scorer._gc import freeze_at_exit
from scorer.live.final_state_model import FinalStateOptions
from scorer.prepare.prepared import Prepared, PrepOptions

log = logging.getLogger(__name__)

MAX_WORKERS = 4
MIN_CONCURRENCY = 4
"""Below this many judge calls in flight, prep in the judge threads keeps up."""
MIN_BYTES = 256 * 1024
"""Smaller transcripts are prepared in the judge thread: their prep (a few ms) costs
about what handing the result back does."""


def pool_workers(concurrency: int, setting: int | None = None) -> int:
    """How many prep processes a run with `concurrency` judge calls in flight gets.

    Args:
        concurrency: The run's `--concurrency`.
        setting: `SCORER_PREP_PROCESSES` (0: never; None: automatic).

    Returns:
        0 (prepare in the judge threads) or the number of worker processes: automatic is
        one per core, at most `MAX_WORKERS`, from `MIN_CONCURRENCY` calls on, on a
        machine with more than one core. (One per core, not per spare core: the judge
        threads mostly wait on the network; on 2 cores, 2 workers measured 7 % faster
        than 1 on 16 big sessions, `benchmarks/bench_prep_pool.py`.)
    """
    if setting is not None:
        return max(0, setting)
    cores = os.cpu_count() or 1
    if concurrency < MIN_CONCURRENCY or cores < 2:
        return 0
    return min(MAX_WORKERS, cores)


def _start_worker(cache_dir: Path | None) -> None:
    """Worker initializer: ignore Ctrl-C, then import prep and build the tokenizer now
    (from the parent's tokenizer cache dir: a worker reads no settings)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    freeze_at_exit()  # the run waits for its workers to exit
    from scorer.prepare.tokens import encoding, use_cache_dir
    from scorer.sources.claude_code import ClaudeCodeSource  # noqa: F401 - warm the import

    if cache_dir is not None:
        use_cache_dir(cache_dir)
    encoding()


def _warm() -> int:
    return os.getpid()


def load_and_prepare(
    origin: str, options: PrepOptions, final_state: FinalStateOptions | None = None
) -> Prepared:
    """What a worker runs: the file source's load, the workspace's final state, then
    `prepare` (as in a thread)."""
    from scorer.live.final_state import add_final_state
    from scorer.sources import open_file

    session = open_file(Path(origin)).load()  # format sniffed, as in a thread
    return options.run(add_final_state(session, final_state))


class PrepPool:
    """Worker processes that turn a local transcript path into a `Prepared`.

    Args:
        workers: Number of processes (at least 1).
        options: The run's chunking.
        cache_dir: The tokenizer's table cache (`SCORER_CACHE_DIR`).
        final_state: Whether and how each session's workspace is read (None: not read).
    """

    def __init__(
        self,
        workers: int,
        options: PrepOptions | None = None,
        cache_dir: Path | None = None,
        final_state: FinalStateOptions | None = None,
    ) -> None:
        self.workers = max(1, workers)
        self.options = options or PrepOptions()
        self.final_state = final_state
        self._broken = False
        self._lock = threading.Lock()
        self._pool = ProcessPoolExecutor(
            max_workers=self.workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(cache_dir,),
        )
        self._warming: list[Future[int]] = []

    def start(self) -> None:
        """Spawn the workers now (they import and build the tokenizer in the background).

        Until every worker has, `ready` is False and sessions are prepared in their
        threads, so nothing waits on a worker's start-up. A run of small transcripts
        never calls this and never pays for a process.
        """
        with self._lock:
            if not self._warming:
                self._warming = [self._pool.submit(_warm) for _ in range(self.workers)]

    @property
    def ready(self) -> bool:
        """Started, and every worker has finished its start-up."""
        return bool(self._warming) and all(f.done() for f in self._warming)

    def wants(self, origin: str) -> bool:
        """Whether this transcript is big enough to be worth a worker."""
        try:
            return os.stat(origin).st_size >= MIN_BYTES
        except OSError:
            return False  # the thread's own load reports the problem

    @property
    def broken(self) -> bool:
        """True once a worker died: every later session is prepared in its thread."""
        return self._broken

    def prepare_file(self, origin: str) -> Prepared:
        """Load and prepare one local transcript in a worker.

        Raises:
            ScorerError: Whatever the source or `prepare` raised in the worker (a
                `SourceError` for an unreadable file, say), re-raised here.
        """
        if not self._broken:
            try:
                work = self._pool.submit(load_and_prepare, origin, self.options, self.final_state)
                return work.result()
            except BrokenProcessPool as exc:
                with self._lock:
                    if not self._broken:
                        log.warning("prep workers stopped (%s); preparing in threads", exc)
                    self._broken = True
        return load_and_prepare(origin, self.options, self.final_state)

    def close(self) -> None:
        """Stop the workers (sessions not yet started are dropped)."""
        self._pool.shutdown(wait=True, cancel_futures=True)
