"""Capture a tmux session's scrollback, with a disk cache for sessions that are gone.

Every successful capture is written to `$SCORER_HOME/tmux-cache/<session>.txt`, and the
session's creation time beside it (`<session>.json`); when the session (or the whole
tmux server) has disappeared, the last cached text is returned with `from_cache=True`,
so a finished run can still be scored (under the same session id: `sources._ids`).
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import libtmux
from libtmux import exc as tmux_exc
from pydantic import BaseModel, Field

from scorer._fs import write_atomic
from scorer.errors import SourceError
from scorer.settings import get_settings

_PANE_FORMAT = "\t".join(
    [
        "#{pane_id}",
        "#{window_index}",
        "#{window_name}",
        "#{pane_index}",
        "#{pane_current_path}",
        "#{pane_current_command}",
    ]
)


class PaneCapture(BaseModel):
    """The text of one pane."""

    label: str
    """`window_index:window_name.pane_index`, or the target for a cached capture."""
    pane_id: str | None = None
    text: str
    current_path: str | None = None
    current_command: str | None = None


class Capture(BaseModel):
    """What `capture` read: one pane, or every pane of the target when asked."""

    target: str
    session_name: str
    socket: str | None = None
    panes: list[PaneCapture] = Field(default_factory=list)
    captured_at: datetime
    session_created: datetime | None = None
    """When tmux created the session (`#{session_created}`); None for a capture cached
    by a version that did not keep it."""
    from_cache: bool = False
    """True when the session was gone and the last cached capture was used."""

    @property
    def text(self) -> str:
        """All panes' text; each pane under a `=== pane <label> ===` header when several."""
        if len(self.panes) == 1:
            return self.panes[0].text
        return "\n\n".join(f"=== pane {p.label} ===\n{p.text}" for p in self.panes)


def session_name(target: str) -> str:
    """The session part of a tmux target (`work:1.0` → `work`)."""
    return target.split(":", 1)[0]


def cache_path(target: str) -> Path:
    """Where the last capture of `target`'s session is cached."""
    safe = re.sub(r"[^\w.-]", "_", session_name(target)) or "_"
    return get_settings().home / "tmux-cache" / f"{safe}.txt"


def _meta_path(target: str) -> Path:
    return cache_path(target).with_suffix(".json")


def _session_created(server: libtmux.Server, target: str) -> datetime | None:
    out = _run(server, "display-message", "-p", "-t", session_name(target), "#{session_created}")
    try:
        return datetime.fromtimestamp(int(out[0]), tz=UTC) if out else None
    except ValueError:
        return None


def _cached_created(target: str) -> datetime | None:
    try:
        data = json.loads(_meta_path(target).read_text(encoding="utf-8"))
        return datetime.fromisoformat(data["session_created"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _socket_label(socket_name: str | None, socket_path: str | None) -> str:
    return socket_path or (f"-L {socket_name}" if socket_name else "default")


def _run(server: libtmux.Server, *args: str) -> list[str] | None:
    """Run a tmux command; None when it failed (no server, no such session/pane)."""
    try:
        result = server.cmd(*args)
    except (tmux_exc.LibTmuxException, OSError):
        return None
    if result.returncode != 0:
        return None
    return result.stdout


def _capture_pane(server: libtmux.Server, pane: str, lines: int) -> str | None:
    # -J joins wrapped lines; -S -N starts N lines back in the history.
    out = _run(server, "capture-pane", "-p", "-J", "-S", f"-{lines}", "-t", pane)
    if out is None:
        return None
    while out and not out[-1].strip():
        out.pop()  # the unused rows below the prompt
    return "\n".join(out[-lines:])


def _list_panes(server: libtmux.Server, target: str, all_panes: bool) -> list[list[str]]:
    # `-s` lists the whole session; a target naming a window/pane lists that window.
    scope = ["-s"] if all_panes and ":" not in target else []
    if not all_panes:
        out = _run(server, "display-message", "-p", "-t", target, _PANE_FORMAT)
    else:
        out = _run(server, "list-panes", *scope, "-t", target, "-F", _PANE_FORMAT)
    return [line.split("\t") for line in out or [] if line.count("\t") == 5]


def _live_capture(
    server: libtmux.Server, target: str, lines: int, all_panes: bool
) -> list[PaneCapture] | None:
    if _run(server, "has-session", "-t", session_name(target)) is None:
        return None
    panes = []
    for pane_id, win_idx, win_name, pane_idx, path, command in _list_panes(
        server, target, all_panes
    ):
        text = _capture_pane(server, pane_id, lines)
        if text is not None:
            label = f"{win_idx}:{win_name}.{pane_idx}"
            panes.append(
                PaneCapture(
                    label=label,
                    pane_id=pane_id,
                    text=text,
                    current_path=path or None,
                    current_command=command or None,
                )
            )
    return panes or None


def _from_cache(target: str, socket: str) -> Capture | None:
    path = cache_path(target)
    if not path.is_file():
        return None
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return Capture(
        target=target,
        session_name=session_name(target),
        socket=socket,
        panes=[PaneCapture(label=target, text=path.read_text(encoding="utf-8"))],
        captured_at=stamp,
        session_created=_cached_created(target),
        from_cache=True,
    )


def capture(
    target: str,
    *,
    lines: int = 2000,
    all_panes: bool = False,
    socket_name: str | None = None,
    socket_path: str | None = None,
) -> Capture:
    """Capture the last `lines` lines of a tmux pane (or of every pane of the target).

    Args:
        target: A tmux target: `session`, `session:window` or `session:window.pane`.
        lines: How many lines of scrollback (plus the visible screen) to keep per pane.
        all_panes: Capture every pane of the session (or of the named window), labelled.
        socket_name: tmux `-L` socket name.
        socket_path: tmux `-S` socket path.

    Returns:
        The capture; `from_cache=True` when the session is gone and the cache was used.

    Raises:
        SourceError: The session is not running and nothing was cached for it.
    """
    socket = _socket_label(socket_name, socket_path)
    server = libtmux.Server(socket_name=socket_name, socket_path=socket_path)
    panes = _live_capture(server, target, lines, all_panes)
    if panes is None:
        cached = _from_cache(target, socket)
        if cached is None:
            raise SourceError(
                f"tmux session {session_name(target)!r} not found (socket {socket}); "
                "no cached capture either"
            )
        return cached
    result = Capture(
        target=target,
        session_name=session_name(target),
        socket=socket,
        panes=panes,
        captured_at=datetime.now(UTC),
        session_created=_session_created(server, target),
    )
    _write_cache(target, result)
    return result


def _write_cache(target: str, result: Capture) -> None:
    """Keep the capture for when the session is gone: redacted (nothing stored may hold a
    secret), owner-only, and written atomically so a reader never sees half a capture;
    then the session's creation time, which its id needs."""
    from scorer.prepare.redact import redact_text

    clean, _ = redact_text(result.text)
    path = cache_path(target)
    write_atomic(path, clean)
    path.chmod(0o600)
    created = result.session_created.isoformat() if result.session_created else None
    write_atomic(_meta_path(target), json.dumps({"session_created": created}))
