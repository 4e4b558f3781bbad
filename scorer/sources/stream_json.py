"""Headless runs: `claude -p --output-format stream-json` event streams.

Lines: `system/init` (cwd, model, session_id, version), `assistant` (split by
`message.id` like native transcripts), `user` tool results, and a final `result`.
Lines with `parent_tool_use_id` belong to the subagent spawned by that Task call.
There is no human prompt in these streams; pass `task` to give the judge the task.

Times. A stream has no clock of its own as Claude Code writes it: a run folder's
`label.json` (Terminal-Bench) gives the agent's real start and end; else lines that do
carry a `timestamp` (a wrapper's, a newer version's) give the first and last; else the
file's modification time is a labelled fallback (`SessionInfo.times_from`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scorer._gc import without_gc
from scorer.errors import EmptySessionError, SourceError
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.sources._common import (
    UsageLedger,
    assistant_message_events,
    content_text,
    number_events,
    tool_result_event,
)
from scorer.sources._jsonl import read_jsonl
from scorer.sources._run_label import label_times

_AGENT_TAIL = re.compile(r"agentId: ([A-Za-z0-9_-]+)")
_RESULT_KEYS = ("subtype", "is_error", "num_turns", "duration_ms", "duration_api_ms")


def is_stream_json(records: list[dict[str, Any]]) -> bool:
    """True when the lines look like a stream-json run (snake_case envelope, no uuid DAG)."""
    for record in records[:50]:
        kind = record.get("type")
        if kind == "result" or (kind == "system" and record.get("subtype") == "init"):
            return "session_id" in record or "sessionId" not in record
        if kind in ("assistant", "user") and "parent_tool_use_id" in record:
            return True
    return False


def stream_times(records: list[dict[str, Any]]) -> list[datetime]:
    """The ISO `timestamp`s the stream's lines carry, oldest first (none, as Claude Code
    writes a stream)."""
    stamps = []
    for record in records:
        value = record.get("timestamp")
        if not isinstance(value, str):
            continue
        try:
            when = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            continue
        stamps.append(when if when.tzinfo else when.replace(tzinfo=UTC))
    return sorted(stamps)


@dataclass
class StreamParse:
    """What a stream-json run says (pure result of `parse_stream`)."""

    events: list[Event] = field(default_factory=list)
    children: dict[str, list[Event]] = field(default_factory=dict)
    """parent_tool_use_id → the events of the subagent that call spawned."""
    ledger: UsageLedger = field(default_factory=UsageLedger)
    init: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    skipped_thinking: int = 0


def parse_stream(records: list[dict[str, Any]]) -> StreamParse:
    """Turn stream-json lines into events, subagent lines grouped by their parent call."""
    out = StreamParse()
    names: dict[str, str] = {}
    for record in records:
        kind = record.get("type")
        parent = record.get("parent_tool_use_id")
        target = out.events if not isinstance(parent, str) else out.children.setdefault(parent, [])
        if kind == "system" and record.get("subtype") == "init" and not out.init:
            out.init = record
        elif kind == "assistant":
            _on_assistant(record, out, target, names)
        elif kind == "user":
            _on_user(record, target, names)
        elif kind == "result":
            out.result = record
            out.events.append(_result_event(record))
    return out


def _on_assistant(
    record: dict[str, Any], out: StreamParse, target: list[Event], names: dict[str, str]
) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        return
    events, skipped = assistant_message_events(
        message, ledger=out.ledger, fallback_id=str(record.get("uuid")), timestamp=None, names=names
    )
    out.skipped_thinking += skipped
    target.extend(events)


def _on_user(record: dict[str, Any], target: list[Event], names: dict[str, str]) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        return
    content = message.get("content")
    blocks = content if isinstance(content, list) else []
    results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    tool_use_result = record.get("tool_use_result", record.get("toolUseResult"))
    for block in results:
        target.append(
            tool_result_event(
                block, tool_use_result=tool_use_result, timestamp=None, tool_names=names
            )
        )
    if not results:
        # A subagent's task prompt (or a prompt fed via --input-format stream-json).
        text = content_text(content).strip()
        if text:
            target.append(Event(index=0, kind=EventKind.PROMPT, text=text))


def _result_event(record: dict[str, Any]) -> Event:
    text = record.get("result")
    return Event(
        index=0,
        kind=EventKind.RESULT,
        text=text if isinstance(text, str) else "",
        is_error=record.get("is_error") is True,
        meta={k: record[k] for k in (*_RESULT_KEYS, "total_cost_usd") if k in record},
    )


def weave_subagents(events: list[Event], children: dict[str, list[Event]]) -> list[Event]:
    """Put each subagent's events in a SUBAGENT event after its spawning call's result."""
    if not children:
        return events
    calls = {e.tool_use_id: e for e in events if e.kind == EventKind.TOOL_CALL and e.tool_use_id}
    answered = {e.tool_use_id for e in events if e.kind == EventKind.TOOL_RESULT}
    placed: set[str] = set()
    woven: list[Event] = []
    for event in events:
        woven.append(event)
        tid = event.tool_use_id
        at_result = event.kind == EventKind.TOOL_RESULT
        at_call = event.kind == EventKind.TOOL_CALL and tid not in answered
        if tid in children and tid not in placed and (at_result or at_call):
            placed.add(tid)
            woven.append(_subagent_event(tid, children[tid], calls.get(tid), event))
    for tid, items in children.items():
        if tid not in placed:
            woven.append(_subagent_event(tid, items, None, None))
    return woven


def _subagent_event(
    tool_use_id: str, items: list[Event], call: Event | None, result: Event | None
) -> Event:
    spawn = (call.tool_input or {}) if call else {}
    match = _AGENT_TAIL.search(result.text[-2000:]) if result is not None else None
    meta: dict[str, Any] = {"linked": call is not None}
    if spawn.get("subagent_type"):
        meta["agent_type"] = spawn["subagent_type"]
    return Event(
        index=0,
        kind=EventKind.SUBAGENT,
        text=str(spawn.get("description") or "subagent"),
        tool_use_id=tool_use_id,
        agent_id=match.group(1) if match else None,
        children=items,
        meta=meta,
    )


class StreamJsonSource:
    """A `--output-format stream-json` file.

    Example:
        >>> StreamJsonSource(Path("run/session.jsonl"), task="Fix the failing test").load()
    """

    kind = SourceKind.STREAM_JSON

    def __init__(self, path: Path, task: str | None = None) -> None:
        self.path = Path(path).expanduser()
        self.task = task

    @without_gc
    def load(self) -> Session:
        """Read and parse the stream.

        Raises:
            SourceError: Not readable, binary, or not a stream-json run.
            EmptySessionError: The stream holds no messages or results.
        """
        lines = read_jsonl(self.path)
        if not lines.records:
            raise EmptySessionError(f"{self.path} is empty")
        if not is_stream_json(lines.records):
            raise SourceError(f"{self.path} is not a Claude Code stream-json run")
        parsed = parse_stream(lines.records)
        events = weave_subagents(parsed.events, parsed.children)
        if not any(e.kind != EventKind.RESULT for e in events):
            raise EmptySessionError(f"{self.path} has no messages or tool calls")
        session = self._session(parsed, number_events(events), lines.n_lines, lines.bad_lines)
        session.extra["non_utf8_lines"] = lines.non_utf8_lines
        session.extra["file_mtime"] = lines.modified  # the last resort: see `_set_times`
        session.extra["warnings"] = lines.warnings()
        self._set_times(session, lines.records)
        return session

    def _set_times(self, session: Session, records: list[dict[str, Any]]) -> None:
        """The run folder's label times, else the stream's own (see the module doc)."""
        label = label_times(self.path)
        if label.warning:
            session.extra["warnings"].append(label.warning)
        if label.started is not None:
            session.started_at, session.ended_at = label.started, label.ended
            session.extra["times_from"] = "label"
            return
        stamps = stream_times(records)
        if stamps:
            session.started_at, session.ended_at = stamps[0], stamps[-1]

    def _session(self, parsed: StreamParse, events: list[Event], n_lines: int, bad: int) -> Session:
        init, result = parsed.init, parsed.result or {}
        models = list(parsed.ledger.models)
        init_model = init.get("model")
        if isinstance(init_model, str) and init_model and init_model not in models:
            models.insert(0, init_model)
        cwd = init.get("cwd") if isinstance(init.get("cwd"), str) else None
        session_id = init.get("session_id") or result.get("session_id") or self.path.stem
        cost = result.get("total_cost_usd")
        extra: dict[str, Any] = {
            "version": init.get("claude_code_version"),
            "complete": parsed.result is not None,
            "n_lines": n_lines,
            "bad_lines": bad,
            "n_messages": parsed.ledger.n_messages,
            "skipped_thinking": parsed.skipped_thinking,
            "tools": init.get("tools") if isinstance(init.get("tools"), list) else [],
            "permission_mode": init.get("permissionMode"),
        }
        extra.update({k: result[k] for k in _RESULT_KEYS if k in result})
        return Session(
            session_id=str(session_id),
            source=SourceKind.STREAM_JSON,
            origin=str(self.path),
            project=Path(cwd).name if cwd else self.path.parent.name,
            cwd=cwd,
            models=models,
            usage=parsed.ledger.total(),
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
            task=self.task,
            events=events,
            extra=extra,
        )
