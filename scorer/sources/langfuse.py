"""Read one session from Langfuse (v2 observations, or the legacy reads of self-hosted v3).

I/O is `fetch_observations` (`sources.langfuse_read`: size-aware v2 pages, legacy
fallback); the
mapping to a `Session` (`observations_to_session`) is pure. It understands the three
generations of the official Claude Code plugin's names by keying on observation type and
the `Tool: ` prefix, and renders generic (non-Claude-Code) traces sensibly too.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from langfuse.api.commons.types.observation_v2 import ObservationV2

from scorer._identity import is_generic_name
from scorer.errors import EmptySessionError
from scorer.langfuse_client import LangfuseClient, get_client
from scorer.models import Event, EventKind, Session, SourceKind, TokenUsage
from scorer.sources._common import number_events
from scorer.sources._jsonl import json_depth_exceeds
from scorer.sources.langfuse_read import (
    EXPAND_METADATA,
    FIELDS,
    PAGE_SIZE,
    ReadStats,
    fetch_observations,
)

__all__ = [
    "EXPAND_METADATA",
    "FIELDS",
    "PAGE_SIZE",
    "LangfuseSource",
    "ReadStats",
    "fetch_observations",
    "observations_to_session",
    "session_url",
]

_EXIT_CODE = re.compile(r"^(?:Error: )?Exit code (-?\d+)")
# Hook blocks ("Pre-commit validation failed:") carry no exit code: a first line that
# announces a failure is the only signal left once the plugin dropped `is_error`.
_FAILED_HEADLINE = re.compile(r"^[^\n]{0,80}\bfailed:", re.IGNORECASE)
_GENERATION_TYPES = {"GENERATION", "EMBEDDING"}
_AGENT_TYPES = {"AGENT"}
_CONTAINER_TYPES = {"SPAN", "CHAIN", "AGENT"}
_PROMPT_KINDS = (
    ("This session is being continued from a previous conversation", EventKind.COMPACTION),
    ("[Request interrupted by user", EventKind.INTERRUPTION),
    ("<task-notification>", EventKind.NOTIFICATION),
    ("<command-name>", EventKind.COMMAND),
    ("<local-command-stdout>", EventKind.COMMAND),
    ("<bash-input>", EventKind.COMMAND),
)


# ---------------------------------------------------------------- I/O


class LangfuseSource:
    """A session read from Langfuse (optionally enriched from the local JSONL).

    Args:
        session_id: The Langfuse `sessionId` (for the Claude Code plugin, the CC session id).
        client: The Langfuse project, or None to build one from the settings.
        enrich_local: When the same session's JSONL exists under `projects_root`, use it
            for the events (it has errors, thinking and compactions) and keep the link.
        projects_root: Where to look for `<slug>/<session_id>.jsonl`.
        page_size: Observations per page (the API allows at most 1000).
    """

    kind = SourceKind.LANGFUSE

    def __init__(
        self,
        session_id: str,
        *,
        client: LangfuseClient | None = None,
        enrich_local: bool = False,
        projects_root: Path | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        self.session_id = session_id
        self._client = client
        self.enrich_local = enrich_local
        self.projects_root = projects_root
        self.page_size = page_size

    def load(self) -> Session:
        """Fetch all observations of the session and map them to a `Session`.

        Raises:
            EmptySessionError: When Langfuse has no observations for the session.
            CredentialsError: When the keys are rejected.
            SourceError: When the API fails after retries.
        """
        client = get_client(self._client)
        observations = fetch_observations(
            client, session_id=self.session_id, page_size=self.page_size
        )
        if not observations:
            raise EmptySessionError(
                f"no observations for session {self.session_id} in Langfuse at {client.host}"
            )
        session = observations_to_session(self.session_id, observations, host=client.host)
        if self.enrich_local:
            local = self._local_transcript()
            if local is not None:
                return _enrich(session, local)
        return session

    def _local_transcript(self) -> Path | None:
        from scorer.settings import get_settings

        root = self.projects_root or get_settings().claude_projects
        if not root.is_dir():
            return None
        return next(iter(sorted(root.glob(f"*/{self.session_id}.jsonl"))), None)


def _enrich(remote: Session, path: Path) -> Session:
    """Use the richer local transcript and record where the Langfuse copy lives."""
    from scorer.sources.claude_code import ClaudeCodeSource  # written in parallel; lazy

    local = ClaudeCodeSource(path).load()
    extra = {**local.extra, "langfuse": remote.extra.get("langfuse", {})}
    cost = local.cost_usd if local.cost_usd is not None else remote.cost_usd
    return local.model_copy(update={"extra": extra, "cost_usd": cost})


# ---------------------------------------------------------------- pure mapping


def session_url(host: str, project_id: str, session_id: str) -> str:
    """Deep link to a session in the Langfuse UI (ids URL-encoded: any string is a session
    id, `/`, `#`, `?` and spaces included)."""
    return f"{host.rstrip('/')}/project/{quote(project_id, safe='')}/sessions/{quote(session_id, safe='')}"


def observations_to_session(
    session_id: str, observations: list[ObservationV2], *, host: str = ""
) -> Session:
    """Map a session's observations to a `Session`: traces in time order are turns."""
    by_trace: dict[str, list[ObservationV2]] = defaultdict(list)
    for obs in observations:
        by_trace[obs.trace_id or obs.id].append(obs)
    traces = sorted(by_trace.values(), key=lambda group: min(o.start_time for o in group))
    events: list[Event] = []
    for group in traces:
        events.extend(trace_events(group))
    number_events(events)

    generations = [o for o in observations if o.type in _GENERATION_TYPES]
    roots = [_root(group) for group in traces]
    root_meta = next((_metadata(r) for r in roots if _metadata(r)), {})
    project_id = observations[0].project_id
    url = session_url(host, project_id, session_id) if host else None
    costs = [o.total_cost for o in observations if o.total_cost is not None]
    cwd = _meta_get(root_meta, "cwd")
    # A trace name set by the caller is a title; the plugin's `Turn N` names are not.
    title = next((r.trace_name for r in roots if not is_generic_name(r.trace_name)), None)
    branches = _unique(_branch(_meta_get(_metadata(r), "git_branch")) for r in roots)
    return Session(
        session_id=session_id,
        source=SourceKind.LANGFUSE,
        origin=url or f"langfuse:{session_id}",
        title=title,
        project=Path(cwd).name if isinstance(cwd, str) and cwd else None,
        cwd=cwd if isinstance(cwd, str) else None,
        git_branches=[b for b in branches if b],
        started_at=min(o.start_time for o in observations),
        ended_at=max(o.end_time or o.start_time for o in observations),
        models=[m for m in _unique(o.model for o in generations) if m and m != "<synthetic>"],
        usage=sum((usage_from_details(o.usage_details) for o in generations), TokenUsage()),
        cost_usd=round(sum(costs), 6) if costs else None,
        events=events,
        extra={
            "num_turns": len(traces),
            "langfuse": {
                "host": host,
                "project_id": project_id,
                "url": url,
                "trace_ids": [_root(g).trace_id for g in traces],
                "n_observations": len(observations),
            },
        },
    )


def trace_events(group: list[ObservationV2]) -> list[Event]:
    """The events of one trace (one turn): the prompt, then its observations in time order."""
    root = _root(group)
    children = _children_index(group)
    events: list[Event] = []
    if root.type in _GENERATION_TYPES:  # a bare generation trace (generic SDK use)
        return _generation_events(root, with_prompt=True)
    prompt = io_text(root.input)
    if prompt:
        events.append(prompt_event(prompt, root.start_time))
    events.extend(_walk(children.get(root.id, []), children))
    final = io_text(root.output)
    said = {e.text for e in events if e.kind == EventKind.ASSISTANT}
    # The plugin repeats the last assistant text on the root; only add what is new.
    if final and final not in said:
        events.append(Event(index=0, kind=EventKind.ASSISTANT, text=final, timestamp=root.end_time))
    if root.level == "ERROR":
        events.append(_error_event(root))
    return events


def _walk(nodes: list[ObservationV2], children: dict[str, list[ObservationV2]]) -> list[Event]:
    events: list[Event] = []
    for obs in _ordered(nodes):
        kids = children.get(obs.id, [])
        if obs.type in _GENERATION_TYPES:
            events.extend(_generation_events(obs))
            events.extend(_walk(kids, children))
        elif obs.type == "TOOL" or (obs.name or "").startswith("Tool: "):
            events.extend(_tool_events(obs, kids, children))
        elif _is_subagent(obs):
            events.append(_subagent_event(obs, kids, children))
        else:
            events.extend(_other_events(obs))
            events.extend(_walk(kids, children))
    return events


def _generation_events(obs: ObservationV2, *, with_prompt: bool = False) -> list[Event]:
    events: list[Event] = []
    if with_prompt and (prompt := io_text(obs.input)):
        events.append(prompt_event(prompt, obs.start_time))
    text = io_text(obs.output)
    if text.strip():
        events.append(
            Event(
                index=0,
                kind=EventKind.ASSISTANT,
                text=text,
                timestamp=obs.end_time or obs.start_time,
                model=obs.model,
                meta={"langfuse_observation_id": obs.id},
            )
        )
    if obs.level == "ERROR":
        events.append(_error_event(obs))
    return events


def _tool_events(
    obs: ObservationV2, kids: list[ObservationV2], children: dict[str, list[ObservationV2]]
) -> list[Event]:
    meta = _metadata(obs)
    name = _meta_get(meta, "tool_name") or (obs.name or "tool").removeprefix("Tool: ")
    tool_id = _meta_get(meta, "tool_id") or obs.id
    raw_input = parse_io(obs.input)
    tool_input = raw_input if isinstance(raw_input, dict) else {"input": raw_input}
    output = tool_output_text(obs.output)
    failed, exit_code = detect_failure(output)
    call = Event(
        index=0,
        kind=EventKind.TOOL_CALL,
        timestamp=obs.start_time,
        tool_name=name,
        tool_use_id=tool_id,
        tool_input=tool_input,
        meta={"langfuse_observation_id": obs.id},
    )
    result = Event(
        index=0,
        kind=EventKind.TOOL_RESULT,
        timestamp=obs.end_time or obs.start_time,
        text=output,
        tool_name=name,
        tool_use_id=tool_id,
        is_error=failed or obs.level == "ERROR",
        exit_code=exit_code,
    )
    # The TypeScript plugin nests the subagent under its Task/Agent tool call.
    return [call, *_walk(kids, children), result]


def _subagent_event(
    obs: ObservationV2, kids: list[ObservationV2], children: dict[str, list[ObservationV2]]
) -> Event:
    meta = _metadata(obs)
    description = _meta_get(meta, "description") or (obs.name or "").partition(": ")[2]
    inner: list[Event] = []
    if prompt := io_text(obs.input):
        inner.append(prompt_event(prompt, obs.start_time))
    inner.extend(_walk(kids, children))
    transcript = _meta_get(meta, "transcript_path")
    agent_id = None
    if isinstance(transcript, str) and transcript.startswith("agent-"):
        agent_id = Path(transcript).name.removeprefix("agent-").removesuffix(".jsonl")
    return Event(
        index=0,
        kind=EventKind.SUBAGENT,
        timestamp=obs.start_time,
        text=str(description or obs.name or "subagent"),
        agent_id=agent_id,
        children=inner,
        meta={"agent_type": _meta_get(meta, "agent_type"), "langfuse_observation_id": obs.id},
    )


def _other_events(obs: ObservationV2) -> list[Event]:
    """SPAN/EVENT/CHAIN/... from generic tracing: one SYSTEM line with its output."""
    text = io_text(obs.output) or io_text(obs.input)
    label = f"{obs.type.lower()} {obs.name or ''}".strip()
    event = Event(
        index=0,
        kind=EventKind.SYSTEM,
        timestamp=obs.start_time,
        text=f"{label}: {text}" if text else label,
        is_error=obs.level == "ERROR",
        meta={"langfuse_observation_id": obs.id, "type": obs.type},
    )
    return [event]


def _error_event(obs: ObservationV2) -> Event:
    return Event(
        index=0,
        kind=EventKind.API_ERROR,
        timestamp=obs.end_time or obs.start_time,
        text=obs.status_message or f"{obs.type} {obs.name or ''} failed".strip(),
        is_error=True,
        meta={"langfuse_observation_id": obs.id},
    )


def prompt_event(text: str, timestamp: datetime | None) -> Event:
    """A turn's user text, classified (real prompt, compaction summary, interruption...)."""
    kind = next((k for prefix, k in _PROMPT_KINDS if text.lstrip().startswith(prefix)), None)
    return Event(index=0, kind=kind or EventKind.PROMPT, text=text, timestamp=timestamp)


def detect_failure(text: str) -> tuple[bool, int | None]:
    """A failed tool from its output text alone: the plugin never sets `level`."""
    head = text.lstrip()
    match = _EXIT_CODE.match(head)
    exit_code = int(match.group(1)) if match else None
    failed = (
        (exit_code is not None and exit_code != 0)
        or "<tool_use_error>" in head[:2000]
        or head.startswith("Error:")
        or bool(_FAILED_HEADLINE.match(head))
    )
    return failed, exit_code


def parse_io(value: Any) -> Any:
    """v2 returns input/output as raw strings; decode JSON when it is JSON."""
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in '{["' or stripped in ("null", "true", "false"):
            try:
                decoded = json.loads(stripped)
            except (ValueError, RecursionError):
                return value
            return value if json_depth_exceeds(decoded) else decoded
    return value


def io_text(value: Any) -> str:
    """The human-readable text of an input/output (chat message, message list, blocks)."""
    value = parse_io(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and all(isinstance(v, dict) and "role" in v for v in value):
            return io_text(value[-1])  # a chat history: the newest message is the news
        if all(isinstance(v, dict) and v.get("type") == "text" for v in value):
            return "\n".join(str(v.get("text", "")) for v in value)
    if isinstance(value, dict):
        if "content" in value and value.get("content") is not None:
            return io_text(value["content"])
        if "role" in value:
            return ""  # e.g. {"role":"tool","tool_results":[...]}: shown by the TOOLs
        for key in ("text", "output", "result", "completion", "message"):
            if isinstance(value.get(key), str):
                return value[key]
    return json.dumps(value, ensure_ascii=False, default=str)


def tool_output_text(value: Any) -> str:
    """A TOOL's output as the tool printed it.

    The plugin sends tool_result content as a string; when that text is JSON (an API
    response, `gh ... --json`), the read returns it as JSON, and `io_text` would keep only
    a `message`/`content` field. Keep it whole instead; unwrap only the plugin's own
    shapes: `{"result", "injected_instructions"}` (skill capture) and text-block lists.
    """
    parsed = parse_io(value)
    if parsed is None:
        return ""
    if isinstance(parsed, str):
        return parsed
    if isinstance(parsed, dict) and "result" in parsed and set(parsed) <= _SKILL_CAPTURE:
        return tool_output_text(parsed["result"])
    if (
        isinstance(parsed, list)
        and parsed
        and all(isinstance(v, dict) and v.get("type") == "text" for v in parsed)
    ):
        return "\n".join(str(v.get("text", "")) for v in parsed)
    if isinstance(value, str):
        return value.strip()
    return json.dumps(parsed, ensure_ascii=False, default=str)


_SKILL_CAPTURE = {"result", "injected_instructions"}


def usage_from_details(details: dict[str, int] | None) -> TokenUsage:
    """Langfuse `usageDetails` → TokenUsage (Anthropic keys as the plugin sends them)."""
    d = details or {}

    def first(*keys: str) -> int:
        return int(next((d[k] for k in keys if isinstance(d.get(k), int | float)), 0))

    return TokenUsage(
        input_tokens=first("input", "prompt_tokens", "input_tokens"),
        output_tokens=first("output", "completion_tokens", "output_tokens"),
        cache_read_tokens=first("cache_read_input_tokens", "input_cache_read"),
        cache_write_tokens=first("cache_creation_input_tokens", "input_cache_creation"),
    )


def _root(group: list[ObservationV2]) -> ObservationV2:
    ids = {o.id for o in group}
    roots = [o for o in group if o.is_root_observation or o.parent_observation_id not in ids]
    return min(roots or group, key=lambda o: (not o.is_root_observation, o.start_time))


def _children_index(group: list[ObservationV2]) -> dict[str, list[ObservationV2]]:
    root = _root(group)
    ids = {o.id for o in group}
    index: dict[str, list[ObservationV2]] = defaultdict(list)
    for obs in group:
        if obs.id != root.id:
            # An orphan (parent not fetched) hangs off the root rather than vanishing.
            parent = obs.parent_observation_id
            index[parent if parent in ids else root.id].append(obs)
    return index


def _ordered(nodes: Iterable[ObservationV2]) -> list[ObservationV2]:
    # A generation starts at the previous tool result, before the tools it calls.
    return sorted(nodes, key=lambda o: (o.start_time, o.type not in _GENERATION_TYPES))


def _is_subagent(obs: ObservationV2) -> bool:
    return obs.type in _AGENT_TYPES or (
        obs.type in _CONTAINER_TYPES and (obs.name or "").startswith("Subagent")
    )


def _metadata(obs: ObservationV2) -> dict[str, Any]:
    meta = obs.metadata
    if isinstance(meta, str):
        meta = parse_io(meta)
    return meta if isinstance(meta, dict) else {}


def _meta_get(meta: dict[str, Any], key: str) -> Any:
    """A metadata value by plain or `claude.`-prefixed key (the TypeScript plugin)."""
    value = meta.get(key, meta.get(f"claude.{key}"))
    return parse_io(value) if isinstance(value, str) and value[:1] in "{[" else value


def _branch(value: Any) -> str | None:
    """A git branch from metadata: JSON decoding can turn a branch named `2026` or
    `true` into a number or a bool; keep it as the branch's text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str | int | float):
        return str(value).strip() or None
    return None


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(v for v in values if v is not None))
