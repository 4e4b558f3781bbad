"""Render a `Session` as a compact, numbered text timeline for the judge.

Every event starts with its stable reference (`#17`) so the judge can cite it. Tool calls
take one line; tool results point back at their call; long outputs keep head and tail;
subagents are indented sections. The output is a pure function of the session.
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from scorer._text import plural
from scorer.models import Event, EventKind, Session
from scorer.prepare.fence import clean_block, fence_block, one_line, skeleton

DEFAULT_MAX_OUTPUT_CHARS = 3_000
"""Tool outputs and other long texts longer than this keep only head and tail."""
_MAX_TASK_CHARS = 8_000
_MAX_THINKING_CHARS = 600
_MAX_INPUT_CHARS = 240
_INDENT = "  "
_EXIT_CODE_RE = re.compile(r"^(?:Error: )?Exit code (-?\d+)")

EVENT_LABELS: dict[EventKind, tuple[str, ...]] = {
    EventKind.PROMPT: ("USER:", "AGENT TASK:"),
    EventKind.ASSISTANT: ("ASSISTANT:",),
    EventKind.THINKING: ("THINKING:",),
    EventKind.TOOL_RESULT: ("↳ result",),
    EventKind.COMPACTION: ("── CONTEXT COMPACTED",),
    EventKind.API_ERROR: ("API ERROR",),
    EventKind.INTERRUPTION: ("⚠ INTERRUPTED BY USER",),
    EventKind.SUBAGENT: ("SUBAGENT (",),
    EventKind.RESULT: ("RESULT (",),
    EventKind.META: ("CONTEXT (injected):",),
    EventKind.NOTIFICATION: ("NOTIFICATION:",),
    EventKind.COMMAND: ("COMMAND:",),
    EventKind.TERMINAL: ("TERMINAL:",),
    EventKind.SYSTEM: ("SYSTEM:",),
}
"""How each kind's text starts after `#N `; a tool call starts with its tool's name."""
_LABEL = re.compile(
    "|".join(re.escape(label) for labels in EVENT_LABELS.values() for label in labels), re.I
)


class RenderedEvent(NamedTuple):
    """One rendered event: its number, nesting depth and text (already indented)."""

    # The field shadows `tuple.index` on purpose (it is the event's number); mypy
    # reports any NamedTuple field of that name as an incompatible override.
    index: int  # type: ignore[assignment]
    depth: int
    text: str


# --- text helpers -------------------------------------------------------------------


def cut_middle(text: str, max_chars: int) -> str:
    """Keep head and tail of `text`, replacing the middle with a note of what was cut.

    Cuts snap to line boundaries when one is near, so code lines stay whole.
    """
    if len(text) <= max_chars:
        return text
    head_len = max_chars * 3 // 5
    tail_len = max_chars - head_len
    head = text[:head_len]
    newline = head.rfind("\n")
    if newline > head_len // 2:
        head = head[:newline]
    tail_start = len(text) - tail_len
    newline = text.find("\n", tail_start, tail_start + tail_len // 2)
    if newline != -1:
        tail_start = newline + 1
    middle = text[len(head) : tail_start]
    note = f"[… {len(middle):,} chars / {middle.count(chr(10)):,} lines cut …]"
    return f"{head}\n{note}\n{text[tail_start:]}"


def _one_line(text: str, max_chars: int = _MAX_INPUT_CHARS) -> str:
    text = clean_block(text)
    flat = " ⏎ ".join(part.strip() for part in text.strip().split("\n") if part.strip())
    return flat if len(flat) <= max_chars else flat[: max_chars - 1] + "…"


def _n_lines(text: Any) -> int:
    return text.count("\n") + 1 if isinstance(text, str) and text else 0


def _condense(text: str, max_chars: int) -> str:
    return cut_middle(re.sub(r"\s+", " ", clean_block(text)).strip(), max_chars)


# --- tool calls -----------------------------------------------------------------------


def _edit_summary(inp: dict[str, Any]) -> str:
    old, new = _n_lines(inp.get("old_string")), _n_lines(inp.get("new_string"))
    extra = ", all" if inp.get("replace_all") else ""
    return f"{inp.get('file_path', '?')} (-{old} +{new} lines{extra})"


def _dicts(value: Any) -> list[dict[str, Any]]:
    """The dicts of a list-valued input (`edits`, `todos`); anything else holds none."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _multiedit_summary(inp: dict[str, Any]) -> str:
    edits = _dicts(inp.get("edits"))
    old = sum(_n_lines(e.get("old_string")) for e in edits)
    new = sum(_n_lines(e.get("new_string")) for e in edits)
    return f"{inp.get('file_path', '?')} ({len(edits)} edits, -{old} +{new} lines)"


def _read_summary(inp: dict[str, Any]) -> str:
    path = inp.get("file_path", "?")
    offset, limit = inp.get("offset"), inp.get("limit")
    if isinstance(offset, int) or isinstance(limit, int):
        start = offset if isinstance(offset, int) else 1
        end = start + limit - 1 if isinstance(limit, int) else "end"
        return f"{path} [{start}-{end}]"
    return str(path)


def _grep_summary(inp: dict[str, Any]) -> str:
    where = f" in {inp['path']}" if inp.get("path") else ""
    glob = f" ({inp['glob']})" if inp.get("glob") else ""
    return f'"{_one_line(str(inp.get("pattern", "")), 120)}"{where}{glob}'


def _todo_summary(inp: dict[str, Any]) -> str:
    todos = _dicts(inp.get("todos"))
    done = sum(t.get("status") == "completed" for t in todos)
    active = [t.get("content", "") for t in todos if t.get("status") == "in_progress"]
    now = f"; now: {_one_line(str(active[0]), 100)}" if active else ""
    return f"{len(todos)} todos, {done} done{now}"


def _compact_json(inp: dict[str, Any]) -> str:
    return _one_line(json.dumps(inp, ensure_ascii=False, sort_keys=True, default=str))


def tool_call_line(name: str, inp: dict[str, Any]) -> str:
    """One-line summary of a tool call, e.g. `Bash: pytest -q` or `Edit a.py (-3 +5 lines)`.

    Every field is kept on the line (`one_line`), and a tool whose name reads like another
    kind's label (`USER:`) is shown as `tool USER: …`, so the line is never taken for one.
    """
    line = one_line(_tool_call_text(name, inp))
    return "tool " + line if _LABEL.match(skeleton(line[:200], visible=32)) else line


def _tool_call_text(name: str, inp: dict[str, Any]) -> str:
    match name:
        case "Bash":
            # a background shell ends with the session: what it started does not outlive it
            mode = " (background)" if inp.get("run_in_background") else ""
            return f"Bash{mode}: {_one_line(str(inp.get('command', '')))}"
        case "Edit":
            return f"Edit {_edit_summary(inp)}"
        case "MultiEdit":
            return f"MultiEdit {_multiedit_summary(inp)}"
        case "Write":
            return f"Write {inp.get('file_path', '?')} ({_n_lines(inp.get('content'))} lines)"
        case "Read":
            return f"Read {_read_summary(inp)}"
        case "NotebookEdit":
            mode = inp.get("edit_mode", "replace")
            return f"NotebookEdit {inp.get('notebook_path', '?')} cell {inp.get('cell_id', '?')} ({mode})"
        case "Grep":
            return f"Grep {_grep_summary(inp)}"
        case "Glob":
            where = f" in {inp['path']}" if inp.get("path") else ""
            return f"Glob {inp.get('pattern', '?')}{where}"
        case "Task" | "Agent":
            kind = inp.get("subagent_type") or "agent"
            return f"{name} ({kind}): {_one_line(str(inp.get('description', '')), 160)}"
        case "TodoWrite":
            return f"TodoWrite: {_todo_summary(inp)}"
        case "WebFetch":
            return f"WebFetch {inp.get('url', '?')}"
        case "WebSearch":
            return f"WebSearch: {_one_line(str(inp.get('query', '')), 160)}"
        case _:
            return f"{name} {_compact_json(inp)}" if inp else name


# --- events -------------------------------------------------------------------------------


def result_exit_code(event: Event) -> int | None:
    """The exit code of a tool result: the field, else `Exit code N` at the start of the text."""
    if event.exit_code is not None:
        return event.exit_code
    match = _EXIT_CODE_RE.match(event.text)
    return int(match.group(1)) if match else None


def _body(head: str, text: str, max_chars: int) -> str:
    """`head` (one line) and the event's `text`, cleaned and fenced (see `fence`)."""
    head = one_line(head)
    text = cut_middle(clean_block(text).strip(), max_chars)
    if not text:
        return head
    if "\n" not in text and len(text) < 160:
        return f"{head} {text}"  # on the header line: it cannot start a line
    return f"{head}\n{fence_block(text)}"


def _result_head(event: Event, call_refs: dict[str, int]) -> str:
    call = call_refs.get(event.tool_use_id or "")
    head = f"↳ result of #{call}" if call is not None else "↳ result"
    code = result_exit_code(event)
    if code is not None and (code != 0 or event.is_error):
        head += f" (exit {code})"
    return head + (" ERROR:" if event.is_error else ":")


def _meta_suffix(meta: dict[str, Any], *keys: str) -> str:
    parts = [f"{k}={meta[k]}" for k in keys if meta.get(k) not in (None, "")]
    return f" ({', '.join(parts)})" if parts else ""


def _subagent_head(event: Event, call_refs: dict[str, int]) -> str:
    description = _one_line(event.text, 160)
    agent = event.agent_id or "?"
    if event.meta.get("agent_type"):
        agent += f", {event.meta['agent_type']}"
    label = f"agent {agent}: {description}" if description else f"agent {agent}"
    call = call_refs.get(event.tool_use_id or "")
    spawned = f" spawned by #{call}" if call is not None else ""
    return one_line(f"SUBAGENT ({label}){spawned} ┐")


def _render_one(event: Event, call_refs: dict[str, int], max_chars: int) -> str:
    """The text of one event without its `#N ` prefix and indentation."""
    kind, text, meta = event.kind, event.text, event.meta
    match kind:  # the commonest kinds first: each case looks its member up (~60 ns)
        case EventKind.TOOL_CALL:
            return tool_call_line(event.tool_name or "?", event.tool_input or {})
        case EventKind.TOOL_RESULT:
            return _body(_result_head(event, call_refs), text or "(no output)", max_chars)
        case EventKind.ASSISTANT:
            return _body("ASSISTANT:", text, max_chars)
        case EventKind.PROMPT:
            return _body("USER:", text, max(max_chars, _MAX_TASK_CHARS))
        case EventKind.THINKING:
            return f"THINKING: {_condense(text, _MAX_THINKING_CHARS)}"
        case EventKind.COMPACTION:
            head = "── CONTEXT COMPACTED" + _meta_suffix(meta, "trigger", "pre_tokens", "preTokens")
            return _body(head + " ── summary:" if text.strip() else head + " ──", text, max_chars)
        case EventKind.API_ERROR:
            return _body("API ERROR" + _meta_suffix(meta, "status") + ":", text, max_chars)
        case EventKind.INTERRUPTION:
            return _body("⚠ INTERRUPTED BY USER", text, 300)
        case EventKind.SUBAGENT:
            return _subagent_head(event, call_refs)
        case EventKind.RESULT:
            parts = ["ERROR" if event.is_error else "ok"]
            parts += [f"{k}={meta[k]}" for k in ("subtype", "num_turns") if meta.get(k)]
            return _body(f"RESULT ({', '.join(parts)}):", text, max_chars)
        case EventKind.META:
            return _body("CONTEXT (injected):", text, min(max_chars, 1_500))
        case EventKind.NOTIFICATION:
            return _body("NOTIFICATION:", text, min(max_chars, 1_500))
        case EventKind.COMMAND:
            return _body("COMMAND:", text, min(max_chars, 1_500))
        case EventKind.TERMINAL:
            return _body("TERMINAL:", text, max_chars)
        case _:
            return _body(f"{kind.value.upper()}:", text, max_chars)


def _indent(text: str, depth: int) -> str:
    if not depth:
        return text
    pad = _INDENT * depth
    return pad + text.replace("\n", "\n" + pad)


def _call_refs(session: Session) -> dict[str, int]:
    call = EventKind.TOOL_CALL
    return {
        e.tool_use_id: e.index for _, e in session.iter_events() if e.kind == call and e.tool_use_id
    }


def render_events(
    session: Session, *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
) -> list[RenderedEvent]:
    """Render every event (subagent children included, depth-first) as numbered text.

    Args:
        session: The session to render.
        max_output_chars: Longer outputs keep head and tail with a `[… cut …]` note.

    Returns:
        One `RenderedEvent` per event, in timeline order. A subagent's closing line is
        appended to the last event of its section, so event boundaries stay cut points.
    """
    call_refs = _call_refs(session)
    out: list[RenderedEvent] = []
    prompt, subagent = EventKind.PROMPT, EventKind.SUBAGENT

    def walk(events: list[Event], depth: int) -> None:
        for event in events:
            body = _render_one(event, call_refs, max_output_chars)
            if depth and event.kind == prompt:  # written by the parent agent
                body = "AGENT TASK:" + body.removeprefix("USER:")
            text = _indent(f"#{event.index} {body}".rstrip(), depth)
            out.append(RenderedEvent(event.index, depth, text))
            if event.kind == subagent:
                walk(event.children, depth + 1)
                close = _indent(f"└ end subagent #{event.index}", depth)
                last = out[-1]
                out[-1] = RenderedEvent(last.index, last.depth, f"{last.text}\n{close}")

    walk(session.events, 0)
    return out


# --- header -------------------------------------------------------------------------------


def _duration(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"


def _tokens_fact(session: Session) -> str | None:
    usage = session.usage
    if not usage.prompt_tokens and not usage.output_tokens:
        return None
    fact = f"tokens in {usage.prompt_tokens:,} / out {usage.output_tokens:,}"
    ratio = usage.cache_hit_ratio
    return fact + (f" (cache hit {ratio:.0%})" if ratio is not None else "")


def session_facts(session: Session) -> str:
    """One line of facts: source, project, branch, models, duration, tokens, events."""
    facts = [
        f"source {session.source.value}",
        f"project {session.project}" if session.project else None,
        f"branch {', '.join(session.git_branches)}" if session.git_branches else None,
        f"models {', '.join(session.models)}" if session.models else None,
        f"duration {_duration(session.duration_seconds)}" if session.duration_seconds else None,
        _tokens_fact(session),
        f"cost ${session.cost_usd:.2f}" if session.cost_usd is not None else None,
        plural(session.n_events, "event"),
    ]
    return one_line("SESSION: " + " · ".join(f for f in facts if f))


def render_header(session: Session) -> str:
    """The task context (explicit task or first human prompt) and one line of facts."""
    task = session.task_text
    task_text = (
        fence_block(cut_middle(clean_block(task).strip(), _MAX_TASK_CHARS))
        if task
        else "(no task statement found)"
    )
    return f"TASK:\n{task_text}\n{session_facts(session)}"


TIMELINE_MARK = "=== TIMELINE ==="
"""Between the header and the events in `render_timeline` (the judge's material has its
own `<transcript>` tag instead)."""


def render_timeline(session: Session, *, max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
    """Header, the timeline marker, then every rendered event, one event per block."""
    events = render_events(session, max_output_chars=max_output_chars)
    return "\n".join([render_header(session), TIMELINE_MARK, *(e.text for e in events)]) + "\n"
