"""Pure helpers shared by the sources: block conversion, failure detection, usage.

The native and stream-json parsers (and the Langfuse/tmux sources) turn the same raw
shapes into the same `Event`s with these. Reading JSONL files lives in `_jsonl.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from scorer.models import Event, EventKind, TokenUsage

SYNTHETIC_MODEL = "<synthetic>"

_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d+)")
_WS = re.compile(r"\s+")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def number_events(events: list[Event], start: int = 1) -> list[Event]:
    """Give every event a unique 1-based index, depth-first through subagent children.

    Mutates the events in place (copying a 100k-event session would be wasteful) and
    returns the same list, so `session.events = number_events(events)` reads naturally.

    Args:
        events: Top-level events in final timeline order.
        start: The first index to hand out.

    Returns:
        The same list, numbered.
    """
    counter = start

    def walk(items: list[Event]) -> None:
        nonlocal counter
        for event in items:
            event.index = counter
            counter += 1
            if event.children:
                walk(event.children)

    walk(events)
    return events


def parse_ts(value: Any) -> datetime | None:
    """ISO-8601 timestamp (with `Z`) → aware datetime; None when absent or malformed."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def condense(text: str) -> str:
    """Collapse all whitespace runs to single spaces (for thinking text)."""
    return _WS.sub(" ", text).strip()


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


def content_text(content: Any) -> str:
    """Text of a message/tool-result `content`: a string, or a list of blocks."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content, ensure_ascii=False)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            elif block.get("type") == "image":
                parts.append("[image]")
            elif block.get("type") == "tool_reference":
                parts.append(f"[tool: {block.get('tool_name', '?')}]")
    return "\n".join(parts)


def detect_failure(
    text: str, is_error: Any, tool_use_result: Any = None
) -> tuple[bool, int | None]:
    """Decide whether a tool result is a failure, and its exit code when one is stated.

    `is_error` is absent on most results, so the text is checked too: Claude Code
    reports failures as `Error: ...`/`Exit code N` strings in `toolUseResult` and as
    `<tool_use_error>` in the result text.
    """
    exit_code: int | None = None
    match = _EXIT_CODE.match(text.lstrip())
    if not match and isinstance(tool_use_result, str):
        match = _EXIT_CODE.match(tool_use_result.lstrip())
    if match:
        exit_code = int(match.group(1))
    failed = (
        is_error is True
        or (exit_code is not None and exit_code != 0)
        or "<tool_use_error>" in text[:2000]
        or (isinstance(tool_use_result, str) and tool_use_result.startswith("Error"))
    )
    return failed, exit_code


_USAGE_KEYS = (
    ("input_tokens", "input_tokens"),
    ("output_tokens", "output_tokens"),
    ("cache_read_tokens", "cache_read_input_tokens"),
    ("cache_write_tokens", "cache_creation_input_tokens"),
)
"""TokenUsage field → the Anthropic `usage` key it is read from."""


def _count(raw: dict[str, Any], key: str) -> int:
    value = raw.get(key)
    return value if isinstance(value, int) else 0


def sum_usage(usages: Iterable[TokenUsage]) -> TokenUsage:
    """Field-wise sum (one model built at the end, not one per addition)."""
    items = list(usages)
    return TokenUsage(
        input_tokens=sum(u.input_tokens for u in items),
        output_tokens=sum(u.output_tokens for u in items),
        cache_read_tokens=sum(u.cache_read_tokens for u in items),
        cache_write_tokens=sum(u.cache_write_tokens for u in items),
    )


def assistant_message_events(
    message: dict[str, Any],
    *,
    ledger: UsageLedger,
    fallback_id: str,
    timestamp: datetime | None,
    names: dict[str, str],
) -> tuple[list[Event], int]:
    """Events of one assistant message line; records its usage and the tool names it calls.

    Returns the events and how many thinking blocks were empty/redacted (skipped).
    """
    model = message.get("model") if isinstance(message.get("model"), str) else None
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    ledger.record(message_id or fallback_id, message.get("usage"), model)
    events, skipped = assistant_block_events(
        message.get("content"), model=model, timestamp=timestamp, message_id=message_id
    )
    for event in events:
        if event.kind == EventKind.TOOL_CALL and event.tool_use_id:
            names[event.tool_use_id] = event.tool_name or "?"
    return events, skipped


def assistant_block_events(
    blocks: Any, *, model: str | None, timestamp: datetime | None, message_id: str | None
) -> tuple[list[Event], int]:
    """Events for the content blocks of one assistant line.

    Returns the events and how many thinking blocks were empty/redacted (skipped).
    """
    if isinstance(blocks, str):
        blocks = [{"type": "text", "text": blocks}]
    if not isinstance(blocks, list):
        return [], 0
    events: list[Event] = []
    skipped_thinking = 0
    meta = {"message_id": message_id} if message_id else {}
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        common: dict[str, Any] = {
            "index": 0,
            "timestamp": timestamp,
            "model": model,
            "meta": dict(meta),
        }
        if kind == "text":
            text = str(block.get("text") or "")
            if text.strip():
                events.append(Event(kind=EventKind.ASSISTANT, text=text.strip(), **common))
        elif kind == "thinking":
            text = condense(str(block.get("thinking") or ""))
            if text:
                events.append(Event(kind=EventKind.THINKING, text=text, **common))
            else:
                skipped_thinking += 1
        elif kind == "redacted_thinking":
            skipped_thinking += 1
        elif kind in ("tool_use", "server_tool_use"):
            raw_input = block.get("input")
            tool_input = raw_input if isinstance(raw_input, dict) else {"input": raw_input}
            events.append(
                Event(
                    kind=EventKind.TOOL_CALL,
                    tool_name=str(block.get("name") or "?"),
                    tool_use_id=block.get("id"),
                    tool_input=tool_input,
                    **common,
                )
            )
        elif isinstance(kind, str) and kind.endswith("_tool_result"):
            # Server-side tool results (web search) come back inside the assistant message.
            events.append(
                Event(
                    kind=EventKind.TOOL_RESULT,
                    tool_use_id=block.get("tool_use_id"),
                    text=content_text(block.get("content")),
                    **common,
                )
            )
    return events, skipped_thinking


def tool_result_event(
    block: dict[str, Any],
    *,
    tool_use_result: Any,
    timestamp: datetime | None,
    tool_names: dict[str, str],
) -> Event:
    """One `tool_result` block → TOOL_RESULT event with failure detection applied."""
    text = content_text(block.get("content"))
    tool_use_id = block.get("tool_use_id")
    failed, exit_code = detect_failure(text, block.get("is_error"), tool_use_result)
    meta: dict[str, Any] = {}
    if isinstance(tool_use_result, dict) and tool_use_result.get("interrupted"):
        meta["interrupted"] = True
    return Event(
        index=0,
        kind=EventKind.TOOL_RESULT,
        timestamp=timestamp,
        text=text,
        tool_name=tool_names.get(tool_use_id) if isinstance(tool_use_id, str) else None,
        tool_use_id=tool_use_id if isinstance(tool_use_id, str) else None,
        is_error=failed,
        exit_code=exit_code,
        meta=meta,
    )


class UsageLedger:
    """Per-message usage, keeping the LAST snapshot of each `message.id`.

    Split assistant lines carry running usage snapshots; summing them double-counts.
    The raw `usage` dicts are kept and converted once, in `total`.
    """

    def __init__(self) -> None:
        self._by_message: dict[str, dict[str, Any]] = {}
        self.models: list[str] = []
        self._seen_models: set[str] = set()

    def record(self, message_id: str, usage: Any, model: Any) -> None:
        if isinstance(usage, dict):
            self._by_message[message_id] = usage
        is_real = isinstance(model, str) and model and model != SYNTHETIC_MODEL
        if is_real and model not in self._seen_models:
            self._seen_models.add(model)
            self.models.append(model)

    @property
    def n_messages(self) -> int:
        return len(self._by_message)

    def total(self) -> TokenUsage:
        """Usage summed over messages (missing or odd values count as 0)."""
        raws = list(self._by_message.values())
        return TokenUsage(**{name: sum(_count(r, key) for r in raws) for name, key in _USAGE_KEYS})
