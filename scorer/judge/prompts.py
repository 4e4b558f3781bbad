"""Load the prompt files in `prompts/` and build the judge's requests (pure functions).

Every prompt file starts with a front-matter block carrying its version:

    ---
    version: 2026-11-23.1
    ---

`PromptSet.version` joins the files' versions (all equal in practice) and `PromptSet.hash`
is sha256 over every file's name and bytes (first 16 hex); both go into each Scorecard.

Placeholders are `{{name}}`. Substitution is one pass, so a transcript that itself contains
`{{...}}` is never expanded.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from scorer.errors import ConfigError
from scorer.judge.rubric import Rubric
from scorer.models import Chunk
from scorer.prepare.fence import skeleton
from scorer.resources import data_dir

if TYPE_CHECKING:  # the schema module loads the SDK; prompts are read without it
    from scorer.judge.schema import ChunkNotes

PROMPT_FILES = (
    "system.md",
    "chunk_notes.md",
    "final.md",
    "final_material_single.md",
    "final_material_chunked.md",
    "second_opinion.md",
)
_FRONT = re.compile(r"\A---\n(?P<meta>.*?)\n---\n", re.S)
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")
CACHE_CONTROL = {"type": "ephemeral"}


class PromptMeta(BaseModel):
    """The front matter of one prompt file."""

    model_config = ConfigDict(extra="forbid")

    version: str


class PromptSet(BaseModel):
    """The prompt templates with their version and content hash."""

    templates: dict[str, str]
    """File name → body (front matter removed)."""
    version: str
    hash: str

    def render(self, name: str, **values: str) -> str:
        """Fill the `{{placeholders}}` of template `name`; every placeholder must be given."""
        template = self.templates[name]
        missing = set(_PLACEHOLDER.findall(template)) - set(values)
        if missing:
            raise ConfigError(f"prompt {name}: no value for {sorted(missing)}")
        return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template).strip() + "\n"


def _split_front_matter(name: str, raw: str) -> tuple[PromptMeta, str]:
    match = _FRONT.match(raw)
    if not match:
        raise ConfigError(f"prompt {name}: missing '---' front matter with a version")
    pairs = [line.split(":", 1) for line in match["meta"].splitlines() if line.strip()]
    try:
        meta = PromptMeta.model_validate({k.strip(): v.strip() for k, v in pairs})
    except ValueError as e:
        raise ConfigError(f"prompt {name}: bad front matter ({e.__class__.__name__})") from e
    return meta, raw[match.end() :]


def load_prompts(directory: Path | None = None) -> PromptSet:
    """Read and version the prompt files.

    Args:
        directory: Folder holding the prompt files; defaults to the bundled `prompts/`.

    Raises:
        ConfigError: A file is missing or has no valid front matter.
    """
    directory = directory or data_dir("prompts")
    digest = hashlib.sha256()
    templates: dict[str, str] = {}
    versions: list[str] = []
    for name in PROMPT_FILES:
        path = directory / name
        if not path.is_file():
            raise ConfigError(f"prompt file not found: {path}")
        raw = path.read_bytes()
        digest.update(name.encode() + b"\0" + raw)
        meta, body = _split_front_matter(name, raw.decode())
        templates[name] = body
        versions.append(meta.version)
    version = "+".join(dict.fromkeys(versions))  # one version unless files disagree
    return PromptSet(templates=templates, version=version, hash=digest.hexdigest()[:16])


@lru_cache(maxsize=1)
def default_prompts() -> PromptSet:
    return load_prompts()


def prompt_version() -> str:
    """Version of the bundled prompts (recorded with every score)."""
    return default_prompts().version


def prompt_hash() -> str:
    """sha256 (first 16 hex) over the bundled prompt files."""
    return default_prompts().hash


# --- rendering -------------------------------------------------------------------------


def render_rubric(rubric: Rubric) -> str:
    """The rubric as Markdown: scale, then each dimension with its anchors per level."""
    lines = [
        f"Rubric version {rubric.version}. Numeric dimensions use a "
        f"{rubric.numeric_min}-{rubric.numeric_max} scale: 1 = very poor, 2 = poor, "
        "3 = acceptable, 4 = good, 5 = excellent. Categorical dimensions take one label.",
    ]
    for cfg in rubric.dimensions:
        kind = (
            f"categorical: {' | '.join(cfg.labels)}"
            if cfg.data_type == "CATEGORICAL"
            else f"numeric {rubric.numeric_min}-{rubric.numeric_max}"
        )
        lines += ["", f"### {cfg.name} ({kind})", cfg.description, ""]
        if cfg.data_type == "CATEGORICAL":
            lines += [f"- `{c.label}`: {c.anchor}" for c in cfg.categories]
        else:
            lines += [
                f"- {a.level}: {a.anchor}" for a in sorted(cfg.anchors, key=lambda a: a.level)
            ]
    return "\n".join(lines)


def system_blocks(prompts: PromptSet, rubric: Rubric) -> list[dict[str, Any]]:
    """The system prompt as one cached text block (identical for every call of every session)."""
    text = prompts.render("system.md", rubric=render_rubric(rubric))
    return [{"type": "text", "text": text, "cache_control": CACHE_CONTROL}]


# A tag of one of our sections, as a lenient reader sees it: `<` or a look-alike, then
# the name in any case and script, with any spaces, line breaks, invisible characters,
# combining marks or `/`, `-`, `_` look-alikes in between (judged on `skeleton`).
_LT = "<\uff1c\ufe64\u2329\u3008\u27e8\u2039\u02c2\u276e\u276c\u1438\u22d6\u227a\u29fc"
_TAG_START = re.compile(f"[{_LT}]")
_SECTION_NAMES = ("transcript", "taskcontext", "chunknotes")
_NOT_NAME = re.compile(r"[^a-z]+")
_TEMPLATE_TAG = re.compile(r"<(/?)(transcript|task_context|chunk_notes)(?=[\s>])")
_TAG_WINDOW = 64
"""Characters after a `<` that can hold a (padded) section name."""


def guard(text: str) -> str:
    """Make `text` unable to open or close any section tag the judge reads.

    The `<` of every tag-like variant of `transcript`, `task_context` and `chunk_notes`
    becomes `&lt;`, so only the prompt template's own tags delimit the data.
    """

    def repl(m: re.Match[str]) -> str:
        window = skeleton(text[m.end() : m.end() + _TAG_WINDOW]).lower()
        return "&lt;" if _NOT_NAME.sub("", window).startswith(_SECTION_NAMES) else m.group(0)

    return _TAG_START.sub(repl, text)


def fence_id(*data: str) -> str:
    """The fence id of one request: 16 hex of sha256 over the data it carries.

    The template's tags are stamped with it (`<transcript_3f…>`). Data cannot contain the
    id of the request it is in (it would have to contain a hash of itself), and the same
    data always gets the same id, so requests stay reproducible (golden tests, retries).
    """
    digest = hashlib.sha256("\0".join(data).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _fenced(text: str, *data: str) -> list[dict[str, Any]]:
    """One user message: the rendered template with its section tags stamped."""
    fid = fence_id(*data)
    return _user(_TEMPLATE_TAG.sub(lambda m: f"<{m[1]}{m[2]}_{fid}", text))


def strip_header(text: str, header: str) -> str:
    """Chunk texts may start with the task header; drop it since it is sent separately."""
    if header and text.startswith(header):
        return text[len(header) :].lstrip("\n")
    return text


def tail(text: str, max_chars: int) -> str:
    """The last `max_chars` of `text`, starting at a line boundary when possible."""
    if len(text) <= max_chars:
        return text
    cut = text[-max_chars:]
    newline = cut.find("\n")
    return cut[newline + 1 :] if 0 <= newline < max_chars // 4 else cut


def _user(text: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": text}]


def chunk_notes_messages(
    prompts: PromptSet, header: str, chunk: Chunk, n_chunks: int
) -> list[dict[str, Any]]:
    """Messages asking for `ChunkNotes` about one chunk."""
    events = chunk.event_indices
    data = guard(header), guard(strip_header(chunk.text, header))
    text = prompts.render(
        "chunk_notes.md",
        n_chunks=str(n_chunks),
        chunk_number=str(chunk.index + 1),
        first_event=f"#{events[0]}" if events else "?",
        last_event=f"#{events[-1]}" if events else "?",
        header=data[0],
        transcript=data[1],
    )
    return _fenced(text, *data)


def render_notes(notes: list[ChunkNotes]) -> str:
    """All chunk notes as compact, readable text for the final call."""
    parts = []
    for i, note in enumerate(notes, start=1):
        evidence = "; ".join(f"#{e.event} “{e.quote}”" for e in note.evidence) or "none"
        parts.append(
            "\n".join(
                [
                    f"## Chunk {i} of {len(notes)}",
                    f"Progress: {note.progress}",
                    "Errors and recoveries: " + (" | ".join(note.errors_and_recoveries) or "none"),
                    "Tool patterns: " + (" | ".join(note.tool_patterns) or "none"),
                    f"Evidence: {evidence}",
                    "Open questions: " + (" | ".join(note.open_questions) or "none"),
                ]
            )
        )
    return "\n\n".join(parts)


def single_scoring_messages(prompts: PromptSet, header: str, chunk: Chunk) -> list[dict[str, Any]]:
    """Messages scoring a session that fits in one chunk."""
    data = guard(header), guard(strip_header(chunk.text, header))
    material = prompts.render("final_material_single.md", header=data[0], transcript=data[1])
    return _fenced(prompts.render("final.md", material=material), *data)


def final_scoring_messages(
    prompts: PromptSet,
    header: str,
    notes: list[ChunkNotes],
    last_chunk: Chunk,
    *,
    tail_chars: int,
) -> list[dict[str, Any]]:
    """Messages scoring a chunked session from all notes plus the tail of the last chunk."""
    data = (
        guard(header),
        guard(render_notes(notes)),
        guard(tail(strip_header(last_chunk.text, header), tail_chars)),
    )
    material = prompts.render(
        "final_material_chunked.md",
        n_chunks=str(len(notes)),
        header=data[0],
        notes=data[1],
        transcript=data[2],
    )
    return _fenced(prompts.render("final.md", material=material), *data)


def second_opinion_messages(
    prompts: PromptSet, messages: list[dict[str, Any]], *, adversarial: bool
) -> list[dict[str, Any]]:
    """A scoring request's messages asked again, for a second opinion.

    The text up to the end of the material becomes one block marked for the prompt cache,
    so the second opinions read the same cached prefix; the instructions after it are a
    second block, and the adversarial one adds `second_opinion.md` (make the strongest
    case that the task is not done) after them.
    """
    text = messages[0]["content"]
    end = text.index(">", text.rindex("</transcript")) + 1  # the material's closing tag
    blocks = [
        {"type": "text", "text": text[:end], "cache_control": CACHE_CONTROL},
        {"type": "text", "text": text[end:]},
    ]
    if adversarial:
        blocks.append({"type": "text", "text": "\n" + prompts.render("second_opinion.md")})
    return [{"role": "user", "content": blocks}, *messages[1:]]


def repair_messages(
    messages: list[dict[str, Any]], raw_reply: str, error: str
) -> list[dict[str, Any]]:
    """The original messages plus the invalid reply and the error, asking for a fixed reply."""
    extra: list[dict[str, Any]] = []
    if raw_reply.strip():
        extra.append({"role": "assistant", "content": raw_reply})
    extra.append(
        {
            "role": "user",
            "content": (
                f"Your reply could not be used: {error}\n"
                "Reply again with only the JSON object that matches the required schema. "
                "Keep quotes short and cite only events that exist."
            ),
        }
    )
    return [*messages, *extra]
