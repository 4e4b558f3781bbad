"""The team's policy for automatic scoring, as one frozen value, and its decisions (pure).

Built once from the settings where the hook starts (`HookPolicy.from_settings`) and handed
down; nothing below reads the environment. Every knob is a `SCORER_HOOK_*` variable,
documented in docs/plugin.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from scorer.jobs.hook.request import HookRequest

if TYPE_CHECKING:
    from scorer.models import Event
    from scorer.settings import Settings


def _globs(value: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in value.split(",") if p.strip())


@dataclass(frozen=True)
class HookPolicy:
    """What automatic scoring may do (see the `SCORER_HOOK_*` settings)."""

    enabled: bool = True
    events: frozenset[str] = frozenset({"SessionEnd"})
    stop_debounce: float = 600.0
    min_tool_calls: int = 3
    daily_cost_cap: float = 5.0
    projects: tuple[str, ...] = ()
    ignore_projects: tuple[str, ...] = ()
    judge: Literal["auto", "llm", "claude-code", "heuristic"] = "auto"
    push: bool = True
    mode: Literal["direct", "batch"] = "direct"
    batch_size: int = 5
    batch_minutes: float = 30.0

    @classmethod
    def from_settings(cls, s: Settings) -> HookPolicy:
        return cls(
            enabled=s.hook_enabled,
            events=frozenset(_globs(s.hook_events)),
            stop_debounce=s.hook_stop_debounce,
            min_tool_calls=s.hook_min_tool_calls,
            daily_cost_cap=s.hook_daily_cost_cap,
            projects=_globs(s.hook_projects),
            ignore_projects=_globs(s.hook_ignore_projects),
            judge=s.hook_judge,
            push=s.hook_push,
            mode=s.hook_mode,
            batch_size=s.hook_batch_size,
            batch_minutes=s.hook_batch_minutes,
        )

    def refuse(self, request: HookRequest) -> str | None:
        """Why this request is not scored at all, or None (checked before any work).

        The event list applies to hook events only; a request that names its session (an
        orchestrator's) has none. `scorer hook --now` does not ask (the user did).
        """
        if not self.enabled:
            return "automatic scoring is off (SCORER_HOOK_ENABLED=0)"
        if request.automatic and request.event not in self.events:
            return f"{request.event} is not a trigger (SCORER_HOOK_EVENTS)"
        return self.refuse_project(request.cwd)

    def refuse_project(self, cwd: str | None) -> str | None:
        """Why sessions in `cwd` are not scored (the allow and ignore lists), or None."""
        if cwd is None:
            return None
        if _matches(cwd, self.ignore_projects):
            return f"project {cwd} is ignored (SCORER_HOOK_IGNORE_PROJECTS)"
        if self.projects and not _matches(cwd, self.projects):
            return f"project {cwd} is not in SCORER_HOOK_PROJECTS"
        return None

    def too_small(self, tool_calls: int) -> str | None:
        """Why a session with this many tool calls is skipped, or None."""
        if tool_calls < self.min_tool_calls:
            return (
                f"{tool_calls} tool call(s), fewer than SCORER_HOOK_MIN_TOOL_CALLS="
                f"{self.min_tool_calls}"
            )
        return None

    def over_cap(self, spent_today: float, estimate: float) -> str | None:
        """Why the LLM judge may not run on a session estimated at `estimate` USD."""
        if spent_today + estimate > self.daily_cost_cap:
            return (
                f"the daily cost cap would be passed (spent ${spent_today:.2f} today + "
                f"~${estimate:.2f} > SCORER_HOOK_DAILY_COST_CAP=${self.daily_cost_cap:.2f})"
            )
        return None

    def batch_due(self, waiting: int, oldest_wait: float) -> str | None:
        """Why a queue of `waiting` sessions, the oldest queued `oldest_wait` seconds ago,
        is sent as a Message Batch now, or None (it waits)."""
        if waiting >= self.batch_size:
            return f"{waiting} session(s) queued (SCORER_HOOK_BATCH_SIZE={self.batch_size})"
        if waiting and oldest_wait >= self.batch_minutes * 60:
            span = f"{oldest_wait:.0f} s" if oldest_wait < 120 else f"{oldest_wait / 60:.0f} min"
            return f"the oldest waited {span} (SCORER_HOOK_BATCH_MINUTES={self.batch_minutes:g})"
        if waiting and self.mode != "batch":
            return "batch mode is off (SCORER_HOOK_MODE): the rest of the queue goes out"
        return None


def _matches(cwd: str, patterns: Iterable[str]) -> bool:
    """A glob matches the whole directory, the directory written with `~/`, or its name."""
    path = Path(cwd)
    names = {str(path), path.name}
    if path.is_relative_to(Path.home()):
        names.add("~/" + str(path.relative_to(Path.home())))
    return any(fnmatchcase(n, p.rstrip("/")) for p in patterns for n in names)


def count_tool_calls(events: Iterable[Event]) -> int:
    """Tool calls in a session, subagents' included (their events are children)."""
    from scorer.models import EventKind

    total = 0
    for event in events:
        if event.kind == EventKind.TOOL_CALL:
            total += 1
        total += count_tool_calls(event.children or ())
    return total
