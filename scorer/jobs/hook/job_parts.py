"""The pieces of the hook job around its main loop (`worker.HookJob`): where the transcript
is, what makes it "unchanged" when it cannot be read, and the one log line per job."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import TYPE_CHECKING

from scorer.errors import SourceError
from scorer.jobs.hook.request import HookRequest

if TYPE_CHECKING:
    from scorer.jobs.hook.outcome import Outcome

log = logging.getLogger("scorer.hook")


def fingerprint(transcript: Path) -> str:
    """A hash of the transcript and its subagent files: what makes a session "unchanged".

    Raises:
        SourceError: The transcript cannot be read.
    """
    digest = hashlib.sha256()
    files = [
        transcript,
        *sorted((transcript.parent / transcript.stem / "subagents").glob("*.jsonl")),
    ]
    for path in files:
        try:
            with path.open("rb") as handle:
                digest.update(path.name.encode() + b"\0")
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        except OSError as exc:
            if path == transcript:
                raise SourceError(f"cannot read {transcript}: {exc.strerror or exc}") from exc
    return digest.hexdigest()[:32]


def locate(request: HookRequest, projects_root: Path) -> Path:
    """The transcript file of a request (given, or found by session id).

    Raises:
        SourceError: It does not exist, is not a regular file, or the id is unknown.
    """
    if request.transcript is not None:
        path = request.transcript
        if not path.exists():
            raise SourceError(f"transcript not found: {path}")
        if not path.is_file():
            raise SourceError(f"transcript is not a regular file: {path}")
        return path
    from scorer.sources import find_session

    assert request.session_id  # a request has a transcript or a session id
    return find_session(request.session_id, projects_root)


def log_outcome(request: HookRequest, outcome: Outcome) -> None:
    """One line per job in the hook log."""
    who = outcome.session_id or request.label()
    card = outcome.card
    if card is not None and outcome.state == "scored":
        where = "; Langfuse: " + ", ".join(outcome.pushed) if outcome.pushed else ""
        log.info(
            "%s: scored by %s%s: overall %.2f, $%.4f%s",
            who, card.judge, f" ({card.model})" if card.model else "", card.overall or 0.0,
            card.cost_usd, where,
        )  # fmt: skip
        if outcome.push_error:
            log.warning(
                "%s: %s; the card is in the store, `scorer scores push` sends it later",
                who, outcome.push_error,
            )  # fmt: skip
    elif outcome.state == "unscored" or (
        outcome.state == "failed" and not routine(request, outcome)
    ):
        log.warning("%s: %s: %s", who, outcome.state, outcome.reason)
    else:
        log.info("%s: %s: %s", who, outcome.state, outcome.reason)


def routine(request: HookRequest, outcome: Outcome) -> bool:
    """A session that ended before Claude Code wrote a transcript (opened and closed)."""
    return request.automatic and outcome.reason.startswith("transcript not found")
