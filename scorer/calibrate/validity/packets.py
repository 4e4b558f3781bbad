"""Judge packets: the exact request `score-session --prompt <task>` sends, made readable.

A packet is one Markdown file a reviewer can judge blind: the system prompt, the user
message and the output JSON schema, verbatim, with a short instruction to answer with a
JSON object matching the schema. Nothing in it comes from the run's label: the session
is loaded, given its task the way `--prompt` does, prepared and turned into requests by
the product's own code (`prepare`, `AnthropicJudge.scoring_request` / `notes_requests` /
`final_request`), never by a copy.

A session of one chunk has one packet (`stage` `score`). A chunked session first has
one notes packet per chunk (`<run>.notes-<i>.md`, answered as `<run>.notes-<i>.json`);
once every notes answer is in, building the packets again writes its final packet.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Literal

from pydantic import BaseModel

from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.schema import ChunkNotes
from scorer.models import Session
from scorer.prepare import Prepared, prepare
from scorer.sources import resolve

Stage = Literal["score", "notes", "final"]


class Request(BaseModel):
    """One judge request of a run, as a packet shows it."""

    name: str
    """File stem: `<run>` for the scoring request, `<run>.notes-<i>` for chunk notes."""
    stage: Stage
    params: dict[str, Any]
    """The Messages API params, exactly as the judge sends them."""

    @property
    def sha256(self) -> str:
        """Hash of the params' canonical JSON: what a verdict was given."""
        text = json.dumps(self.params, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(text.encode()).hexdigest()


def load_prepared(session_path: str, task: str) -> Prepared:
    """Load and prepare a session as `score-session PATH --prompt TASK` does."""
    session: Session = resolve(session_path, task=task).load()
    if task and not session.task:
        session.task = task
    return prepare(session)


def requests_for(
    judge: AnthropicJudge, prepared: Prepared, run: str, notes: list[ChunkNotes] | None
) -> list[Request]:
    """The requests a reviewer answers next for this run.

    Args:
        judge: Builds the requests (its model, effort, prompts and rubric).
        prepared: The prepared session.
        run: The run id (names the requests).
        notes: The chunk notes already answered, for a chunked session (all of them).
    """
    header, chunks = prepared.header, prepared.chunks
    if len(chunks) == 1:
        return [Request(name=run, stage="score", params=judge.scoring_request(header, chunks[0]))]
    if notes is not None and len(notes) == len(chunks):
        params = judge.final_request(header, notes, chunks[-1])
        return [Request(name=run, stage="final", params=params)]
    return [
        Request(name=f"{run}.notes-{i}", stage="notes", params=params)
        for i, params in enumerate(judge.notes_requests(header, chunks), start=1)
    ]


_INSTRUCTIONS = """\
You are the judge model of session-scorer. Below are, verbatim, the system prompt and the
user message it sends, and the JSON schema its reply must match. Read them as that model
would, follow the system prompt, and reply with exactly one JSON object that matches the
schema: no prose around it, no code fence. Save the reply as `{answer}`.
"""


def _fenced(title: str, text: str) -> list[str]:
    # marker lines instead of ``` fences: the material itself holds ``` blocks
    return [f"## {title}", "", f"<<<<< BEGIN {title.upper()} >>>>>", text.rstrip("\n"),
            f"<<<<< END {title.upper()} >>>>>", ""]  # fmt: skip


def render_packet(request: Request) -> str:
    """The readable packet of one request (Markdown)."""
    params = request.params
    system = "\n\n".join(block["text"] for block in params["system"])
    lines = [f"# Judge packet {request.name} ({request.stage})", ""]
    lines += [_INSTRUCTIONS.format(answer=f"{request.name}.json"), ""]
    lines += _fenced("System prompt", system)
    for i, message in enumerate(params["messages"], start=1):
        title = (
            "User message" if len(params["messages"]) == 1 else f"Message {i} ({message['role']})"
        )
        lines += _fenced(title, _content_text(message["content"]))
    schema = params["output_config"]["format"]["schema"]
    lines += _fenced("Output JSON schema", json.dumps(schema, indent=2, ensure_ascii=False))
    lines += ["## Your reply", "", f"One JSON object matching the schema, saved as `{request.name}.json`.", ""]  # fmt: skip
    return "\n".join(lines)


def _content_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "\n\n".join(str(block.get("text", "")) for block in content)
