"""What session-scorer itself put into a session, left out of what the judge reads (pure).

`/session-scorer:score` injects a scorecard into the conversation and the assistant then
repeats it; `/session-scorer:view-scores` injects where the viewer went. Judged again,
that text would let the judge read its own earlier verdict (and a closing report that
is only an echo of it). Each such block, from the command's line to the next thing the
user does (a prompt, another command, an interruption, a compaction), becomes one line:

    #41 [session-scorer's /session-scorer:score and the reply to it: 4 events left out]

The command line itself is Claude Code's own (`<command-name>` in a user line, which no
tool output can produce), so a transcript cannot hide work by quoting our command's
text. Assistant turns Claude Code attributes to our plugin (`attributionPlugin`) are
left out too, wherever they are.
"""

from __future__ import annotations

import hashlib
import json

from scorer.models import Event, EventKind, Session

PLUGIN = "session-scorer"
"""Our Claude Code plugin's name: its commands are `/session-scorer:<name>`."""
COMMANDS = frozenset({f"/{PLUGIN}:score", f"/{PLUGIN}:view-scores"})
_ENDS_BLOCK = frozenset(
    {EventKind.PROMPT, EventKind.COMMAND, EventKind.INTERRUPTION, EventKind.COMPACTION}
)
"""What the user (or Claude Code) does next, which ends a command's block."""


def own_command(event: Event) -> str | None:
    """The name of our plugin's command this event runs, if it is one."""
    if event.kind is not EventKind.COMMAND:
        return None
    name = str(event.meta.get("command") or "").strip()
    return name if name in COMMANDS else None


def attributed_to_us(event: Event) -> bool:
    """An assistant turn Claude Code says our plugin's command prompted."""
    return event.meta.get("plugin") == PLUGIN


def leave_out_own_output(session: Session) -> Session:
    """`session` without our commands' blocks (each replaced by a one-line marker).

    The session is returned unchanged (the same object) when it has none.
    """
    events = _leave_out(session.events)
    if events is session.events:
        return session
    return session.model_copy(update={"events": events})


def _leave_out(events: list[Event]) -> list[Event]:
    if not any(own_command(e) or attributed_to_us(e) for e in events):
        return events
    kept: list[Event] = []
    i = 0
    while i < len(events):
        name = own_command(events[i])
        if name is None:
            if not attributed_to_us(events[i]):
                kept.append(events[i])
            i += 1
            continue
        end = i + 1
        while end < len(events) and not _ends_block(events[end]):
            end += 1
        kept.append(marker(events[i], name, end - i))
        i = end
    return kept


def _ends_block(event: Event) -> bool:
    """What the user does next, or what session-scorer appended when it scored the
    session (the workspace's final state, `live.final_state`): never part of a block."""
    return event.kind in _ENDS_BLOCK or event.meta.get("observed_by") == PLUGIN


def marker(command: Event, name: str, n_events: int) -> Event:
    """The one line standing for a left-out block (numbered like its command line)."""
    text = (
        f"[session-scorer's {name} and the reply to it: {n_events} "
        f"{'event' if n_events == 1 else 'events'} left out]"
    )
    return Event(
        index=command.index,
        kind=EventKind.SYSTEM,
        timestamp=command.timestamp,
        text=text,
        meta={"left_out": n_events, "command": name},
    )


WORK = frozenset(
    {EventKind.PROMPT, EventKind.ASSISTANT, EventKind.TOOL_CALL, EventKind.TOOL_RESULT,
     EventKind.SUBAGENT}
)  # fmt: skip
"""The events that are work: a new one of these makes a session worth judging again."""


def work_fingerprint(session: Session) -> str:
    """A hash of the work the judge would see: prompts, assistant turns, tool calls and
    results (subagents' included), without our own commands' blocks.

    Claude Code keeps appending bookkeeping to a transcript (queue operations, a resume
    with nothing done, "Unknown command", `/score` and its echo); none of that changes
    this hash, so none of it makes a session judged (and paid for) again.
    """
    digest = hashlib.sha256(b"work/v1\0")
    for event in _work(leave_out_own_output(session).events):
        part = [event.kind.value, event.text, event.tool_name, event.tool_input, event.is_error]
        digest.update(json.dumps(part, sort_keys=True, default=str).encode() + b"\0")
    return digest.hexdigest()[:32]


def _work(events: list[Event]) -> list[Event]:
    out: list[Event] = []
    for event in events:
        if event.kind in WORK:
            out.append(event)
        out.extend(_work(event.children))
    return out
