"""The next hook run finishes what the store could not take (see `retry`).

A worker, once its own session is done and the store took it, goes through the retry
folder: each job that is due is taken (so no other worker runs it too) and run again as
the `HookJob` it was, with the card an earlier try judged stored as it is rather than
judged again. A job the store still refuses goes back, with one more try counted, and
the rest wait for a later run: the store is still in trouble.
"""

from __future__ import annotations

import contextlib
import logging
import time

from scorer.jobs.hook.policy import HookPolicy
from scorer.jobs.hook.worker import HookEnv, HookJob, Outcome

log = logging.getLogger("scorer.hook")

PER_RUN = 5
"""Jobs one worker retries at most (the rest wait for the next hook run)."""


def retry_deferred(
    policy: HookPolicy, env: HookEnv, *, limit: int = PER_RUN, now: float | None = None
) -> list[Outcome]:
    """Retry the due jobs of the retry folder; their outcomes, in order.

    Args:
        policy: The policy (a job asked for by name, `enforce=False`, ignores it again).
        env: Paths and keys; `env.retries` is the folder.
        limit: Jobs retried at most.
        now: The time their waits are measured at (tests).
    """
    queue = env.retries
    outcomes: list[Outcome] = []
    for path in queue.pending():
        if len(outcomes) >= limit:
            break
        taken = queue.take(path, now)
        if taken is None:
            continue
        job, file = taken
        who = job.session_id or job.transcript
        log.info("%s: retrying, try %d (the store failed: %s)", who, job.attempts + 1, job.why)
        try:
            outcome = HookJob(job.request(), policy, env, enforce=job.enforce, deferred=job).run()
        finally:
            queue.release(file)  # done, or written back by the job as its next try
        outcomes.append(outcome)
        if outcome.state == "busy" and job.card is not None:  # keep the card for later
            job.attempts, job.at = job.attempts + 1, time.time()
            with contextlib.suppress(OSError):
                queue.add(job)
        if outcome.deferred:
            break
    return outcomes
