"""Send sessions to a Langfuse annotation queue for human review.

Who goes: every session whose overall is below the threshold or whose recommendation is
`escalate`, plus a seeded random calibration sample of the other scored sessions (so
reviewers also see sessions the judge liked, which is what calibration needs). The queue
is found by name or created, bound to the rubric's seven score config ids; items already
on the queue are not added twice. Sessions Langfuse never saw (scored from a local
transcript that was not traced) are not queued: reviewers could not open them.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from scorer.errors import CredentialsError, SinkError

if TYPE_CHECKING:
    from scorer.jobs.run_state import BackfillSummary, Context, SessionResult
    from scorer.langfuse_client import LangfuseClient

PAGE = 100


def pick_escalations(
    results: Iterable[Any],
    *,
    below: float | None,
    calibration: int = 0,
    seed: int = 0,
    already: set[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Session ids to escalate and to sample for calibration (pure, deterministic).

    Args:
        results: Objects with `session_id`, `outcome`, `overall`, `recommendation`.
        below: Escalate when overall < this (0..1); None: only `escalate` recommendations.
        calibration: How many other scored sessions to add at random.
        seed: Seed of the calibration sample.
        already: Sessions queued earlier (skipped).

    Returns:
        `(escalated, calibration_sample)`, each sorted.
    """
    already = already or set()
    scored = [r for r in results if r.outcome == "scored" and r.session_id not in already]
    low = sorted(
        r.session_id
        for r in scored
        if r.recommendation == "escalate"
        or (below is not None and r.overall is not None and r.overall < below)
    )
    rest = sorted(r.session_id for r in scored if r.session_id not in set(low))
    sample = random.Random(f"calibration:{seed}").sample(rest, min(calibration, len(rest)))
    return low, sorted(sample)


def traced_in_langfuse(client: LangfuseClient, session_ids: Iterable[str]) -> set[str]:
    """The sessions Langfuse has observations for: a local-only session (never traced)
    cannot be reviewed there, so it is never queued."""
    from scorer.sources.langfuse import fetch_observations

    return {
        sid
        for sid in dict.fromkeys(session_ids)
        if fetch_observations(client, session_id=sid, is_root_observation=True, fields="core")
    }


def _call(client: LangfuseClient, fn_name: str, *args: Any, what: str, **kwargs: Any) -> Any:
    """One annotation-queue call through the shared retry policy (429/5xx are retried)."""
    fn = getattr(client.api.annotation_queues, fn_name)
    return client.call(fn, *args, error=SinkError, what=what, **kwargs)


def find_or_create_queue(client: LangfuseClient, name: str, config_ids: list[str]) -> str:
    """The id of the queue called `name`, created (bound to `config_ids`) if missing."""
    page = 1
    while True:
        listing = _call(
            client, "list_queues", what="listing annotation queues", page=page, limit=PAGE
        )
        for queue in listing.data:
            if queue.name == name:
                return queue.id
        if page >= (listing.meta.total_pages or 1):
            break
        page += 1
    created = _call(
        client,
        "create_queue",
        what=f"creating annotation queue {name!r}",
        name=name,
        score_config_ids=config_ids,
        description="Sessions escalated by session-scorer (low overall, `escalate`, calibration).",
    )
    return created.id


def queued_objects(client: LangfuseClient, queue_id: str) -> set[str]:
    """Object ids already on the queue (any status)."""
    ids: set[str] = set()
    page = 1
    while True:
        listing = _call(
            client, "list_queue_items", queue_id, what="listing queue items", page=page, limit=PAGE
        )
        ids.update(item.object_id for item in listing.data)
        if page >= (listing.meta.total_pages or 1):
            return ids
        page += 1


def enqueue(
    client: LangfuseClient,
    queue_name: str,
    session_ids: list[str],
    *,
    config_ids: list[str] | None = None,
) -> list[str]:
    """Add sessions to the named queue (deduped); returns the ids now on it.

    Args:
        client: The Langfuse project of the queue.
        queue_name: Found by name, or created.
        session_ids: Sessions to add.
        config_ids: Score config ids for a new queue; default: the rubric's, synced.
    """
    from langfuse.api.annotation_queues.types import AnnotationQueueObjectType

    if config_ids is None:
        config_ids = _rubric_config_ids(client)
    try:
        queue_id = find_or_create_queue(client, queue_name, config_ids)
        present = queued_objects(client, queue_id)
        for sid in session_ids:
            if sid not in present:
                _call(
                    client,
                    "create_queue_item",
                    queue_id,
                    what=f"queueing session {sid}",
                    object_id=sid,
                    object_type=AnnotationQueueObjectType.SESSION,
                )
                present.add(sid)
    except (SinkError, CredentialsError):
        raise
    except Exception as exc:  # SDK ApiError / transport error → our typed error
        raise SinkError(
            f"annotation queue {queue_name!r}: {exc.__class__.__name__}: {exc}"
        ) from exc
    return list(session_ids)


def _rubric_config_ids(client: LangfuseClient) -> list[str]:
    from scorer.judge.rubric import default_rubric
    from scorer.sinks.langfuse import config_ids

    rubric = default_rubric()
    ids = config_ids(client, rubric)
    return [ids[s.name] for s in rubric.scores if s.name in ids]


def escalate_run(
    ctx: Context, client: LangfuseClient, results: list[SessionResult], summary: BackfillSummary
) -> None:
    """Queue a finished run's escalations and calibration sample (`--escalate-below`,
    `--calibration-sample`); records them in the ledger and the summary."""
    low, calib = pick_escalations(
        results,
        below=ctx.opts.escalate_below,
        calibration=ctx.opts.calibration_sample,
        seed=ctx.opts.seed,
        already=ctx.ledger.queued(),
    )
    if ctx.opts.source != "langfuse":  # a local session may never have been traced
        traced = traced_in_langfuse(client, [*low, *calib])
        summary.not_queued = sorted(set(low + calib) - traced)
        low, calib = [s for s in low if s in traced], [s for s in calib if s in traced]
    if not (low or calib):
        return
    queued = enqueue(client, ctx.opts.queue, [*low, *calib])
    ctx.ledger.mark_queued(queued)
    summary.escalated, summary.calibration = low, calib
