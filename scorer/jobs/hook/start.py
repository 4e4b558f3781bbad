"""The hook's foreground: read the payload, refuse cheaply or start the worker, return.

This is all a Claude Code session waits for when it ends, so it imports nothing but the
standard library (and platformdirs): no typer, no pydantic, no settings. It reads the two
knobs it can act on without them (`SCORER_HOOK_ENABLED`, `SCORER_HOOK_EVENTS`) from the
environment; the worker applies the whole policy with the real settings, `.env` included,
and refuses there what this could not see.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from scorer.jobs.hook.log import start_logging
from scorer.jobs.hook.request import TRIGGERS, PayloadError, parse_payload

log = logging.getLogger("scorer.hook")

_FALSE = frozenset({"0", "false", "f", "no", "n", "off"})
"""What pydantic reads as false for a bool setting."""


def data_home(environ: Mapping[str, str] = os.environ) -> Path:
    """`SCORER_HOME` as the settings see it, without loading them."""
    if environ.get("SCORER_HOME"):
        return Path(environ["SCORER_HOME"]).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir("session-scorer"))


def enter_home(environ: Mapping[str, str] = os.environ) -> Path:
    """Work from the data dir, so its `.env` applies and the project's does not."""
    home = data_home(environ)
    try:
        home.mkdir(parents=True, exist_ok=True)
        os.chdir(home)
    except OSError:
        pass  # settings from the environment alone
    return home


def quick_refusal(event: str, environ: Mapping[str, str] = os.environ) -> str | None:
    """Why a hook event is not scored, judged from the environment alone (or None)."""
    if environ.get("SCORER_HOOK_ENABLED", "").strip().lower() in _FALSE:
        return "automatic scoring is off (SCORER_HOOK_ENABLED=0)"
    events = {e.strip() for e in environ.get("SCORER_HOOK_EVENTS", "SessionEnd").split(",")}
    if event in TRIGGERS and event not in events:
        return f"{event} is not a trigger (SCORER_HOOK_EVENTS)"
    return None


def start_from_hook(raw: bytes, environ: Mapping[str, str] = os.environ) -> int | None:
    """Handle one hook payload: log, and start the worker unless refused.

    Returns:
        The worker's pid, or None when nothing was started. Never raises.
    """
    try:
        home = enter_home(environ)
        start_logging(home, redact=False)
        return _start(raw, home, environ)
    except BaseException as exc:  # never fail (or slow) the user's session
        with contextlib.suppress(BaseException):
            log.exception("scorer hook failed: %s", exc)
        return None


def _start(raw: bytes, home: Path, environ: Mapping[str, str]) -> int | None:
    from scorer.jobs.hook.detach import detach

    try:
        request = parse_payload(raw)
    except PayloadError as exc:
        log.warning("ignored a hook call: %s", exc)
        return None
    refusal = quick_refusal(request.event, environ)
    if refusal:
        # A Stop that is not a trigger comes on every turn: not worth a line each time.
        level = logging.DEBUG if "not a trigger" in refusal else logging.INFO
        log.log(level, "%s: not scored: %s", request.label(), refusal)
        return None
    try:
        pid = detach(request.to_argv(), cwd=home)
    except OSError as exc:
        log.error("%s: could not start the scoring worker: %s", request.label(), exc)
        return None
    log.info("%s: %s: scoring in the background (pid %d)", request.label(), request.event, pid)
    return pid
