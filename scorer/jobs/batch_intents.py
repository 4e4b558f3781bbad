"""Exactly-once spend for Message Batches: an intent before `create`, adoption after a kill.

A kill can land anywhere around `messages.batches.create`: before the request leaves,
while the server creates the batch, after the reply arrived but before the ledger
commit, or after that commit. Only the last leaves the batch id in the ledger, and the
server bills every batch it made. So before sending, the run commits an *intent*: the
batch's custom ids, its session ids, a fingerprint of its requests and the local time
(`Ledger.add_intent`); `Ledger.add_batch` closes it in the transaction that records the
batch. The request bodies are not stored: the API never returns a batch's requests, so
they could not be compared, and a resubmission rebuilds them deterministically.

A start that finds an open intent looks for the batch it may have produced (`Adopter`):

    list batches newest first (`after_id` pages) back to the intent's time minus
        `CLOCK_SKEW`, leaving out every batch this store's ledger already knows;
    a batch holding as many requests as the intent is a candidate: an ended one is ours
        only if its results carry exactly the intent's custom ids (results cost nothing to
        download); an in-progress one is adopted on its count and checked when it ends
        (`matches`; not ours: its requests are submitted again in the same run);
    no candidate: wait, polling, until `SCORER_BATCH_ADOPT_SECONDS` (default 60) after
        the intent, since a create still in flight at the server when the run died can
        appear later; then the intent is abandoned and the requests submitted again.

The same search runs before `create` is retried after an error that does not prove the
server made nothing (a timeout, a lost connection, a 5xx other than 529).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Collection, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from scorer.jobs.ledger import Ledger
from scorer.judge.sdk import anthropic

log = logging.getLogger(__name__)

CLOCK_SKEW = timedelta(minutes=2)
"""How far the server's clock may lag ours: batches this much older than the intent count."""

LIST_PAGE = 100
"""Batches per list page (the API allows 1 to 1,000)."""


def fingerprint(requests: list[dict[str, Any]]) -> str:
    """sha256 over the batch's requests (custom ids and params), canonical JSON."""
    blob = json.dumps(requests, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def request_total(batch: Any) -> int:
    """How many requests a batch holds, whatever state each is in."""
    counts = batch.request_counts
    return int(
        counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
    )


def ambiguous(exc: BaseException) -> bool:
    """Whether a failed `create` may still have made a batch (no answer, or a 5xx)."""
    if isinstance(exc, anthropic.APIConnectionError):  # timeouts included
        return True
    status = getattr(exc, "status_code", None)
    return isinstance(status, int) and status >= 500 and status != 529


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text)


class Adopter:
    """Finds the batches that open intents produced and records them as this run's.

    Args:
        client: The Anthropic client (`messages.batches.list` / `results`).
        ledger: The run's ledger.
        wait: Seconds after an intent during which its batch may still appear.
        poll: Seconds between list rounds while waiting.
        sleep: Waits between rounds (tests pass a fake).
        now: The current time (tests pass a fake).
    """

    def __init__(
        self,
        client: anthropic.Anthropic,
        ledger: Ledger,
        *,
        wait: float,
        poll: float,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.client, self.ledger = client, ledger
        self.wait, self.poll, self.sleep, self.now = wait, poll, sleep, now
        self.ids: dict[str, set[str]] = {}
        """Ended batches' custom ids, downloaded once."""

    def resolve(
        self, intents: list[dict[str, Any]], sessions: Collection[str], *, abandon: bool = True
    ) -> dict[str, str]:
        """Adopt the batch of every open intent that has one.

        Args:
            intents: Open intents (`Ledger.intents("open")`).
            sessions: The sessions this run carries: only they move to `fetched`.
            abandon: Close intents nothing matched once their wait is over (False: leave
                them open, for a `create` about to be retried under the same intent).

        Returns:
            custom_id → adopted batch id.
        """
        adopted: dict[str, str] = {}
        waiting = list(intents)
        while waiting:
            for intent, batch, checked in self._match(waiting):
                self._adopt(intent, batch.id, checked, sessions)
                adopted.update(dict.fromkeys(intent["custom_ids"], batch.id))
                waiting.remove(intent)
            now = self.now()
            due = [i for i in waiting if now >= self._deadline(i)]
            for intent in due:
                waiting.remove(intent)
                if abandon:
                    log.info(
                        "batch intent %s: no batch found, submitting again", intent["intent_id"]
                    )
                    self.ledger.set_intent(intent["intent_id"], "abandoned")
            if waiting:
                left = (min(self._deadline(i) for i in waiting) - now).total_seconds()
                self.sleep(min(max(self.poll, 0.05), left))
        return adopted

    def matches(self, batch_id: str, items: Iterable[Any], expected: Collection[str]) -> bool:
        """Check an adopted batch's results against its intent (`verified` / `rejected`)."""
        if {item.custom_id for item in items} == set(expected):
            for intent in self.ledger.intents("adopted"):
                if intent["batch_id"] == batch_id:
                    self.ledger.set_intent(intent["intent_id"], "verified")
            return True
        log.warning("adopted batch %s holds other requests: submitting again", batch_id)
        self.ledger.reject_adoption(batch_id)
        return False

    def _deadline(self, intent: dict[str, Any]) -> datetime:
        return _when(intent["created_at"]) + timedelta(seconds=self.wait)

    def _adopt(
        self, intent: dict[str, Any], batch_id: str, checked: bool, sessions: Collection[str]
    ) -> None:
        log.info("batch intent %s: adopting batch %s", intent["intent_id"], batch_id)
        self.ledger.add_batch(
            batch_id,
            intent["phase"],
            intent["custom_ids"],
            [s for s in intent["session_ids"] if s in sessions],
            intent=intent["intent_id"],
            how="verified" if checked else "adopted",
        )

    def _match(self, intents: list[dict[str, Any]]) -> list[tuple[dict[str, Any], Any, bool]]:
        """Each intent with a batch found for it: (intent, batch, custom ids checked)."""
        candidates = self._candidates(min(_when(i["created_at"]) for i in intents))
        found: list[tuple[dict[str, Any], Any, bool]] = []
        for intent in intents:  # oldest first; each batch goes to one intent
            since = _when(intent["created_at"]) - CLOCK_SKEW
            fits = [
                b
                for b in candidates
                if b.created_at >= since and request_total(b) == len(intent["custom_ids"])
            ]
            pick = self._pick(intent, fits)
            if pick is not None:
                candidates.remove(pick[0])
                found.append((intent, *pick))
        return found

    def _pick(self, intent: dict[str, Any], fits: list[Any]) -> tuple[Any, bool] | None:
        """An ended batch with the intent's very custom ids, else the oldest running one."""
        wanted = set(intent["custom_ids"])
        for batch in fits:
            if batch.processing_status == "ended" and self._custom_ids(batch.id) == wanted:
                return batch, True
        running = [b for b in fits if b.processing_status != "ended"]
        return (min(running, key=lambda b: b.created_at), False) if running else None

    def _candidates(self, oldest: datetime) -> list[Any]:
        """Unknown batches created since `oldest - CLOCK_SKEW`, newest first."""
        known = self.ledger.known_batch_ids()
        out = []
        for batch in self.client.messages.batches.list(limit=LIST_PAGE):
            if batch.created_at < oldest - CLOCK_SKEW:
                break  # newest first: the rest are older still
            if batch.id not in known:
                out.append(batch)
        return out

    def _custom_ids(self, batch_id: str) -> set[str]:
        if batch_id not in self.ids:
            results = self.client.messages.batches.results(batch_id)
            self.ids[batch_id] = {item.custom_id for item in results}
        return self.ids[batch_id]
