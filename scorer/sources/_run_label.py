"""A run folder's `label.json` (Terminal-Bench layout): when the agent really ran.

A Terminal-Bench run folder holds the agent's stream (`session.jsonl`), its pane
(`pane-post-agent.txt`) and a `label.json` with `agent_started_at` / `agent_ended_at`.
Neither the stream nor the pane has a clock of its own, and the files' modification
times are when they were copied, so the label's times are the run's start and end
(`SessionInfo.times_from == "label"`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

__all__ = ["LABEL_FILE", "LabelTimes", "label_times"]

LABEL_FILE = "label.json"
_MAX_BYTES = 4 << 20
"""A label is a few kB (its instruction and test results); a bigger file is not one."""


@dataclass(frozen=True)
class LabelTimes:
    """What the run folder's label says about the run's times."""

    started: datetime | None = None
    ended: datetime | None = None
    warning: str | None = None
    """Why a `label.json` that is there could not be used (the file time is used then)."""


def label_times(session_file: Path) -> LabelTimes:
    """The agent's start and end from the `label.json` beside `session_file`; empty when
    there is none, with a warning when there is one without usable times."""
    path = session_file.parent / LABEL_FILE
    try:
        if not path.is_file():
            return LabelTimes()
        if path.stat().st_size > _MAX_BYTES:
            return LabelTimes(warning=f"{path} is too big to be a run label; times not read")
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        return LabelTimes(warning=f"{path} could not be read ({exc}); times not read")
    if not isinstance(data, dict) or "agent_started_at" not in data:
        return LabelTimes()  # another tool's label.json: nothing to say about it
    started, ended = _when(data.get("agent_started_at")), _when(data.get("agent_ended_at"))
    if started is None:
        return LabelTimes(warning=f"{path}: agent_started_at is not an ISO time; times not read")
    return LabelTimes(started=started, ended=ended if ended and ended >= started else None)


def _when(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
