"""`SCORER_HOOK_MODE=batch`: ended sessions wait in a queue and go out as Message Batches.

    hook worker    claim → `queued` (the hook itself still returns at once) → a round:
      collect      every `submitted` session whose batch ended: its card → the store
                   (+ Langfuse) → the ledger (`scored` | `unscored` | `failed`, the cost
                   counted today at what the batch really charged)
      send         when the queue is due (`SCORER_HOOK_BATCH_SIZE` sessions wait, or the
                   oldest waited `SCORER_HOOK_BATCH_MINUTES`): snapshot each transcript,
                   reserve its batch-priced estimate of today's cap (or `capped`), and
                   submit them all as one batch
    then           the worker keeps the queue's time: while sessions wait and no other
                   process does it, it sleeps until the oldest is due and sends them
                   (no other session may end for hours)

The batch is the backfill's own machinery (`jobs.batches.BatchRun`, one round at a time)
on a ledger of its own (run key: `hook: batch` and the judge identity), so it brings the
same guarantees: the requests are the direct judge's; an intent is committed before
`create`, and a batch a killed worker made is adopted, not paid for again
(`jobs.batch_intents`); a repair and the second opinions of an uncertain verdict
(`AnthropicJudge.settle_goal`) go directly through the same judge. One process at a time
runs a round (an `flock` in `<store dir>/hook-batches/`).

What is judged is a copy: each sent session's transcript and subagent files are copied
under `<store dir>/hook-batches/`, and both the submission and the collection prepare
the copy, so the card describes exactly the work that was judged even if the session
goes on meanwhile (a hook that sees it grow queues it again once its card is in). The
copy goes when the card is in.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer._text import plural
from scorer.errors import EmptySessionError, ScorerError, SourceError
from scorer.jobs.hook.ledger import HookLedger
from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.queue import BatchQueue

if TYPE_CHECKING:
    from scorer.jobs.discovery import SessionRef
    from scorer.jobs.hook.batch_run import BatchEnv, HookBatchRun
    from scorer.jobs.run_state import SessionResult
    from scorer.models import Scorecard

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: one process at a time is not enforced
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("scorer.hook")

FOLDER = "hook-batches"
"""Beside the store: the round lock and the snapshots of the sessions in batches."""
LOCK_WAIT = 600.0
"""Seconds a round waits for another process's round (a recovery may wait for adoption)."""
NAP = 60.0
"""The timer reads the queue again at least this often (another process may send it)."""


@dataclass(frozen=True)
class Collected:
    """One session whose Message Batch result came in."""

    session_id: str
    state: str
    """`scored`, `unscored` or `failed`."""
    reason: str
    cost_usd: float
    batch_id: str | None
    card: Scorecard | None = None
    requeued: bool = False
    """It gained work while in the batch and waits in the queue again."""

    def payload(self) -> dict[str, Any]:
        """What `scorer hook --collect --json` prints for it (the card: `scorer schema`)."""
        card = self.card.model_dump(mode="json") if self.card is not None else None
        return {
            "session_id": self.session_id, "state": self.state, "reason": self.reason,
            "cost_usd": self.cost_usd, "batch_id": self.batch_id, "requeued": self.requeued,
            "scorecard": card,
        }  # fmt: skip

    def line(self) -> str:
        """What `scorer hook --collect` prints for it."""
        card = self.card
        overall = f" overall {card.overall:.2f}," if card is not None and card.overall else ""
        where = f" (Message Batch {self.batch_id})" if self.batch_id else ""
        text = f"{self.session_id}: {self.state}{overall} ${self.cost_usd:.4f}{where}"
        if self.reason:
            text += f": {self.reason}"
        return text + ("; queued again: it gained work meanwhile" if self.requeued else "")


def snapshot(transcript: Path, folder: Path) -> Path:
    """Copy a transcript and its subagent files (`<stem>/subagents/`) into `folder`.

    Raises:
        SourceError: The transcript cannot be read.
    """
    shutil.rmtree(folder, ignore_errors=True)
    try:
        folder.mkdir(parents=True)
        copy = folder / transcript.name
        shutil.copyfile(transcript, copy)
        subagents = transcript.parent / transcript.stem / "subagents"
        if subagents.is_dir():
            shutil.copytree(subagents, folder / transcript.stem / "subagents")
    except OSError as exc:
        shutil.rmtree(folder, ignore_errors=True)
        if not transcript.exists():
            raise SourceError(f"transcript not found: {transcript}") from exc
        raise SourceError(f"cannot copy {transcript}: {exc.strerror or exc}") from exc
    return copy


@contextlib.contextmanager
def round_lock(folder: Path, wait: float) -> Iterator[bool]:
    """Hold the one-round-at-a-time lock (True), or give up after `wait` seconds (False).

    An `flock`: the kernel drops it however its holder dies.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / ".lock").open("a+b") as handle:
        if fcntl is None:
            yield True
            return
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.2)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _now() -> datetime:
    return datetime.now(UTC)


class HookBatches:
    """The batch mode's rounds and its timer (see the module docstring).

    Args:
        policy: The hook policy (batch size and minutes, the daily cap, push).
        env: Paths and judge settings (`HookEnv`).
        sleep: The timer's waits (tests pass a fake clock's).
        now: The current time (tests pass a fake clock).
    """

    def __init__(
        self,
        policy: HookPolicy,
        env: BatchEnv,
        *,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = _now,
    ) -> None:
        self.policy, self.env, self.sleep, self.now = policy, env, sleep, now
        self.folder = Path(env.store_path).parent / FOLDER
        self._runs: dict[str, HookBatchRun] = {}

    def waiting(self) -> tuple[int, int]:
        """(sessions queued, sessions in Message Batches)."""
        with HookLedger(self.env.store_path) as ledger:
            queue = BatchQueue(ledger, self.now)
            return len(queue.rows("queued")), len(queue.rows("submitted"))

    def round(self, *, send: bool = True, wait: float = LOCK_WAIT) -> list[Collected]:
        """Collect the cards of ended batches, then send the queue if it is due.

        Args:
            send: Also send a due queue (False: collect only, for `/score`).
            wait: Seconds to wait for another process's round before leaving it to it.

        Raises:
            ScorerError: The batches cannot be reached (a bad key, say); every session
                stays where it is for the next round.
        """
        with round_lock(self.folder, wait) as held:
            if not held:
                log.info("another process is collecting or sending Message Batches")
                return []
            with HookLedger(self.env.store_path) as ledger:
                queue = BatchQueue(ledger, self.now)
                try:
                    collected = self._collect(queue)
                    if send:
                        self._send(queue)
                finally:
                    for run in self._runs.values():
                        run.close()
                    self._runs.clear()
                    self._sweep(queue)
        return collected

    def keep_time(self) -> None:
        """Keep the queue's time: while sessions wait and no other live process keeps it,
        sleep until the oldest is due and send the queue (the worker that queued a
        session calls this last; it returns when nothing is queued any more)."""
        stuck: datetime | None = None
        while True:
            with HookLedger(self.env.store_path) as ledger:
                queue = BatchQueue(ledger, self.now)
                oldest = queue.oldest()
                if oldest is None:
                    if queue.release():
                        return
                    continue
                due = oldest + timedelta(minutes=self.policy.batch_minutes)
                if not queue.keep(due):
                    return  # another live process keeps it
            left = (due - self.now()).total_seconds()
            if left > 0 or oldest == stuck:  # a round that left the same oldest: nap
                self.sleep(min(max(left, 1.0), NAP))
                stuck = None
                continue
            self.round()
            stuck = oldest

    # ---- collect -----------------------------------------------------------------------

    def _collect(self, queue: BatchQueue) -> list[Collected]:
        out: list[Collected] = []
        for identity, rows in _by_identity(queue.rows("submitted")).items():
            run = self._run(identity)
            refs = [run.ref(r, self._copy(r)) for r in rows]
            run.resume(refs)
            out += self._settle(queue, run, refs, run.run(refs), sending=False)
        return out

    def _settle(
        self,
        queue: BatchQueue,
        run: HookBatchRun,
        refs: list[SessionRef],
        results: list[SessionResult],
        *,
        sending: bool,
    ) -> list[Collected]:
        """Close every session whose result came; record the batch of the others.

        A session another process holds (`busy`: a backfill judging it) is `skipped` when
        it was about to be sent, as the direct hook does; one already in a batch waits.
        """
        done = {r.session_id: r for r in results}
        out: list[Collected] = []
        for ref in refs:
            sid, row = ref.session_id, run.ledger.get(ref.session_id) or {}
            result = done.get(sid)
            if result is not None and result.outcome == "busy" and not sending:
                result = None
            if result is None:  # still in its batch
                if row.get("batch_id"):
                    queue.in_batch(sid, run.identity, row["batch_id"])
                continue
            state, reason, cost = _verdict(result, row)
            batch_id = row.get("batch_id")
            newer = queue.collected(
                sid, run.identity, state, cost_usd=cost, batch_id=batch_id,
                reason=reason or (batch_id and f"collected from Message Batch {batch_id}"),
            )  # fmt: skip
            card = run.card(sid) if state != "failed" else None
            item = Collected(sid, state, reason, cost, batch_id, card, bool(newer))
            _log_collected(item)
            out.append(item)
        return out

    # ---- send --------------------------------------------------------------------------

    def _send(self, queue: BatchQueue) -> None:
        queued = queue.rows("queued")
        oldest = queue.oldest()
        waited = (self.now() - oldest).total_seconds() if oldest else 0.0
        why = self.policy.batch_due(len(queued), waited)
        if not why:
            if oldest is not None:
                by = oldest + timedelta(minutes=self.policy.batch_minutes)
                log.info(
                    "Message Batch queue: %d of %d waiting; sent at %s at the latest",
                    len(queued), self.policy.batch_size, by.astimezone().strftime("%H:%M"),
                )  # fmt: skip
            return
        log.info("sending %s as a Message Batch: %s", plural(len(queued), "session"), why)
        for identity, rows in _by_identity(queued).items():
            run = self._run(identity)
            refs = [ref for row in rows if (ref := self._stage(queue, run, row)) is not None]
            if refs:
                self._settle(queue, run, refs, run.run(refs), sending=True)

    def _stage(
        self, queue: BatchQueue, run: HookBatchRun, row: dict[str, Any]
    ) -> SessionRef | None:
        """Snapshot, fingerprint, estimate and reserve one queued session; its ref to send,
        or None (left queued, capped, skipped or failed: logged)."""
        from scorer.jobs.hook.batch_run import load_as

        sid = row["session_id"]
        folder = self._snapshot_dir(row)
        try:
            copy = snapshot(Path(row["transcript"]), folder)
            session = load_as(copy, sid)
            session.origin = row["transcript"]
            prepared, fingerprint = run.prepare(session, copy)
            estimate = run.estimate(prepared)
        except EmptySessionError as exc:
            queue.give_up(sid, run.identity, "skipped", str(exc))
            log.info("%s: skipped: %s", sid, exc)
            return None
        except ScorerError as exc:
            queue.give_up(sid, run.identity, "failed", str(exc))
            log.warning("%s: failed: %s", sid, exc)
            return None
        ref = run.ref(row, copy)
        run.reset(ref)  # before `submit`: a kill in between leaves the session queued
        sent, committed = queue.submit(row, fingerprint, estimate, self.policy.daily_cost_cap)
        if sent is False:
            why = self.policy.over_cap(committed, estimate) or "over the daily cost cap"
            log.info("%s: capped: %s (batch price)", sid, why)
        return ref if sent else None

    def _run(self, identity: str) -> HookBatchRun:
        if identity not in self._runs:
            from scorer.jobs.hook.batch_run import HookBatchRun

            self._runs[identity] = HookBatchRun(identity, self.env, self.policy.push)
        return self._runs[identity]

    # ---- snapshots ---------------------------------------------------------------------

    def _snapshot_dir(self, row: dict[str, Any]) -> Path:
        key = f"{row['session_id']}\0{row['identity']}".encode()
        return self.folder / hashlib.sha256(key).hexdigest()[:24]

    def _copy(self, row: dict[str, Any]) -> Path:
        """Where the snapshot of a row's transcript is (`snapshot` keeps its name)."""
        return self._snapshot_dir(row) / Path(row["transcript"]).name

    def _sweep(self, queue: BatchQueue) -> None:
        """Remove the copies of sessions no batch holds any more."""
        keep = {self._snapshot_dir(r).name for r in queue.rows("submitted")}
        for entry in self.folder.iterdir():
            if entry.is_dir() and entry.name not in keep:
                shutil.rmtree(entry, ignore_errors=True)


def _by_identity(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["identity"], []).append(row)
    return groups


def _verdict(result: SessionResult, row: dict[str, Any]) -> tuple[str, str, float]:
    """(hook state, reason, USD) of a batch run's result. A session an earlier, killed
    round finished (`skipped`: done in this run) is read from its ledger row."""
    cost = result.cost_usd or float(row.get("cost_usd") or 0.0)
    if result.outcome == "skipped" or result.outcome == "scored":
        return "scored", "", cost
    if result.outcome == "incomplete":  # stored; `scorer scores push` sends it later
        return "scored", result.reason or "", cost
    if result.outcome == "unscored":
        return "unscored", result.reason or "", cost
    if result.outcome == "busy":
        return "skipped", result.reason or "", cost
    return "failed", result.reason or result.outcome, cost


def _log_collected(item: Collected) -> None:
    level = logging.INFO if item.state == "scored" else logging.WARNING
    verb = "collected" if item.batch_id else "not sent"
    log.log(level, "%s: %s: %s", item.session_id, verb, item.line().split(": ", 1)[1])
