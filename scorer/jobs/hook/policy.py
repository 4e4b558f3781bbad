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
