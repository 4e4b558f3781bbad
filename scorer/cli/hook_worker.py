"""The background worker of `scorer hook`: `python -m scorer.cli.hook_worker OPTIONS`.

A hook (`jobs.hook.start`) or `scorer hook` starts it detached (`jobs.hook.detach`) with
the options `HookRequest.to_argv` writes, and returns. It scores that one session
(`jobs.hook.worker.HookJob`), then retries what the store refused before
(`jobs.hook.deferred`), and prints nothing: everything goes to the hook log.

Its time is the time from a session's end to its stored card, so it loads only what the
job needs: no typer, no rich, and no Anthropic SDK (the LLM judge goes over plain HTTP,
`judge.http_transport`). `scorer hook --worker` runs the same `work`.
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path

from scorer.jobs.hook.request import MANUAL, HookRequest

log = logging.getLogger("scorer.hook")


OPTIONS = ("--event", "--session-id", "--transcript", "--cwd", "--reason")
"""What `HookRequest.to_argv` writes, each with one value (argparse would import gettext
and more for five fixed options)."""


def parse(argv: list[str]) -> HookRequest:
    """The request in the worker's options (`HookRequest.to_argv`).

    Raises:
        ValueError: Options that no hook wrote.
    """
    if len(argv) % 2:
        raise ValueError(f"options without a value: {argv}")
    given = dict(zip(argv[::2], argv[1::2], strict=True))
    unknown = sorted(set(given) - set(OPTIONS))
    if unknown:
        raise ValueError(f"unknown worker options: {', '.join(unknown)}")
    transcript = Path(given["--transcript"]) if given.get("--transcript") else None
    return HookRequest(
        given.get("--session-id"), transcript, given.get("--event") or MANUAL,
        given.get("--cwd"), given.get("--reason"),
    )  # fmt: skip


def work(request: HookRequest) -> None:
    """Score the request's session, then retry the deferred jobs (if the store works).

    Raises:
        ConfigError: A bad setting (logged by the caller).
    """
    from scorer.jobs.hook.deferred import retry_deferred
    from scorer.jobs.hook.policy import HookPolicy
    from scorer.jobs.hook.worker import HookEnv, HookJob
    from scorer.settings import get_settings

    settings = get_settings()
    policy, env = HookPolicy.from_settings(settings), HookEnv.from_settings(settings)
    job = HookJob(request, policy, env)
    outcome = job.run()
    if not outcome.deferred:  # the store works: finish what it refused before
        retry_deferred(policy, env)
    job.linger()  # batch mode: keep the queue's time while sessions wait


def main(argv: list[str] | None = None) -> None:
    """Entry point; never raises (a detached process has nobody to show it to)."""
    import sys

    from scorer._gc import freeze_at_exit
    from scorer.jobs.hook.log import start_logging
    from scorer.jobs.hook.start import enter_home

    warnings.simplefilter("ignore")
    freeze_at_exit()  # no walk over the whole heap as the process exits
    start_logging(enter_home())
    try:
        request = parse(sys.argv[1:] if argv is None else argv)
    except ValueError as exc:
        log.error("scorer hook worker: %s", exc)
        return
    try:
        work(request)
    except BaseException as exc:  # a bad setting, or a bug: the log keeps it
        from scorer.errors import ConfigError

        if isinstance(exc, ConfigError):
            log.error("%s: not scored: %s", request.label(), exc)
        elif not isinstance(exc, SystemExit | KeyboardInterrupt):
            log.exception("%s: the worker failed: %s", request.label(), exc)


if __name__ == "__main__":
    main()
