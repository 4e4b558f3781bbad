"""`scorer hook`: score a Claude Code session when it ends (the plugin's hook), or on demand.

Three ways in:

- **As a hook** (no options; a Claude Code hook payload on stdin): decides in a fraction of
  a second whether the session is to be scored, starts a detached worker that does it,
  and exits 0. It prints nothing and never fails the session: everything goes to
  `$SCORER_HOME/logs/hook.log`.
- **From an orchestrator** (`--transcript PATH` and/or `--session-id ID`): the same, for a
  session you name (a tmux loop, a CI job). `--wait` does the work in this process (a CI
  container may kill detached processes when the job ends) and prints one line.
- **On demand** (`--now`, the plugin's `/score`): scores here and now, ignoring the
  automatic-scoring policy, and prints the scorecard summary.
- **Collect** (`--collect`, `SCORER_HOOK_MODE=batch`): fetches the cards of ended Message
  Batches (printing one line per session), and sends the queue if it is due.

Settings come from the environment and `$SCORER_HOME/.env`, never from a `.env` in the
working directory (a hook runs in whatever project the session was in).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal, NoReturn

import typer

from scorer.cli._common import fail, handle_errors, one_line
from scorer.errors import ScorerError
from scorer.jobs.hook.request import PayloadError

if TYPE_CHECKING:
    from scorer.jobs.hook.policy import HookPolicy
    from scorer.jobs.hook.request import HookRequest
    from scorer.jobs.hook.worker import HookJob, Outcome

log = logging.getLogger("scorer.hook")

Mode = Literal["detach", "worker", "wait", "now", "collect"]
"""A hook or an orchestrator's call (detach a worker), the worker itself, or attached."""
EXIT_CODES = {"failed": 1, "unscored": 3}
"""`--now`/`--wait` exit codes by outcome (0 otherwise); the hook itself always exits 0."""


def _request(
    transcript: Path | None,
    session_id: str | None,
    event: str | None,
    cwd: str | None,
    reason: str | None,
) -> HookRequest:
    """The request from the options, or from the payload on stdin.

    Raises:
        PayloadError: stdin holds no usable payload.
        typer.Exit: Code 2 when stdin is a terminal (a person, not a hook).
    """
    from scorer.jobs.hook.request import MANUAL, HookRequest, parse_payload

    if transcript is None and session_id is None:
        if sys.stdin is None or sys.stdin.isatty():  # a person at a terminal, not a hook
            from scorer.cli._validate import usage_error

            raise usage_error(
                "no hook payload on stdin: pipe one in, or give --transcript or --session-id"
            )
        request = parse_payload(sys.stdin.buffer.read(2_000_000), event=event)
        return request if request.cwd or not cwd else replace(request, cwd=cwd)
    return HookRequest(session_id, transcript, event=event or MANUAL, cwd=cwd, reason=reason)


@handle_errors
def hook_command(
    transcript: Annotated[
        Path | None,
        typer.Option(help="Score this transcript (instead of reading a hook payload)."),
    ] = None,
    session_id: Annotated[
        str | None,
        typer.Option(help="The session id to score under (default: the transcript's)."),
    ] = None,
    event: Annotated[
        str | None,
        typer.Option(help="The hook event (default: the payload's; `manual` for named ones)."),
    ] = None,
    cwd: Annotated[
        str | None, typer.Option(help="The session's project dir (allow/ignore lists).")
    ] = None,
    now: Annotated[
        bool,
        typer.Option("--now", help="Score here and now, policy ignored; print the scorecard."),
    ] = False,
    wait: Annotated[
        bool, typer.Option("--wait", help="Do the work in this process; print one line.")
    ] = False,
    rescore: Annotated[
        bool, typer.Option("--rescore", help="Judge again even if the transcript is unchanged.")
    ] = False,
    current: Annotated[
        bool,
        typer.Option(
            "--current",
            help="--now for the session running this command (the plugin's /score): "
            "always exit 0, and say in one line when it has nothing to score yet.",
        ),
    ] = False,
    collect: Annotated[
        bool,
        typer.Option(
            "--collect",
            help="Batch mode: store the cards of ended Message Batches, one line per session.",
        ),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="--now/--wait/--collect: JSON (a line per object).")
    ] = False,
    reason: Annotated[str | None, typer.Option(hidden=True)] = None,
    worker: Annotated[bool, typer.Option("--worker", hidden=True)] = False,
) -> None:
    """Score a Claude Code session when it ends: reads the hook payload on stdin, answers at
    once and scores in the background (log: $SCORER_HOME/logs/hook.log). With --transcript /
    --session-id, score the session you name; --now scores on the spot."""
    mode: Mode = "now" if now or current else "wait" if wait else "worker" if worker else "detach"
    mode = "collect" if collect else mode
    if current and not session_id:
        _say("No session to score: /score runs inside Claude Code, which names the session.")
    attached = mode in ("now", "wait", "collect")
    if not attached:  # a hook or a worker: nothing may reach the user's terminal
        warnings.simplefilter("ignore")
    # Relative to where we were called from, before moving to the data dir.
    transcript = transcript.expanduser().absolute() if transcript else None
    if cwd is None and (transcript is not None or session_id is not None):
        cwd = os.getcwd()
    from scorer.jobs.hook.log import start_logging
    from scorer.jobs.hook.start import enter_home

    start_logging(enter_home(), redact=mode != "detach")
    if mode == "collect":
        raise typer.Exit(_collect(as_json=as_json))
    try:
        request = _request(transcript, session_id, event, cwd, reason)
        code = _dispatch(request, mode, rescore=rescore, as_json=as_json, current=current)
    except typer.Exit:
        raise
    except (ScorerError, OSError) as exc:
        if not current:
            raise
        _say(f"Session {session_id} was not scored: {one_line(exc)}")
    except PayloadError as exc:
        log.warning("ignored a hook call: %s", exc)
        if attached:
            raise fail(str(exc)) from None
        code = 0
    except Exception as exc:
        if attached:
            raise  # one red line (handle_errors), or a traceback for a bug
        log.exception("scorer hook failed: %s", exc)  # logged, never shown in the session
        code = 0
    raise typer.Exit(code if attached else 0)


def _say(line: str) -> NoReturn:
    """`--current`'s answer when there is no card: one line, exit 0 (Claude Code shows a
    slash command that failed as a raw shell error, not its text)."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    raise typer.Exit(0)


def _dispatch(
    request: HookRequest, mode: Mode, *, rescore: bool, as_json: bool, current: bool = False
) -> int:
    """Detach a worker, or do the job here (worker, --wait, --now); the exit code."""
    from scorer.errors import ConfigError
    from scorer.jobs.hook.policy import HookPolicy
    from scorer.settings import get_settings

    try:
        policy = HookPolicy.from_settings(get_settings())
    except ConfigError as exc:
        log.error("%s: not scored: %s", request.label(), exc)
        if mode in ("now", "wait"):
            raise
        return 0
    if mode == "detach":
        return _start_worker(request, policy)
    if mode == "worker":  # what `python -m scorer.cli.hook_worker` runs
        from scorer.cli.hook_worker import work

        work(request)
        return 0
    from scorer.jobs.hook.worker import HookEnv, HookJob

    env = HookEnv.from_settings(get_settings())
    if current:
        _nothing_yet(request, env.projects_root)
    job = HookJob(request, policy, env, enforce=mode != "now", rescore=rescore)
    outcome = job.run()
    if current and outcome.state == "skipped":
        _say(f"Nothing to score yet: {outcome.reason}.")
    if mode == "worker":
        job.linger()  # batch mode: keep the queue's time while sessions wait
        return 0
    _report(outcome, job, as_json=as_json, full=mode == "now")
    return 0 if current else EXIT_CODES.get(outcome.state, 0)


def _nothing_yet(request: HookRequest, projects_root: Path) -> None:
    """`/score` before Claude Code wrote the session's transcript (its first prompt)."""
    from scorer.errors import SourceError
    from scorer.jobs.hook.worker import locate

    try:
        locate(request, projects_root)
    except SourceError:
        _say(
            "Nothing to score yet: this session has no transcript so far (Claude Code "
            "writes it once the session has done some work); run /score again later."
        )


def _collect(*, as_json: bool) -> int:
    """`--collect`: one line (or JSON object) per collected session on stdout, what still
    waits on stderr.

    Raises:
        CredentialsError: Sessions wait in Message Batches and no API key is set.
    """
    from scorer.errors import CredentialsError
    from scorer.jobs.hook.batch import HookBatches
    from scorer.jobs.hook.policy import HookPolicy
    from scorer.jobs.hook.worker import HookEnv
    from scorer.settings import get_settings

    settings = get_settings()
    batches = HookBatches(HookPolicy.from_settings(settings), HookEnv.from_settings(settings))
    if batches.waiting() == (0, 0):
        sys.stderr.write("nothing waits for a Message Batch\n")
        return 0
    if not settings.anthropic_configured:
        raise CredentialsError("ANTHROPIC_API_KEY is not set: Message Batches need it")
    for item in batches.round(wait=120):
        line = json.dumps(item.payload(), default=str) if as_json else item.line()
        sys.stdout.write(line + "\n")
    queued, submitted = batches.waiting()
    if queued or submitted:
        sys.stderr.write(f"still waiting: {submitted} in Message Batches, {queued} queued\n")
    sys.stdout.flush()
    return 0


def _start_worker(request: HookRequest, policy: HookPolicy) -> int:
    """Refuse cheaply, or detach a worker. Always 0."""
    from scorer.jobs.hook.detach import detach

    refusal = policy.refuse(request)
    if refusal:
        log.info("%s: not scored: %s", request.label(), refusal)
        return 0
    try:
        pid = detach(request.to_argv(), cwd=Path.cwd())
    except OSError as exc:
        log.error("%s: could not start the scoring worker: %s", request.label(), exc)
        return 0
    log.info("%s: scoring in the background (pid %d)", request.label(), pid)
    return 0


def _report(outcome: Outcome, job: HookJob, *, as_json: bool, full: bool) -> None:
    from scorer.cli.hook_report import outcome_payload, render_outcome

    card = outcome.card
    if card is None and outcome.state == "unchanged" and outcome.session_id:
        from scorer.sinks.store import ScoreStore

        with ScoreStore(job.env.store_path) as store:
            card = store.latest(
                outcome.session_id, judge=job.kind, model=job.model, collection="production"
            )
    if as_json:
        sys.stdout.write(json.dumps(outcome_payload(outcome, card), default=str) + "\n")
    else:
        sys.stdout.write(render_outcome(outcome, card, full=full) + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> None:
    """Entry point of `scorer hook` (and of the worker, `python -m scorer.cli.hook`)."""
    from scorer.cli._conventions import entry_point

    if argv is not None:
        sys.argv = [sys.argv[0], *argv]
    entry_point(hook_command, "scorer hook")


if __name__ == "__main__":
    main()
