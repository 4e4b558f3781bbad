"""Did Langfuse really store what it accepted? Read pushed scores back by id.

`POST /api/public/scores` answers 202 before Langfuse's worker checks each score against
its config (`validateAndInflateScore`): a config archived in the UI, a changed data type
or category makes the score vanish while the API said "accepted". So:

* `configs.config_health` compares the configs we push against with the server's (archived,
  data type, categories, range, gone); `configs.config_ids` runs it once per run.
* `verify_cards` reads scorecards' deterministic score ids back through
  `GET /api/public/v3/scores?id=...` (up to 100 ids per request), polling a few times
  because ingestion is asynchronous, and names the likely cause of anything missing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from scorer.errors import SinkError
from scorer.judge.rubric import Rubric, default_rubric
from scorer.langfuse_client import RETRY, LangfuseClient, get_client
from scorer.models import Scorecard
from scorer.sinks.langfuse.configs import cached_config_ids, config_health
from scorer.sinks.langfuse.derived import pushed_names
from scorer.sinks.langfuse.push import first_trace_id, score_id

IDS_PER_READ = 100
VERIFY_WAITS = (5.0, 10.0, 20.0)
"""Seconds between read-backs while scores may still be in Langfuse's ingestion queue."""


@dataclass
class Verification:
    """What `verify_cards` found."""

    checked: int = 0
    """Scorecards read back."""
    missing: dict[str, list[str]] = field(default_factory=dict)
    """Session id → score names Langfuse does not hold."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Session id → one line: what is missing and the likely cause."""
    requests: int = 0

    @property
    def ok(self) -> bool:
        return not self.missing


def expected_ids(card: Scorecard, rubric: Rubric, trace_id: str | None = None) -> dict[str, str]:
    """Score name → the deterministic id a push used: session-level, or on `trace_id`;
    the goal probability's too when the card has one (pure)."""
    key = f"trace:{trace_id}" if trace_id else ""
    return {name: score_id(card, name, target_key=key) for name in pushed_names(card, rubric)}


def verify_cards(
    cards: Iterable[Scorecard],
    *,
    client: LangfuseClient | None = None,
    rubric: Rubric | None = None,
    target: Literal["session", "trace"] = "session",
    waits: tuple[float, ...] = VERIFY_WAITS,
) -> Verification:
    """Read the cards' scores back from Langfuse; report what is missing and why.

    Args:
        target: Where the cards were pushed: session-level scores, or the session's
            first trace (as `push_scorecard(target="trace")` resolves it).

    Raises:
        SinkError: The read failed after retries.
        CredentialsError: The keys were rejected.
    """
    client = get_client(client)
    rubric = rubric or default_rubric()
    wanted = {
        c.session_id: expected_ids(
            c, rubric, first_trace_id(client, c.session_id) if target == "trace" else None
        )
        for c in cards
        if c.status == "scored"
    }
    report = Verification(checked=len(wanted))
    by_id = {sid: name for ids in wanted.values() for name, sid in ids.items()}
    owner = {i: s for s, ids in wanted.items() for i in ids.values()}
    missing = set(by_id)
    for attempt in range(len(waits) + 1):
        missing -= _present(client, sorted(missing), report)
        if not missing or attempt == len(waits):
            break
        RETRY.sleep(waits[attempt])  # ingestion is asynchronous: give it time
    for score in sorted(missing):
        report.missing.setdefault(owner[score], []).append(by_id[score])
    if report.missing:
        _explain(client, rubric, report)
    return report


def _present(client: LangfuseClient, ids: list[str], report: Verification) -> set[str]:
    found: set[str] = set()
    for start in range(0, len(ids), IDS_PER_READ):
        chunk = ids[start : start + IDS_PER_READ]
        report.requests += 1
        page = client.call(
            client.api.scores.get_many,
            error=SinkError,
            what="reading pushed scores back",
            id=",".join(chunk),
            limit=IDS_PER_READ,
        )
        found.update(s.id for s in page.data)
    return found


def _explain(client: LangfuseClient, rubric: Rubric, report: Verification) -> None:
    causes = config_health(client, rubric, cached_config_ids(client, rubric))
    for sid, names in report.missing.items():
        why = "; ".join(f"{n}: {causes[n]}" for n in names if n in causes)
        report.reasons[sid] = (
            f"Langfuse accepted but does not hold {', '.join(sorted(names))} of session "
            f"{sid}: " + (why or "dropped after the 202 (async validation) or still queued")
        )
