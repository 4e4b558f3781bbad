"""Native transcript lines → events (pure): the line types of reference §1.

`parse_transcript` handles one file's decoded lines; `claude_code.ClaudeCodeSource`
adds the file system and the subagents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scorer.models import Event, EventKind
from scorer.sources._common import (
    UsageLedger,
    assistant_message_events,
    content_text,
    parse_ts,
    strip_ansi,
    tool_result_event,
)
from scorer.sources._envelope import Envelope, dedupe, order_segments, read_envelope

TRANSCRIPT_TYPES = frozenset(
    {
        "user",
        "assistant",
        "system",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "attachment",
        "summary",
        "ai-title",
        "custom-title",
        "last-prompt",
        "mode",
        "permission-mode",
        "agent-setting",
        "agent-name",
        "pr-link",
    }
)
_COMMAND_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-memory-input>",
    "<ide_",
)
_TAG = re.compile(r"<(/?)([a-z_-]+)>")
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.S)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.S)
_AGENT_TAIL = re.compile(r"agentId: ([A-Za-z0-9_-]+)")
_NOTIFY_FIELDS = ("task-id", "tool-use-id", "status", "summary")
SPAWN_TOOLS = frozenset({"Task", "Agent"})


@dataclass
class TranscriptParse:
    """What one transcript file's lines say, before subagents are attached."""

    events: list[Event] = field(default_factory=list)
    ledger: UsageLedger = field(default_factory=UsageLedger)
    session_id: str | None = None
    cwds: list[str] = field(default_factory=list)
    git_branches: list[str] = field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    title: str | None = None
    has_custom_title: bool = False
    version: str | None = None
    slug: str | None = None
    turn_duration_ms: int = 0
    n_turn_durations: int = 0
    duplicate_lines: int = 0
    skipped_thinking: int = 0
    sidechain_lines_skipped: int = 0
    hook_errors: int = 0
    agent_links: dict[str, str] = field(default_factory=dict)
    """agentId → tool_use_id of the Task/Agent call that spawned it."""
    progress_messages: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """agentId → the subagent's own lines, as echoed by `agent_progress` lines."""
    tool_inputs: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def first_prompt(self) -> str | None:
        return next((e.text for e in self.events if e.kind == EventKind.PROMPT), None)


def is_transcript(records: list[dict[str, Any]]) -> bool:
    """True when the decoded lines look like a native Claude Code transcript."""
    return any(
        r.get("type") in TRANSCRIPT_TYPES and ("sessionId" in r or "uuid" in r or "messageId" in r)
        for r in records[:200]
    )


def parse_transcript(records: list[dict[str, Any]], *, main: bool = True) -> TranscriptParse:
    """Turn the decoded lines of one transcript into events (pure).

    Lines replayed by a resume (same `uuid`) are kept once; segments started by
    compaction roots are ordered by timestamp. In a main file (`main=True`) whose
    conversation is not itself a sidechain, stray sidechain lines are skipped.
    """
    out = TranscriptParse()
    records, out.duplicate_lines = dedupe(records)
    records = order_segments(records)
    first = next((r for r in records if r.get("type") in ("user", "assistant")), {})
    if main and not first.get("isSidechain"):
        kept = [r for r in records if r.get("isSidechain") is not True]
        out.sidechain_lines_skipped = len(records) - len(kept)
        records = kept
    _note_envelope(read_envelope(records), out)
    tool_names: dict[str, str] = {}
    for record in records:
        rtype = record.get("type")
        # Unknown (or non-string) types are passthrough.
        handler = _HANDLERS.get(rtype) if isinstance(rtype, str) else None
        if handler:
            handler(record, out, tool_names)
    return out


def _note_envelope(envelope: Envelope, out: TranscriptParse) -> None:
    out.session_id, out.version, out.slug = envelope.session_id, envelope.version, envelope.slug
    out.cwds, out.git_branches = envelope.cwds, envelope.git_branches
    out.started_at, out.ended_at = envelope.started_at, envelope.ended_at


def _on_assistant(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        return
    ts = parse_ts(record.get("timestamp"))
    if record.get("isApiErrorMessage"):
        out.events.append(_api_error_event(record, message, ts))
        return
    events, skipped = assistant_message_events(
        message, ledger=out.ledger, fallback_id=str(record.get("uuid")), timestamp=ts, names=names
    )
    out.skipped_thinking += skipped
    plugin = record.get("attributionPlugin")
    for event in events:
        if isinstance(plugin, str):  # a turn a plugin's command prompted (Claude Code 2.1+)
            event.meta["plugin"] = plugin
        if event.kind == EventKind.TOOL_CALL and event.tool_use_id:
            out.tool_inputs[event.tool_use_id] = event.tool_input or {}
    out.events.extend(events)


def _api_error_event(record: dict[str, Any], message: dict[str, Any], ts: Any) -> Event:
    meta = {
        "status": record.get("apiErrorStatus"),
        "error": record.get("error"),
    }
    if record.get("errorDetails"):
        meta["details"] = record["errorDetails"]
    return Event(
        index=0,
        kind=EventKind.API_ERROR,
        timestamp=ts,
        text=content_text(message.get("content")).strip(),
        is_error=True,
        meta={k: v for k, v in meta.items() if v is not None},
    )


def _on_user(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    message = record.get("message")
    if not isinstance(message, dict):
        return
    ts = parse_ts(record.get("timestamp"))
    content = message.get("content")
    results = (
        [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        if isinstance(content, list)
        else []
    )
    if results:
        tur = record.get("toolUseResult")
        for block in results:
            event = tool_result_event(block, tool_use_result=tur, timestamp=ts, tool_names=names)
            out.events.append(event)
            _note_agent_link(event, tur, out)
        return
    text_event = classify_user_text(record, content_text(content))
    if text_event is None:
        return
    text_event.timestamp = ts
    if text_event.kind == EventKind.COMPACTION and out.events:
        last = out.events[-1]
        if last.kind == EventKind.COMPACTION and not last.text:
            last.text = text_event.text  # the summary belongs to the boundary just before it
            return
    out.events.append(text_event)


def classify_user_text(record: dict[str, Any], text: str) -> Event | None:
    """Decide what a non-tool-result user line is (reference §1.4), as an unnumbered event."""
    stripped = text.strip()
    if record.get("isCompactSummary"):
        return Event(index=0, kind=EventKind.COMPACTION, text=stripped, meta={"summary": True})
    if record.get("isMeta"):
        return Event(index=0, kind=EventKind.META, text=stripped) if stripped else None
    origin = record.get("origin")
    if stripped.startswith("<task-notification>") or (
        isinstance(origin, dict) and origin.get("kind") == "task-notification"
    ):
        return _notification_event(stripped)
    if stripped.startswith("[Request interrupted by user"):
        return Event(index=0, kind=EventKind.INTERRUPTION, text=stripped.strip("[]"))
    if stripped.startswith(_COMMAND_PREFIXES):
        return command_event(stripped)
    if not stripped:
        return None
    return Event(index=0, kind=EventKind.PROMPT, text=stripped)


def command_event(text: str) -> Event | None:
    """A slash-command or shell echo (`<command-name>`, `<local-command-stdout>`, …)."""
    name = _COMMAND_NAME.search(text)
    if name:
        args = _COMMAND_ARGS.search(text)
        shown = " ".join(p for p in (name.group(1).strip(), args and args.group(1).strip()) if p)
        return Event(index=0, kind=EventKind.COMMAND, text=shown, meta={"command": name.group(1)})
    shown = strip_ansi(_TAG.sub("", text)).strip()
    return Event(index=0, kind=EventKind.COMMAND, text=shown) if shown else None


def _notification_event(text: str) -> Event:
    meta: dict[str, Any] = {}
    for name in _NOTIFY_FIELDS:
        match = re.search(rf"<{name}>(.*?)</{name}>", text, re.S)
        if match:
            meta[name.replace("-", "_")] = match.group(1).strip()
    return Event(
        index=0,
        kind=EventKind.NOTIFICATION,
        text=text,
        tool_use_id=meta.get("tool_use_id"),
        is_error=meta.get("status") in ("failed", "error", "killed"),
        meta=meta,
    )


def _note_agent_link(event: Event, tool_use_result: Any, out: TranscriptParse) -> None:
    """Remember which agent a Task/Agent result belongs to (structured field or text tail)."""
    if not event.tool_use_id or event.tool_name not in SPAWN_TOOLS:
        return
    agent_id = tool_use_result.get("agentId") if isinstance(tool_use_result, dict) else None
    if not isinstance(agent_id, str):
        match = _AGENT_TAIL.search(event.text[-2000:])
        agent_id = match.group(1) if match else None
    if agent_id:
        out.agent_links.setdefault(agent_id, event.tool_use_id)
        event.agent_id = agent_id


def _on_system(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    subtype = record.get("subtype")
    ts = parse_ts(record.get("timestamp"))
    if subtype == "compact_boundary":
        meta_raw = record.get("compactMetadata")
        meta_raw = meta_raw if isinstance(meta_raw, dict) else {}
        meta = {"trigger": meta_raw.get("trigger"), "preTokens": meta_raw.get("preTokens")}
        out.events.append(Event(index=0, kind=EventKind.COMPACTION, timestamp=ts, meta=meta))
    elif subtype == "local_command":
        event = command_event(str(record.get("content") or ""))
        if event:
            event.timestamp = ts
            out.events.append(event)
    elif subtype == "turn_duration":
        if isinstance(record.get("durationMs"), int):
            out.turn_duration_ms += record["durationMs"]
            out.n_turn_durations += 1
    elif subtype == "api_error":
        text = content_text(record.get("content")) or str(record.get("error") or "API error")
        out.events.append(
            Event(index=0, kind=EventKind.API_ERROR, timestamp=ts, text=text, is_error=True)
        )
    elif subtype == "stop_hook_summary" and record.get("hookErrors"):
        out.hook_errors += len(record["hookErrors"])
        text = "Stop hook error: " + "; ".join(str(e) for e in record["hookErrors"])
        out.events.append(
            Event(index=0, kind=EventKind.SYSTEM, timestamp=ts, text=text, is_error=True)
        )


def _on_progress(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    data = record.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return
    agent_id, parent = data.get("agentId"), record.get("parentToolUseID")
    if isinstance(agent_id, str) and isinstance(parent, str):
        out.agent_links.setdefault(agent_id, parent)
    if isinstance(data.get("message"), dict):
        key = agent_id if isinstance(agent_id, str) else f"tool:{parent}"
        out.progress_messages.setdefault(key, []).append(data["message"])
        if not isinstance(agent_id, str) and isinstance(parent, str):
            out.agent_links.setdefault(key, parent)


def _on_attachment(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    attachment = record.get("attachment")
    if not isinstance(attachment, dict):
        return
    kind = attachment.get("type")
    ts = parse_ts(record.get("timestamp"))
    if kind == "queued_command" and isinstance(attachment.get("prompt"), str):
        event = classify_user_text({}, attachment["prompt"])
        if event:
            event.timestamp = ts
            out.events.append(event)
    elif kind in ("hook_blocking_error", "hook_non_blocking_error"):
        text = str(attachment.get("blockingError") or attachment.get("stderr") or kind)
        out.hook_errors += 1
        out.events.append(
            Event(index=0, kind=EventKind.SYSTEM, timestamp=ts, text=text, is_error=True)
        )


def _on_title(record: dict[str, Any], out: TranscriptParse, names: dict[str, str]) -> None:
    for key in ("customTitle", "aiTitle", "summary"):
        value = record.get(key)
        if isinstance(value, str) and value.strip():
            # A custom title beats the generated one; otherwise the last title wins.
            if key == "customTitle" or not out.has_custom_title:
                out.title = value.strip()
            out.has_custom_title |= key == "customTitle"
            return


_HANDLERS = {
    "assistant": _on_assistant,
    "user": _on_user,
    "system": _on_system,
    "progress": _on_progress,
    "attachment": _on_attachment,
    "ai-title": _on_title,
    "custom-title": _on_title,
    "summary": _on_title,
}
