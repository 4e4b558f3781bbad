"""What every command shares: error → one red line + exit code, consoles, .env loading.

Exit codes (documented in the README):
    0  scored (or the command succeeded)
    1  error (bad input, missing credentials, API failure) — one line on stderr
    2  usage error (typer/click)
    3  the judge could not score the session (unscored; reason printed)
    4  escalation: overall below `--escalate-below`
    5  backfill left sessions unstarted (the `--max-cost` cap was reached)
  130  interrupted (Ctrl-C)
Set SCORER_DEBUG=1 to re-raise with the traceback.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, TypeVar

import typer
from rich.console import Console
from rich.markup import escape

from scorer.errors import ScorerError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_UNSCORED = 3
EXIT_ESCALATE = 4
EXIT_NOT_STARTED = 5
EXIT_PARTIAL = 6
"""`score-backfill` finished but left sessions failed or incomplete (the rest is done)."""
EXIT_INTERRUPTED = 130

EXIT_CODES = (
    "[bold]Exit codes:[/] 0 ok · 1 error (bad input, credentials, API failure) · "
    "2 usage error (a bad option or value) · 3 unscored · 4 escalation "
    "(--escalate-below) · 5 sessions not started (backfill --max-cost) · 6 sessions left "
    "failed or incomplete (backfill: run it again) · 130 interrupted"
)

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)

log = logging.getLogger("scorer")


class _StderrHandler(logging.Handler):
    """`note: …` / `warning: …` lines on stderr through the rich console."""

    def emit(self, record: logging.LogRecord) -> None:
        kind = {logging.INFO: "note", logging.WARNING: "warning"}.get(record.levelno)
        kind = kind or record.levelname.lower()
        style = {"warning": "yellow", "error": "red", "debug": "dim"}.get(kind, "")
        text = escape(self.format(record))
        err.print(f"[{style}]{kind}:[/] {text}" if style else f"{kind}: {text}", highlight=False)


_handler = _StderrHandler()
_quiet = False


def set_verbosity(*, quiet: bool = False, verbose: int = 0) -> None:
    """Log levels for this run: notes by default, `-q` only warnings and errors, `-v`
    debug logs of ours, `-vv` also those of the HTTP libraries (anthropic, httpx)."""
    global _quiet
    _quiet = quiet
    root = logging.getLogger()
    for logger in (log, root):
        if _handler in logger.handlers:
            logger.removeHandler(_handler)
    (root if verbose > 1 else log).addHandler(_handler)
    log.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
    root.setLevel(logging.DEBUG if verbose > 1 else logging.WARNING)


def is_quiet() -> bool:
    """`-q` was given: no notes and no progress displays."""
    return _quiet


def note(message: str) -> None:
    """A `note: …` line on stderr, unless `-q`."""
    if not _quiet:
        err.print(f"note: {escape(message)}", highlight=False)


F = TypeVar("F", bound=Callable[..., Any])


class EffortName(StrEnum):
    """`output_config.effort` of the LLM judge (thinking budget)."""

    low = "low"
    medium = "medium"
    high = "high"
    xhigh = "xhigh"
    max = "max"


EffortOption = Annotated[
    EffortName | None,
    typer.Option(help="LLM judge thinking effort (default: SCORER_EFFORT, medium)."),
]


def model_option(param: typer.CallbackParam, value: str | None) -> str | None:
    """Callback of `--model` / `--fallback-model`: one word, or a usage error (exit 2)."""
    from scorer.prepare.fence import one_line as shown
    from scorer.settings import check_model_name

    if value is not None:
        try:
            check_model_name(value)
        except ValueError as exc:
            flag = max(param.opts, key=len) if param.opts else str(param.name)
            raise fail(f"{flag} {shown(value)!r} {exc}", 2) from None
    return value


FinalStateOption = Annotated[
    bool | None,
    typer.Option(
        "--final-state/--no-final-state",
        help="Add the workspace's final state (git status, diff since the session's first "
        "commit, the task's deliverables) when its repository is here (default: "
        "SCORER_FINAL_STATE, on).",
    ),
]
SecondOpinionsOption = Annotated[
    bool | None,
    typer.Option(
        "--second-opinions/--no-second-opinions",
        help="Ask the LLM judge twice more when its goal verdict is uncertain (default: "
        "SCORER_SECOND_OPINIONS, on).",
    ),
]


FallbackOption = Annotated[
    str | None,
    typer.Option(
        "--fallback-model",
        callback=model_option,
        help="Retry a refused request on this model (default: SCORER_FALLBACK_MODEL, "
        "claude-sonnet-4-6; '' for none).",
    ),
]


def effort_value(effort: EffortName | None) -> str | None:
    return effort.value if effort is not None else None


class PushTarget(StrEnum):
    """What Langfuse scores attach to: the session (default) or its first trace."""

    session = "session"
    trace = "trace"


def _debug() -> bool:
    from scorer.settings import get_settings  # pydantic-settings: 0.2 s, not for --version

    try:
        return get_settings().debug
    except Exception:  # the settings themselves are invalid: that error is being reported
        return False


def fail(message: str, code: int = EXIT_ERROR) -> typer.Exit:
    """Print one red line on stderr (secrets redacted: it may quote a URL or a command)
    and return the Exit to raise."""
    from scorer.prepare.redact import redact_text

    err.print(
        f"[bold red]error:[/] {escape(redact_text(message)[0])}", markup=True, highlight=False
    )
    return typer.Exit(code)


def one_line(exc: BaseException) -> str:
    """The error as one line for a person: our messages as they are; an OS error as
    `FILE: reason` (never Python's `[Errno 2] …` form)."""
    text = _os_error(exc) if isinstance(exc, OSError) else str(exc).strip()
    if isinstance(exc, UnicodeDecodeError):
        text = (
            f"not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} at offset {exc.start})"
        )
    text = text or exc.__class__.__name__
    if isinstance(exc, ScorerError) and exc.spent_usd:  # the calls made before are billed
        text += f" (judge calls made before this cost ${exc.spent_usd:.4f})"
    return " ".join(text.split())


def _os_error(exc: OSError) -> str:
    reason = exc.strerror or exc.__class__.__name__
    reason = reason[0].lower() + reason[1:]
    if exc.filename is None:
        return reason
    names = [str(exc.filename)] + ([str(exc.filename2)] if exc.filename2 else [])
    return f"{' -> '.join(names)}: {reason}"


def handle_errors(fn: F) -> F:
    """Turn our typed errors (and a few OS errors) into one line + exit code."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(EXIT_INTERRUPTED) from None
        except (ScorerError, OSError, UnicodeDecodeError) as exc:
            if _debug():
                raise
            raise fail(one_line(exc), getattr(exc, "exit_code", EXIT_ERROR)) from None

    return wrapper  # type: ignore[return-value]


def print_json(payload: Any) -> None:
    """Machine output: exactly one JSON document on stdout."""
    import json

    sys.stdout.write(json.dumps(payload, default=str, ensure_ascii=False) + "\n")
    sys.stdout.flush()
