"""Turn a real Claude Code JSONL into the observations the official Langfuse plugin uploads.

Plain JSON processing, mirroring `langfuse/Claude-Observability-Plugin` hooks/langfuse_hook.py
(reference §2): one trace per turn with id `sha256(f"{sessionId}:{uuid}")[:32]`, a root
SPAN, one GENERATION per merged `message.id`, one TOOL per tool call (metadata
`tool_id`/`tool_name`), levels never set, input/output as JSON *strings* (as the v2 API
returns them), `usageDetails` with only the values > 0. Reusable by any test that needs
Langfuse-shaped data (e.g. backfill): `convert_transcript(path)` → list of v2 dicts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

PROJECT_ID = "proj-scorer-test"
MAX_CHARS = 20_000
# A fixed fake price (USD per token) so tests can check the summed totalCost.
PRICE = {
    "input": 3e-6,
    "output": 15e-6,
    "cache_read_input_tokens": 0.3e-6,
    "cache_creation_input_tokens": 3.75e-6,
}
NameStyle = Literal["current", "turn", "legacy"]
ROOT_NAMES = {
    "current": "Conversational Turn",
    "turn": "Turn {n}",
    "legacy": "Claude Code - Turn {n}",
}
GEN_NAMES = {"current": "LLM Call {k}", "turn": "LLM Call {k}", "legacy": "Claude Generation {k}"}
SUB_GEN_NAMES = {
    "current": "Subagent LLM Call {k}",
    "turn": "Subagent LLM Call {k}",
    "legacy": "Subagent Generation {k}",
}


def trace_id_for(session_id: str, user_uuid: str) -> str:
    """The plugin's default trace id: `Langfuse.create_trace_id(seed=...)`."""
    return hashlib.sha256(f"{session_id}:{user_uuid}".encode()).hexdigest()[:32]


def _span_id(*parts: str) -> str:
    return hashlib.sha256(":".join(parts).encode()).hexdigest()[:16]


def _truncate(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS]


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _is_turn_start(row: dict[str, Any]) -> bool:
    if row.get("type") != "user" or row.get("isMeta") or row.get("isSidechain"):
        return False
    content = row.get("message", {}).get("content")
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)
    return isinstance(content, str)


@dataclass
class _Message:
    """One merged API response (all split lines sharing `message.id`)."""

    id: str
    model: str
    first_ts: str
    last_ts: str
    blocks: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Turn:
    user: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)


def _split_turns(rows: list[dict[str, Any]]) -> list[_Turn]:
    turns: list[_Turn] = []
    for row in rows:
        if _is_turn_start(row):
            turns.append(_Turn(user=row))
        elif turns and row.get("type") in ("assistant", "user"):
            turns[-1].rows.append(row)
    return turns


def _merge_messages(rows: list[dict[str, Any]]) -> list[_Message]:
    merged: dict[str, _Message] = {}
    for row in rows:
        if row.get("type") != "assistant":
            continue
        msg = row.get("message", {})
        mid = msg.get("id") or row.get("uuid")
        item = merged.setdefault(
            mid, _Message(mid, msg.get("model") or "claude", row["timestamp"], row["timestamp"])
        )
        item.blocks.extend(b for b in msg.get("content") or [] if isinstance(b, dict))
        item.usage = msg.get("usage") or item.usage  # the last split line's usage wins
        item.last_ts = row["timestamp"]
    return list(merged.values())


def _tool_results(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    results: dict[str, dict[str, Any]] = {}
    for row in rows:
        content = row.get("message", {}).get("content")
        if row.get("type") != "user" or not isinstance(content, list):
            continue
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                raw = block.get("content")
                text = raw if isinstance(raw, str) else json.dumps(raw)
                extra = row.get("toolUseResult")
                agent_id = extra.get("agentId") if isinstance(extra, dict) else None
                results[block["tool_use_id"]] = {
                    "output": _truncate(text),
                    "ts": row["timestamp"],
                    "agent_id": agent_id,
                }
    return results


def _usage_details(usage: dict[str, Any]) -> dict[str, int]:
    keys = {
        "input": "input_tokens",
        "output": "output_tokens",
        "cache_read_input_tokens": "cache_read_input_tokens",
        "cache_creation_input_tokens": "cache_creation_input_tokens",
    }
    details = {k: int(usage.get(src) or 0) for k, src in keys.items()}
    return {k: v for k, v in details.items() if v > 0}


def _cost(details: dict[str, int], model: str) -> float | None:
    if model == "<synthetic>" or not details:
        return None
    return round(sum(PRICE[k] * v for k, v in details.items()), 8)


@dataclass
class _Ctx:
    session_id: str
    trace_id: str
    trace_name: str
    style: NameStyle
    project_id: str
    subagent_dir: Path | None

    def base(self, obs_id: str, kind: str, name: str, start: str, end: str, parent: str | None):
        return {
            "id": obs_id,
            "traceId": self.trace_id,
            "startTime": start,
            "endTime": end,
            "projectId": self.project_id,
            "parentObservationId": parent,
            "type": kind,
            "name": name,
            "level": "DEFAULT",
            "environment": "default",
            "sessionId": self.session_id,
            "isRootObservation": parent is None,
            "traceName": self.trace_name,
            "tags": ["claude-code"],
        }


def _body(
    ctx: _Ctx, prompt: str, rows: list[dict[str, Any]], parent: str, start: str, sub: bool
) -> list[dict[str, Any]]:
    """The generations, tools (and one level of subagents) of one turn or subagent run."""
    messages = _merge_messages(rows)
    results = _tool_results(rows)
    out: list[dict[str, Any]] = []
    prev_end = start
    names = SUB_GEN_NAMES if sub else GEN_NAMES
    for k, msg in enumerate(messages, start=1):
        uses = [b for b in msg.blocks if b.get("type") == "tool_use"]
        text = "\n".join(b.get("text", "") for b in msg.blocks if b.get("type") == "text")
        ends = [results[u["id"]]["ts"] for u in uses if u["id"] in results]
        gen_end = max(ends) if ends else msg.last_ts
        if k == 1:
            gen_input: Any = {"role": "user", "content": _truncate(prompt)}
        else:
            prior = messages[k - 2]
            tool_results = [
                {
                    "tool_use_id": b["id"],
                    "tool_name": b["name"],
                    "output": results[b["id"]]["output"],
                }
                for b in prior.blocks
                if b.get("type") == "tool_use" and b["id"] in results
            ]
            gen_input = {"role": "tool", "tool_results": tool_results} if tool_results else None
        details = _usage_details(msg.usage)
        gen = ctx.base(
            _span_id(ctx.trace_id, parent, msg.id),
            "GENERATION",
            names[ctx.style].format(k=k),
            prev_end,
            gen_end,
            parent,
        )
        gen.update(
            input=json.dumps(gen_input) if gen_input is not None else None,
            output=json.dumps(
                {
                    "role": "assistant",
                    "content": _truncate(text),
                    "tool_calls": [{"id": u["id"], "name": u["name"]} for u in uses],
                }
            ),
            metadata={"assistant_index": k - 1, "tool_count": len(uses)},
            model=msg.model,
            usageDetails=details,
            costDetails={},
            totalCost=_cost(details, msg.model),
        )
        out.append(gen)
        for use in uses:
            out.extend(_tool(ctx, use, results.get(use["id"]), msg.last_ts, parent, sub))
        prev_end = gen_end
    return out


def _tool(
    ctx: _Ctx, use: dict[str, Any], result: dict[str, Any] | None, ts: str, parent: str, sub: bool
) -> list[dict[str, Any]]:
    output = result["output"] if result else None
    tool = ctx.base(
        _span_id(ctx.trace_id, use["id"]),
        "TOOL",
        f"Tool: {use['name']}",
        ts,
        result["ts"] if result else ts,
        parent,
    )
    raw_input = use.get("input")
    tool.update(
        input=json.dumps(raw_input if isinstance(raw_input, dict) else _truncate(str(raw_input))),
        output=json.dumps(output) if output is not None else None,
        metadata={
            "tool_name": use["name"],
            "tool_id": use["id"],
            "input_meta": {"truncated": False},
            "output_meta": {"truncated": False, "orig_len": len(output or "")},
        },
    )
    out = [tool]
    agent_id = result.get("agent_id") if result else None
    if not sub and agent_id and ctx.subagent_dir is not None:
        path = ctx.subagent_dir / f"agent-{agent_id}.jsonl"
        if path.exists():
            desc = (raw_input or {}).get("description", "")
            out.extend(_subagent(ctx, path, desc, parent, ts))
    return out


def _subagent(ctx: _Ctx, path: Path, description: str, parent: str, ts: str) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    first = next((r for r in rows if r.get("type") == "user"), None)
    if first is None:
        return []
    prompt = _text_of(first["message"].get("content"))
    messages = _merge_messages(rows)
    last_text = next((t for m in reversed(messages) if (t := _text_of([b for b in m.blocks]))), "")
    span_id = _span_id(ctx.trace_id, "subagent", path.name)
    end = rows[-1].get("timestamp") or first["timestamp"]
    span = ctx.base(
        span_id,
        "SPAN",
        f"Subagent: {description}" if description else "Subagent",
        first["timestamp"],
        end,
        parent,
    )
    span.update(
        input=json.dumps({"role": "user", "content": _truncate(prompt)}),
        output=json.dumps({"role": "assistant", "content": _truncate(last_text)}),
        metadata={
            "agent_type": "general-purpose",
            "description": description,
            "transcript_path": path.name,
        },
    )
    return [span, *_body(ctx, prompt, rows[1:], span_id, first["timestamp"], sub=True)]


def convert_transcript(
    path: Path,
    *,
    style: NameStyle = "current",
    project_id: str = PROJECT_ID,
    link_subagents: bool = False,
) -> list[dict[str, Any]]:
    """All observations (v2 JSON, camelCase) the plugin would have uploaded for `path`.

    Args:
        style: Which generation of plugin names to use (§2.3 name history).
        link_subagents: Expand subagent files as `Subagent:` spans. The plugin does this
            only when `*.meta.json` exists (newer Claude Code); the real data predates it,
            so tests opt in and the link is taken from `toolUseResult.agentId`.
    """
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    session_id = next(r["sessionId"] for r in rows if r.get("sessionId"))
    sub_dir = path.parent / path.stem / "subagents" if link_subagents else None
    observations: list[dict[str, Any]] = []
    for n, turn in enumerate(_split_turns(rows), start=1):
        user = turn.user
        trace_id = trace_id_for(session_id, user["uuid"])
        ctx = _Ctx(
            session_id,
            trace_id,
            f"Claude Code - Turn {n} ({session_id[:8]})",
            style,
            project_id,
            sub_dir,
        )
        prompt = _text_of(user["message"].get("content"))
        root_id = _span_id(trace_id, "root")
        body = _body(ctx, prompt, turn.rows, root_id, user["timestamp"], sub=False)
        last_text = next(
            (
                json.loads(o["output"])["content"]
                for o in reversed(body)
                if o["type"] == "GENERATION"
                and o["parentObservationId"] == root_id
                and json.loads(o["output"])["content"]
            ),
            "",
        )
        end = max([user["timestamp"], *(r["timestamp"] for r in turn.rows if r.get("timestamp"))])
        root = ctx.base(
            root_id, "SPAN", ROOT_NAMES[style].format(n=n), user["timestamp"], end, None
        )
        root.update(
            input=json.dumps({"role": "user", "content": _truncate(prompt)}),
            output=json.dumps({"role": "assistant", "content": last_text}),
            metadata={
                "source": "claude-code",
                "session_id": session_id,
                "turn_number": n,
                "transcript_path": path.name,
                "user_text": {"truncated": len(prompt) > MAX_CHARS, "orig_len": len(prompt)},
                "assistant_message_count": sum(1 for o in body if o["type"] == "GENERATION"),
                "cwd": user.get("cwd"),
                "git_branch": user.get("gitBranch"),
            },
        )
        observations.append(root)
        observations.extend(body)
    return observations


def generic_trace(
    session_id: str = "generic-session-1", project_id: str = PROJECT_ID
) -> list[dict]:
    """A non-Claude-Code trace: an app's root SPAN with a retriever, a generation and an event."""
    trace_id = "f" * 32

    def obs(i: str, kind: str, name: str, t: int, parent: str | None, **kw: Any) -> dict:
        base = {
            "id": i,
            "traceId": trace_id,
            "projectId": project_id,
            "type": kind,
            "name": name,
            "startTime": f"2026-11-20T10:00:0{t}.000Z",
            "endTime": f"2026-11-20T10:00:0{t + 1}.000Z",
            "parentObservationId": parent,
            "isRootObservation": parent is None,
            "sessionId": session_id,
            "level": "DEFAULT",
            "metadata": {},
            "traceName": "rag-answer",
        }
        return {**base, **kw}

    return [
        obs(
            "root",
            "SPAN",
            "rag-answer",
            0,
            None,
            input=json.dumps({"question": "What is 2+2?"}),
            output=json.dumps("The answer is 4."),
        ),
        obs(
            "ret",
            "RETRIEVER",
            "search-docs",
            1,
            "root",
            input=json.dumps({"q": "2+2"}),
            output=json.dumps([{"doc": "arithmetic.md"}]),
        ),
        obs(
            "gen",
            "GENERATION",
            "openai-chat",
            2,
            "root",
            model="gpt-5-mini",
            input=json.dumps(
                [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": "What is 2+2?"},
                ]
            ),
            output=json.dumps({"role": "assistant", "content": "2+2 = 4"}),
            usageDetails={"input": 20, "output": 5, "total": 25},
            totalCost=0.0001,
        ),
        obs("evt", "EVENT", "cache-miss", 3, "root", level="WARNING", statusMessage="cold cache"),
        obs(
            "bad",
            "GENERATION",
            "retry-call",
            4,
            "root",
            model="gpt-5-mini",
            level="ERROR",
            statusMessage="upstream 500",
            input=json.dumps("again"),
            output=None,
        ),
    ]
