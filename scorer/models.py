"""The contracts between stages: sources produce a `Session`, prepare turns it into
`Chunk`s, a judge turns chunks into a `Scorecard`, sinks store scorecards.

Every model here is plain data (pydantic); no I/O happens in this module.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from enum import StrEnum
from pathlib import PurePath
from typing import Any, Literal, NamedTuple
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from scorer._identity import (
    TASK_CHARS,
    TimesFrom,
    TitleFrom,
    cut_text,
    pick_title,
    session_times,
)


class SourceKind(StrEnum):
    """Where a session was read from."""

    CLAUDE_CODE = "claude-code"
    STREAM_JSON = "stream-json"
    LANGFUSE = "langfuse"
    TMUX = "tmux"
    TERMINAL = "terminal"
    """A saved pane capture (plain text) or an asciinema v2 `.cast` recording."""


class EventKind(StrEnum):
    """What one numbered event in a session is."""

    PROMPT = "prompt"
    """A real human prompt (or the task given to a headless run)."""
    ASSISTANT = "assistant"
    """Text the agent wrote."""
    THINKING = "thinking"
    """Condensed extended-thinking text."""
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    COMPACTION = "compaction"
    """The context was compacted (boundary, with the summary text when present)."""
    API_ERROR = "api_error"
    INTERRUPTION = "interruption"
    """The user interrupted the agent."""
    SUBAGENT = "subagent"
    """A subagent run; its own events are in `Event.children`."""
    RESULT = "result"
    """Final result line of a headless (stream-json) run."""
    META = "meta"
    """Injected context: slash-command expansions, hook output, skill bodies."""
    NOTIFICATION = "notification"
    """Async task / background-shell completion notice."""
    COMMAND = "command"
    """Slash-command or shell echo typed by the user in the UI."""
    TERMINAL = "terminal"
    """A block of terminal output (tmux source)."""
    SYSTEM = "system"
    """Anything else worth showing (e.g. git/resource evidence for live sessions)."""


class TokenUsage(BaseModel):
    """Token counts; `input_tokens` excludes cache reads and writes (Anthropic semantics)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Everything that was sent as prompt: fresh input + cache reads + cache writes."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    @property
    def cache_hit_ratio(self) -> float | None:
        """Share of the prompt served from cache, or None when nothing was sent."""
        total = self.prompt_tokens
        return self.cache_read_tokens / total if total else None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
        )


class Event(BaseModel):
    """One numbered thing that happened in a session.

    `index` is unique across the whole session, subagent events included, and is what
    judges cite as evidence (`#17`).
    """

    index: int
    """Stable 1-based number, assigned in timeline order (depth-first through subagents)."""
    kind: EventKind
    timestamp: datetime | None = None
    text: str = ""
    """Prompt/assistant/thinking text, tool output, error message, terminal text."""
    tool_name: str | None = None
    tool_use_id: str | None = None
    """For TOOL_CALL its id; for TOOL_RESULT the id of the call it answers."""
    tool_input: dict[str, Any] | None = None
    is_error: bool = False
    """Tool failed (detected from flags or output text), or an error event."""
    exit_code: int | None = None
    model: str | None = None
    agent_id: str | None = None
    """For SUBAGENT events: the subagent's id."""
    children: list[Event] = Field(default_factory=list)
    """For SUBAGENT events: the subagent's own events."""
    meta: dict[str, Any] = Field(default_factory=dict)
    """Source-specific details (compaction trigger/preTokens, API error status, ...)."""


class Session(BaseModel):
    """A source-agnostic coding-agent session."""

    session_id: str
    source: SourceKind
    origin: str | None = None
    """Where it was read from: file path, URL or tmux target."""
    title: str | None = None
    project: str | None = None
    cwd: str | None = None
    git_branches: list[str] = Field(default_factory=list)
    started_at: datetime | None = None
    ended_at: datetime | None = None
    models: list[str] = Field(default_factory=list)
    usage: TokenUsage = Field(default_factory=TokenUsage)
    """Totals over the main agent and its subagents (deduplicated by message id)."""
    cost_usd: float | None = None
    """Cost as reported by the source, if any."""
    task: str | None = None
    """Explicit task statement (e.g. `--prompt`); otherwise the first real prompt is used."""
    events: list[Event] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    """Source-specific context (num_turns, duration_ms, git progress, resources...)."""

    def iter_events(self) -> Iterator[tuple[int, Event]]:
        """All events depth-first as `(depth, event)`, subagent children included."""

        def walk(events: list[Event], depth: int) -> Iterator[tuple[int, Event]]:
            for event in events:
                yield depth, event
                if event.children:
                    yield from walk(event.children, depth + 1)

        yield from walk(self.events, 0)

    @property
    def n_events(self) -> int:
        return sum(1 for _ in self.iter_events())

    @property
    def task_text(self) -> str | None:
        """The task context: explicit task, else the first real human prompt."""
        if self.task:
            return self.task
        return next((e.text for e in self.events if e.kind == EventKind.PROMPT), None)

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at and self.ended_at:
            return (self.ended_at - self.started_at).total_seconds()
        return None


class Chunk(BaseModel):
    """A slice of the rendered timeline that fits the judge's token budget."""

    index: int
    """0-based position of the chunk."""
    text: str
    """Task context header + the rendered events of this chunk."""
    event_indices: list[int]
    """Event numbers rendered in this chunk (overlap events included), in order."""
    overlap: int = 0
    """How many of the leading events repeat the end of the previous chunk."""
    tokens: int
    """Estimated Claude tokens (tiktoken count x safety factor)."""
    truncated_events: list[int] = Field(default_factory=list)
    """Events cut because a single event exceeded the budget (marked in the text)."""


class EvidenceRef(BaseModel):
    """A pointer from a score to an event of the rendered timeline."""

    event: int
    quote: str = ""
    valid: bool = True
    """False when the judge cited an event number that was never rendered."""


class DimensionScore(BaseModel):
    """One scored dimension (or the computed overall)."""

    name: str
    value: float
    """NUMERIC: the score on the dimension's scale; CATEGORICAL: the category's value."""
    label: str | None = None
    """CATEGORICAL: the category label (e.g. `complete`)."""
    normalized: float
    """Value mapped to 0..1, which is what the weighted overall uses."""
    rationale: str = ""
    evidence: list[EvidenceRef] = Field(default_factory=list)


RequirementStatus = Literal["met", "likely_met", "unmet", "not_attempted", "unverified"]
"""See `scorer.judge.checklist`; `unverified` is only on cards judged before prompt 2026-12."""


class RequirementCheck(BaseModel):
    """One explicit requirement of the task, as the LLM judge checked it."""

    requirement: str
    """The requirement, in the task's own words (shortened)."""
    status: RequirementStatus
    """`met` (shown working), `likely_met` (done, not re-checked, nothing against it),
    `unmet` (shown wrong or broken), `not_attempted`; older cards: `unverified`."""
    core: bool = True
    """A deliverable the task exists for, not a constraint or a detail."""
    evidence: list[EvidenceRef] = Field(default_factory=list)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """The judge's probability that a strict check of this requirement passes (prompt
    2026-11-28.1 on; None on older cards)."""


def checklist_line(checks: list[RequirementCheck], limit: int = 400) -> str:
    """The checklist in one short line (e.g. the Langfuse goal_achievement comment)."""
    if not checks:
        return ""
    marks = {"met": "✓", "likely_met": "≈", "unmet": "✗", "not_attempted": "∅", "unverified": "?"}
    if any(c.status == "unverified" for c in checks):  # judged before likely_met existed
        count = f"{sum(c.status == 'met' for c in checks)}/{len(checks)} met"
    else:
        count = f"{sum(c.status in ('met', 'likely_met') for c in checks)}/{len(checks)} done"
    items = "; ".join(f"{marks[c.status]} {c.requirement}" for c in checks)
    line = f"requirements {count}: {items}"
    return line if len(line) <= limit else line[: limit - 1] + "…"


class JudgeUsage(BaseModel):
    """What judging a session cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0

    def add(self, other: JudgeUsage) -> JudgeUsage:
        return JudgeUsage(
            **{k: getattr(self, k) + getattr(other, k) for k in JudgeUsage.model_fields}
        )


class SessionInfo(BaseModel):
    """Who a scored session is, for people: its title and task, the agent's models, when
    it ran and where (for lists, filters, trends and the viewer). Built by `of`."""

    title: str | None = None
    """A short human title: the session's own title (Claude Code's summary, a Langfuse
    trace name, a recording's title), else the task's or first prompt's first line, else
    the folder (`<task>/session.jsonl`) or file name, else the session id."""
    title_from: TitleFrom | None = None
    """Where `title` came from."""
    task: str | None = None
    """The task text (explicit task, else the first human prompt), redacted, at most
    `TASK_CHARS` characters."""
    started_at: datetime | None = None
    """When the session started (its first event; see `times_from`)."""
    ended_at: datetime | None = None
    times_from: TimesFrom | None = None
    """Where the start/end come from: `events` (event timestamps), `label` (the run
    folder's `label.json`: a Terminal-Bench run's `agent_started_at` / `agent_ended_at`),
    `recording` (a recording's header), `capture` (a tmux session's start and when its
    pane was captured), or `file` (the file's modification time, minus the run's reported
    duration for the start: a fallback)."""
    project: str | None = None
    """Project name (the working directory's last path part)."""
    branch: str | None = None
    """The git branch the session worked on (the last one seen)."""
    agent_model: str | None = None
    """The coding agent's main model (the one that answered most often)."""
    agent_models: list[str] = Field(default_factory=list)
    """Every model the agent used, the main one first."""
    cwd: str | None = None
    n_events: int | None = None
    """Events in the rendered timeline, subagent events included."""
    langfuse_url: str | None = None
    """Deep link to the session in the Langfuse UI, when it was read from Langfuse."""

    @classmethod
    def of(cls, session: Session, n_events: int | None = None) -> SessionInfo:
        """Describe a (redacted) session: pure, no I/O."""
        counts = Counter(
            e.model for _, e in session.iter_events() if e.kind == EventKind.ASSISTANT and e.model
        )
        screen = session.extra.get("screen") or {}
        models = [m for m, _ in counts.most_common()] + [*session.models, screen.get("model")]
        agent_models = [m for m in dict.fromkeys(models) if isinstance(m, str) and m]
        cwd = session.cwd or screen.get("cwd")
        first = next((e.text for e in session.events if e.kind == EventKind.PROMPT), None)
        title, title_from = pick_title(
            (session.title, session.task, first, screen.get("prompt")),
            session.origin,
            session.session_id,
        )
        started, ended, times_from = session_times(
            session.started_at, session.ended_at, session.extra
        )
        return cls(
            title=title,
            title_from=title_from,
            task=cut_text(session.task_text or screen.get("prompt"), TASK_CHARS),
            started_at=started,
            ended_at=ended,
            times_from=times_from,
            project=session.project or (PurePath(cwd).name if cwd else None),
            branch=session.git_branches[-1] if session.git_branches else None,
            agent_model=agent_models[0] if agent_models else None,
            agent_models=agent_models,
            cwd=cwd,
            n_events=session.n_events if n_events is None else n_events,
            langfuse_url=langfuse_link(session.origin, session.session_id)
            if session.source == SourceKind.LANGFUSE
            else None,
        )


_LANGFUSE_SESSION_URL = re.compile(r"^(https?://.+)/project/([^/]+)/sessions/")


def langfuse_link(origin: str | None, session_id: str) -> str | None:
    """The Langfuse UI link of a session read from Langfuse, with the id URL-encoded."""
    match = _LANGFUSE_SESSION_URL.match(origin or "")
    if not match:
        return None
    host, project = match.groups()
    return f"{host}/project/{project}/sessions/{quote(session_id, safe='')}"


class TimelineEvent(NamedTuple):
    """One event of the redacted rendered timeline, as the store keeps it for the viewer."""

    index: int  # type: ignore[assignment]  # the event's number (shadows tuple.index)
    depth: int
    text: str


SCORECARD_SCHEMA_VERSION = 1
"""Version of the scorecard JSON shape (`scorer schema`); bump on incompatible changes."""


class Refusal(BaseModel):
    """One judge request the model declined (`stop_reason: "refusal"`)."""

    model: str
    """The model that refused (as the API reported it)."""
    category: str | None = None
    """`stop_details.category` (cyber, bio, ...); None when the API named none."""
    explanation: str | None = None
    call: str = ""
    """Which request: `score` or `chunk N notes`."""


UnscoredCode = Literal["invalid_output", "refused", "too_long"]
"""Why the judge could not score this content (an API outage is an error, not one of these)."""

Recommendation = Literal["continue", "retry", "escalate", "complete"]
JudgeKind = Literal["llm", "heuristic"]
JudgeBackend = Literal["api", "batch", "claude-code"]
"""How an LLM judge's requests reach the model (`Scorecard.backend`)."""
Collection = Literal["production", "calibration"]
"""Which runs a scorecard belongs to: the sessions people ran, or a calibration set."""


class Scorecard(BaseModel):
    """The result of judging one session: seven scores, or `unscored` with a reason.

    Its JSON (`model_dump(mode="json")`) is the one scorecard shape that `score-session
    --json`, `scorer scores show --json`, the JSONL export and the viewer all use; its JSON
    Schema is `scorer schema` (committed as docs/scorecard.schema.json).
    """

    schema_version: int = SCORECARD_SCHEMA_VERSION
    """Version of this JSON shape."""
    title: str | None = None
    """The session's human title (the same as `session.title`), first for every reader."""
    session_id: str
    source: str
    collection: Collection = "production"
    """`calibration` for runs `score-calibrate` judged: lists, trends, the viewer and
    exports leave them out unless asked (`--collection`)."""
    status: Literal["scored", "unscored"] = "scored"
    unscored_reason: str | None = None
    unscored_code: UnscoredCode | None = None
    """Machine-readable kind of `unscored_reason` (`refused` when the fallback refused too)."""
    raw_reply: str | None = None
    """The judge's raw reply, kept when it could not be parsed."""
    judge: JudgeKind
    model: str | None = None
    """The model requested."""
    answered_by: str | None = None
    """The model the API says produced the scoring reply (`response.model`): a dated
    snapshot of `model`, or the fallback model after a refusal."""
    effort: str | None = None
    """`output_config.effort` the LLM judge asked for."""
    backend: JudgeBackend | None = None
    """How the LLM judge's requests travelled: `api` (the Messages API with a key), `batch`
    (Message Batches) or `claude-code` (the user's own `claude -p` login); None for the
    heuristic judge."""
    refusals: list[Refusal] = Field(default_factory=list)
    """Requests the model refused while judging this session (kept even when scored)."""
    prompt_version: str
    prompt_hash: str
    rubric_version: str
    rubric_hash: str
    package_version: str
    scores: dict[str, DimensionScore] = Field(default_factory=dict)
    """Six dimensions plus `overall_quality`, keyed by name."""
    recommendation: Recommendation | None = None
    requirements: list[RequirementCheck] = Field(default_factory=list)
    """The LLM judge's requirement checklist, which goal_achievement follows from."""
    goal_probability: float | None = Field(default=None, ge=0.0, le=1.0)
    """The probability that the task's own acceptance checks pass, from the checklist and
    the outcome signals by the fitted model beside the rubric (`score_configs/`); None on
    cards judged before it existed and on unscored cards."""
    accomplishments: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    summary: str = ""
    n_chunks: int = 0
    unknown_refs: list[int] = Field(default_factory=list)
    """Event numbers the judge cited that do not exist in the rendered timeline."""
    usage: JudgeUsage = Field(default_factory=JudgeUsage)
    cost_usd: float = 0.0
    created_at: datetime
    """When the judge produced this scorecard."""
    session: SessionInfo = Field(default_factory=SessionInfo)
    """The judged session's start time, project, branch and agent model."""
    meta: dict[str, Any] = Field(default_factory=dict)

    model_config = ConfigDict(ser_json_timedelta="float")

    _timeline: list[TimelineEvent] | None = PrivateAttr(default=None)
    """The redacted rendered timeline, stored beside the card (never in its JSON)."""

    @property
    def timeline(self) -> list[TimelineEvent] | None:
        """The redacted rendered timeline the judge read, when it was attached."""
        return self._timeline

    @model_validator(mode="after")
    def _title_of_session(self) -> Scorecard:
        if self.title is None:
            self.title = self.session.title
        return self

    def describe(self, info: SessionInfo) -> None:
        """Set what the card says about its session (and the title it leads with)."""
        self.session = info
        self.title = info.title

    def attach_timeline(self, events: list[TimelineEvent]) -> None:
        """Keep the redacted rendered timeline with the card so the store can save it."""
        self._timeline = events

    @property
    def overall(self) -> float | None:
        score = self.scores.get("overall_quality")
        return score.value if score else None
