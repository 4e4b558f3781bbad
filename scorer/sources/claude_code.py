"""Native Claude Code transcripts: `~/.claude/projects/<slug>/<sessionId>.jsonl`.

`_transcript.parse_transcript` is the pure core (decoded lines → events, usage,
metadata); this module adds the file system: reading the main file, finding subagent
files in both layouts, and linking each subagent to the Task/Agent call that spawned it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from scorer._gc import without_gc
from scorer.errors import EmptySessionError, SourceError
from scorer.models import Event, EventKind, Session, SourceKind, TokenUsage
from scorer.sources._common import number_events, sum_usage
from scorer.sources._jsonl import JsonLines, parse_json_line, read_jsonl
from scorer.sources._transcript import TranscriptParse, is_transcript, parse_transcript

__all__ = ["ClaudeCodeSource", "Subagent", "attach_subagents", "is_transcript", "parse_transcript"]


# --------------------------------------------------------------------------- subagents


@dataclass
class Subagent:
    """One subagent run, parsed, with what is known about its spawning call."""

    agent_id: str
    parse: TranscriptParse
    origin: str
    tool_use_id: str | None = None
    description: str | None = None
    agent_type: str | None = None


def attach_subagents(
    events: list[Event], subagents: list[Subagent], tool_inputs: dict[str, dict[str, Any]]
) -> list[Event]:
    """Insert one SUBAGENT event per subagent after its spawning call's result (pure).

    Falls back to right after the call when the result is missing, and to timestamp
    order for subagents that could not be linked. Nested spawns land inside the
    children of the subagent that made the call.
    """
    by_tool: dict[str, list[Subagent]] = {}
    unlinked: list[Subagent] = []
    for sub in subagents:
        if sub.tool_use_id:
            by_tool.setdefault(sub.tool_use_id, []).append(sub)
        else:
            unlinked.append(sub)
    placed: set[str] = set()

    def make(sub: Subagent) -> Event:
        spawn_input = tool_inputs.get(sub.tool_use_id or "", {})
        description = sub.description or spawn_input.get("description") or sub.agent_id
        agent_type = sub.agent_type or spawn_input.get("subagent_type")
        meta: dict[str, Any] = {"origin": sub.origin, "linked": sub.tool_use_id is not None}
        if agent_type:
            meta["agent_type"] = agent_type
        return Event(
            index=0,
            kind=EventKind.SUBAGENT,
            timestamp=sub.parse.started_at,
            text=str(description),
            agent_id=sub.agent_id,
            tool_use_id=sub.tool_use_id,
            children=weave(sub.parse.events),
            meta=meta,
        )

    def weave(items: list[Event]) -> list[Event]:
        answered = {e.tool_use_id for e in items if e.kind == EventKind.TOOL_RESULT}
        woven: list[Event] = []
        for event in items:
            woven.append(event)
            tid = event.tool_use_id
            if not tid or tid not in by_tool or tid in placed:
                continue
            if event.kind == EventKind.TOOL_RESULT or (
                event.kind == EventKind.TOOL_CALL and tid not in answered
            ):
                placed.add(tid)
                woven.extend(make(sub) for sub in by_tool[tid])
        return woven

    result = weave(events)
    leftovers = [sub for tid, subs in by_tool.items() if tid not in placed for sub in subs]
    for sub in sorted([*unlinked, *leftovers], key=lambda s: s.parse.started_at or _EPOCH):
        _insert_by_time(result, make(sub))
    return result


_EPOCH = datetime(1970, 1, 1).astimezone()


def _insert_by_time(events: list[Event], event: Event) -> None:
    if event.timestamp is None:
        events.append(event)
        return
    for pos, other in enumerate(events):
        if other.timestamp is not None and other.timestamp > event.timestamp:
            events.insert(pos, event)
            return
    events.append(event)


# --------------------------------------------------------------------------- the source


class ClaudeCodeSource:
    """A native Claude Code transcript file, with its subagent files.

    Example:
        >>> session = ClaudeCodeSource(Path("~/.claude/projects/-x/abc.jsonl")).load()
    """

    kind = SourceKind.CLAUDE_CODE

    def __init__(self, path: Path, task: str | None = None) -> None:
        self.path = Path(path).expanduser()
        self.task = task

    @without_gc
    def load(self) -> Session:
        """Read and parse the transcript.

        Raises:
            SourceError: Not readable, binary, or not a Claude Code transcript.
            EmptySessionError: A transcript with nothing in it to judge.
        """
        lines = read_jsonl(self.path)
        if not lines.records:
            raise EmptySessionError(f"{self.path} is empty")
        if not is_transcript(lines.records):
            raise SourceError(f"{self.path} is not a Claude Code transcript (no known line types)")
        main = parse_transcript(lines.records)
        extra: dict[str, Any] = {}
        subagents = self._subagents(main, extra)
        events = attach_subagents(main.events, subagents, _all_tool_inputs(main, subagents))
        if not events:
            raise EmptySessionError(f"{self.path} has no prompts, messages or tool calls")
        return self._session(main, lines, subagents, number_events(events), extra)

    def _session(
        self,
        main: TranscriptParse,
        lines: JsonLines,
        subagents: list[Subagent],
        events: list[Event],
        extra: dict[str, Any],
    ) -> Session:
        models = list(main.ledger.models)
        for sub in subagents:
            models.extend(m for m in sub.parse.ledger.models if m not in models)
        usage = sum_usage([main.ledger.total(), *(s.parse.ledger.total() for s in subagents)])
        cwd = main.cwds[0] if main.cwds else None
        extra.update(
            {
                "version": main.version,
                "slug": main.slug,
                "project_dir": self.path.parent.name,
                "n_lines": lines.n_lines,
                "bad_lines": lines.bad_lines,
                "non_utf8_lines": lines.non_utf8_lines,
                "file_mtime": lines.modified,
                "warnings": lines.warnings(),
                "duplicate_lines": main.duplicate_lines,
                "turn_duration_ms": main.turn_duration_ms,
                "n_turn_durations": main.n_turn_durations,
                "n_messages": main.ledger.n_messages
                + sum(s.parse.ledger.n_messages for s in subagents),
                "skipped_thinking": main.skipped_thinking,
                "hook_errors": main.hook_errors,
                "cwds": main.cwds,
                "n_subagents": len(subagents),
                "subagent_usage": _usage_dict(sum_usage(s.parse.ledger.total() for s in subagents)),
            }
        )
        if main.sidechain_lines_skipped:
            extra["sidechain_lines_skipped"] = main.sidechain_lines_skipped
        return Session(
            session_id=main.session_id or self.path.stem,
            source=SourceKind.CLAUDE_CODE,
            origin=str(self.path),
            title=main.title,
            project=Path(cwd).name if cwd else self.path.parent.name,
            cwd=cwd,
            git_branches=main.git_branches,
            started_at=main.started_at,
            ended_at=main.ended_at,
            models=models,
            usage=usage,
            task=self.task,
            events=events,
            extra=extra,
        )

    def _subagents(self, main: TranscriptParse, extra: dict[str, Any]) -> list[Subagent]:
        """Subagent files in both layouts, plus agents only seen in progress lines."""
        if self.path.name.startswith("agent-") or self.path.parent.name == "subagents":
            return []  # scoring an agent file directly: it is its own session
        found: list[Subagent] = []
        compaction_runs: list[str] = []
        skipped: list[str] = []
        for file in self._agent_files(main.session_id):
            agent_id = file.stem.removeprefix("agent-")
            if agent_id.startswith("acompact"):
                compaction_runs.append(file.name)  # the summarizer's run, not a Task agent
                continue
            sub = self._load_agent_file(file, agent_id, main)
            if sub is None:
                continue
            if not _linked(sub, main) and (sub.parse.first_prompt or "").strip() == "Warmup":
                skipped.append(file.name)  # 2.0.x cache-warming sidechain, not real work
                continue
            found.append(sub)
        links = _all_links(main, found)
        for sub in found:
            sub.tool_use_id = sub.tool_use_id or links.get(sub.agent_id)
        known = {s.agent_id for s in found}
        for agent_id, messages in main.progress_messages.items():
            if agent_id in known:
                continue
            parse = parse_transcript(messages, main=False)
            if parse.events:
                link = main.agent_links.get(agent_id)
                found.append(Subagent(agent_id.removeprefix("tool:"), parse, "progress", link))
        extra["compaction_runs"] = compaction_runs
        if skipped:
            extra["skipped_agents"] = skipped
        return found

    def _agent_files(self, session_id: str | None) -> list[Path]:
        nested = sorted((self.path.parent / self.path.stem / "subagents").glob("agent-*.jsonl"))
        legacy = [
            f
            for f in sorted(self.path.parent.glob("agent-*.jsonl"))
            if session_id and _first_session_id(f) == session_id
        ]
        return nested + legacy

    def _load_agent_file(self, file: Path, agent_id: str, main: TranscriptParse) -> Subagent | None:
        try:
            lines = read_jsonl(file)
        except SourceError:
            return None  # a broken subagent file must not sink the whole session
        parse = parse_transcript(lines.records, main=False)
        if not parse.events:
            return None
        meta = _read_meta(file.with_suffix(".meta.json"))
        tool_use_id = meta.get("toolUseId")
        return Subagent(
            agent_id=agent_id,
            parse=parse,
            origin=str(file),
            tool_use_id=tool_use_id if isinstance(tool_use_id, str) else None,
            description=meta.get("description")
            if isinstance(meta.get("description"), str)
            else None,
            agent_type=meta.get("agentType") if isinstance(meta.get("agentType"), str) else None,
        )


def _linked(sub: Subagent, main: TranscriptParse) -> bool:
    return sub.tool_use_id is not None or sub.agent_id in main.agent_links


def _all_links(main: TranscriptParse, subagents: list[Subagent]) -> dict[str, str]:
    """agentId → spawning tool_use_id, from the main file and every subagent (nesting)."""
    links = dict(main.agent_links)
    for sub in subagents:
        for agent_id, tool_use_id in sub.parse.agent_links.items():
            links.setdefault(agent_id, tool_use_id)
    return links


def _all_tool_inputs(main: TranscriptParse, subagents: list[Subagent]) -> dict[str, dict[str, Any]]:
    inputs = dict(main.tool_inputs)
    for sub in subagents:
        inputs.update(sub.parse.tool_inputs)
    return inputs


def _usage_dict(usage: TokenUsage) -> dict[str, int]:
    return usage.model_dump()


def _read_meta(path: Path) -> dict[str, Any]:
    if not path.is_file():  # also keeps a FIFO from blocking the read
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _first_session_id(path: Path) -> str | None:
    """The `sessionId` of a file's first JSON line (cheap check for legacy agent files)."""
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            for raw in handle:
                if raw.strip():
                    record = parse_json_line(raw)
                    return record.get("sessionId") if isinstance(record, dict) else None
    except OSError:
        return None
    return None
