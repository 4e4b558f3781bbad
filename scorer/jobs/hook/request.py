"""What one hook call asks for: a session to score, read from a Claude Code hook payload
or from an orchestrator's `--transcript PATH --session-id ID` (pure, stdlib only).

Claude Code sends Stop and SessionEnd hooks a JSON object on stdin; the fields used here
were checked against a real hook-payload log (oneryalcin/fasthooks
`specs/data/sample_hook_logs.jsonl`) and the official Langfuse plugin's reader, which
also accepts camelCase names (`sessionId`, `transcriptPath`, `hookEventName`)::

    {"session_id": "c45af7b1-…", "transcript_path": "~/.claude/projects/-x/c45af7b1-….jsonl",
     "cwd": "/workspace", "permission_mode": "default", "hook_event_name": "SessionEnd",
     "reason": "prompt_input_exit"}

The session id is the hook's, not the transcript's: it is the id the Langfuse tracing
plugin files its traces under, so scores pushed with it land on that session.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_PAYLOAD_BYTES = 1_000_000
"""A hook payload is a few hundred bytes; anything this big is not one."""

TRIGGERS = ("SessionEnd", "Stop")
"""Hook events that can start automatic scoring."""
MANUAL = "manual"
"""The event of a call that names its session (`--transcript`/`--session-id`, `/score`)."""


class PayloadError(ValueError):
    """The hook's stdin is not a usable payload (the hook logs it and exits 0)."""


@dataclass(frozen=True)
class HookRequest:
    """One session to score, and why."""

    session_id: str | None
    """The session id to score under (and to push to Langfuse with)."""
    transcript: Path | None
    """The transcript; None: look the session id up under the Claude projects root."""
    event: str = MANUAL
    """`SessionEnd`, `Stop` or `manual`."""
    cwd: str | None = None
    """The session's working directory (for the project allow/deny lists)."""
    reason: str | None = None
    """SessionEnd's reason (`clear`, `logout`, `prompt_input_exit`, `other`)."""

    @property
    def automatic(self) -> bool:
        """Started by a hook event, not asked for by name."""
        return self.event in TRIGGERS

    def label(self) -> str:
        """How log lines name this session."""
        return self.session_id or str(self.transcript)

    def to_argv(self) -> list[str]:
        """The `scorer hook` options that describe this request (for the worker)."""
        argv = ["--event", self.event]
        if self.session_id:
            argv += ["--session-id", self.session_id]
        if self.transcript is not None:
            argv += ["--transcript", str(self.transcript)]
        if self.cwd:
            argv += ["--cwd", self.cwd]
        if self.reason:
            argv += ["--reason", self.reason]
        return argv


def _first(payload: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = payload.get(name)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_payload(raw: bytes | str, *, event: str | None = None) -> HookRequest:
    """The request in a hook payload (snake_case or camelCase field names).

    Args:
        raw: stdin as read.
        event: The event the hook was registered for, used when the payload has none.

    Raises:
        PayloadError: Not a JSON object, or neither a session id nor a transcript path.
    """
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise PayloadError(f"payload of {len(raw):,} bytes is too big to be a hook payload")
    if not str(raw if isinstance(raw, str) else raw.decode("utf-8", "replace")).strip():
        raise PayloadError("empty payload on stdin")
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise PayloadError(f"payload is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise PayloadError(f"payload is a JSON {type(payload).__name__}, not an object")
    session_id = _first(payload, "session_id", "sessionId")
    transcript = _first(payload, "transcript_path", "transcriptPath")
    if not session_id and not transcript:
        raise PayloadError("payload has neither session_id nor transcript_path")
    return HookRequest(
        session_id=session_id,
        transcript=Path(transcript).expanduser() if transcript else None,
        event=_first(payload, "hook_event_name", "hookEventName") or event or MANUAL,
        cwd=_first(payload, "cwd"),
        reason=_first(payload, "reason"),
    )
