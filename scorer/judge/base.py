"""The judge seams: `Judge` (a prepared session to a card) and `BatchJudge` (requests and
replies, for Message Batches).

Two judges implement `Judge`: `AnthropicJudge` (Sonnet, structured output) and
`HeuristicJudge` (offline rules over the objective signals). `AnthropicJudge` also
implements `BatchJudge`: the same requests it sends directly, built without sending, and
the same reply handling, so `jobs.batches` only changes the transport. Callers pick a
judge with `make_judge` once, from a `JudgeConfig` built at the edge, and then only call
its methods.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from scorer.models import JudgeKind

if TYPE_CHECKING:
    from pydantic import BaseModel

    from scorer.judge.config import JudgeConfig
    from scorer.judge.cost import Pricing
    from scorer.judge.reply import Unscored, UsageTally
    from scorer.judge.schema import ChunkNotes, ScoringReplyBase
    from scorer.judge.sdk import anthropic
    from scorer.models import Chunk, JudgeUsage, Scorecard
    from scorer.prepare.prepared import Prepared

Params = dict[str, Any]
"""The Messages API parameters of one request."""
R = TypeVar("R", bound="BaseModel")


class Judge(Protocol):
    """Anything that turns a prepared (redacted, chunked) session into a scorecard."""

    @property
    def kind(self) -> JudgeKind:
        """`"llm"` or `"heuristic"`; stored on every card as `Scorecard.judge`."""
        ...

    @property
    def model(self) -> str | None:
        """The model asked (None for the heuristic)."""
        ...

    @property
    def prompt_version(self) -> str:
        """The prompts' (or the heuristic rules') version stored on every card."""
        ...

    def judge(self, prepared: Prepared) -> Scorecard:
        """Score one session.

        Returns:
            A scored card, or an unscored one with its reason (a failure is data).

        Raises:
            CredentialsError: The judge's API key is missing or rejected.
            JudgeError: The judge could not run at all.
        """
        ...


class BatchJudge(Judge, Protocol):
    """A judge whose requests can travel another way (Message Batches): it builds each
    request without sending it, and turns each reply into notes, a card or a retry."""

    config: JudgeConfig
    pricing: Pricing

    @property
    def model(self) -> str:
        """The model asked."""
        ...

    @property
    def client(self) -> anthropic.Anthropic:
        """The Messages API client (repairs and fallbacks are sent directly)."""
        ...

    @property
    def reply_model(self) -> type[ScoringReplyBase]:
        """The scoring reply's pydantic model for this judge's rubric."""
        ...

    def check_chunks(self, header: str, chunks: Sequence[Chunk], safety_factor: float = ...) -> int:
        """The largest request's prompt tokens; `ContextWindowExceeded` when it cannot fit."""
        ...

    def scoring_request(self, header: str, chunk: Chunk) -> Params:
        """The one scoring call of a single-chunk session."""
        ...

    def notes_requests(self, header: str, chunks: Sequence[Chunk]) -> list[Params]:
        """The chunk-notes calls of a chunked session, in chunk order."""
        ...

    def final_request(self, header: str, notes: list[ChunkNotes], last_chunk: Chunk) -> Params:
        """The final scoring call of a chunked session, from all its notes."""
        ...

    def parse_or_repair(
        self, params: Params, response: Any, reply: type[R], tally: UsageTally, label: str
    ) -> R:
        """A reply to `params` as `reply`, through refusal fallback, a larger budget and
        one repair (follow-up calls are sent directly and counted in `tally`).

        Raises:
            Unscored: Refused on the fallback too, or invalid after the repair.
        """
        ...

    def make_card(
        self,
        session_id: str,
        source: str,
        chunks: Sequence[Chunk],
        usage: JudgeUsage,
        meta: dict[str, Any],
        *,
        reply: ScoringReplyBase | None = None,
        unscored: Unscored | None = None,
        cost_usd: float | None = None,
        calls: UsageTally | None = None,
    ) -> Scorecard:
        """The card of a judged session: scored from `reply`, or `unscored`."""
        ...

    def api_failure(self, e: anthropic.APIError) -> Exception:
        """The typed error an API failure after retries turns into."""
        ...

    def settle_goal(self, prepared: Prepared, card: Scorecard) -> Scorecard:
        """The card's goal probability, after second opinions (sent directly) if unsure."""
        ...


def make_judge(
    kind: JudgeKind,
    config: JudgeConfig | None = None,
    *,
    client: anthropic.Anthropic | None = None,
) -> Judge:
    """The judge of this kind.

    Args:
        kind: `"llm"` or `"heuristic"`.
        config: Model, effort, fallback model, rubric, prompts (default: `JudgeConfig()`);
            the heuristic judge uses its rubric.
        client: The LLM judge's `anthropic.Anthropic` (`judge.client.make_client`); without
            one, judging raises `CredentialsError`.
    """
    if kind == "heuristic":
        from scorer.judge.heuristic import HeuristicJudge

        if config is None:
            return HeuristicJudge()
        return HeuristicJudge(rubric=config.rubric, goal_models=config.goal_models)
    from scorer.judge.anthropic import AnthropicJudge

    return AnthropicJudge(client, config)


J = TypeVar("J", bound=Judge)


class LazyJudge(Generic[J]):
    """A judge built the first time it judges, under a lock (threads may race to it).

    Building the LLM judge imports the Anthropic SDK (0.65 s). A backfill with nothing
    left to judge (an empty window, every session already scored) never uses its judge,
    so it never pays for that. What a run asks before judging (kind, model, prompt
    version) comes from the config, without building.

    Args:
        config: The built judge's config.
        build: Makes the judge (called at most once; a failed build is tried again).
    """

    kind: JudgeKind = "llm"

    def __init__(self, config: JudgeConfig, build: Callable[[], J]) -> None:
        self.config = config
        self._build = build
        self._built: J | None = None
        self._lock = threading.Lock()

    @property
    def model(self) -> str:
        return self.config.model

    @property
    def prompt_version(self) -> str:
        return self.config.prompt_version

    def build(self) -> J:
        """The judge, built now if it was not yet."""
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def judge(self, prepared: Prepared) -> Scorecard:
        return self.build().judge(prepared)
