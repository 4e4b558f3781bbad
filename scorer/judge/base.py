"""The `Judge` protocol: one call from a prepared session to a scorecard.

Two judges implement it: `AnthropicJudge` (Sonnet, structured output) and
`HeuristicJudge` (offline rules over the objective signals). Callers pick one with
`make_judge` once and then only call `judge.judge(prepared)`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from scorer.judge.rubric import Rubric
    from scorer.models import Scorecard
    from scorer.prepare.prepared import Prepared

JudgeKind = Literal["llm", "heuristic"]


class Judge(Protocol):
    """Anything that turns a prepared (redacted, chunked) session into a scorecard."""

    kind: str
    """`"llm"` or `"heuristic"`; stored on every card as `Scorecard.judge`."""

    def judge(self, prepared: Prepared) -> Scorecard:
        """Score one session.

        Returns:
            A scored card, or an unscored one with its reason (a failure is data).

        Raises:
            CredentialsError: The judge's API key is missing or rejected.
            JudgeError: The judge could not run at all.
        """
        ...


def make_judge(
    kind: JudgeKind,
    *,
    model: str | None = None,
    rubric: Rubric | None = None,
    client: Any = None,
    effort: str | None = None,
    fallback_model: str | None = None,
) -> Judge:
    """The judge of this kind.

    Args:
        kind: `"llm"` or `"heuristic"`.
        model: The LLM judge's model (default `SCORER_MODEL`).
        rubric: The rubric (default: the bundled score configs).
        client: An `anthropic.Anthropic` for the LLM judge (default: from settings).
        effort: The LLM judge's `output_config.effort` (default `SCORER_EFFORT`).
        fallback_model: Where the LLM judge retries a refusal (default
            `SCORER_FALLBACK_MODEL`).
    """
    if kind == "heuristic":
        from scorer.judge.heuristic import HeuristicJudge

        return HeuristicJudge(rubric=rubric)
    from scorer.judge.anthropic import AnthropicJudge

    return AnthropicJudge(
        client, model=model, rubric=rubric, effort=effort, fallback_model=fallback_model
    )


class LazyJudge:
    """A judge built the first time it is used, under a lock (threads may race to it).

    Building the LLM judge imports the Anthropic SDK (0.65 s). A backfill with nothing
    left to judge (an empty window, every session already scored) never uses its judge,
    so it never pays for that. Any attribute besides `kind` and `judge` is the built
    judge's (its `model`, `client`, `scoring_request` ...).

    Args:
        kind: The built judge's `kind`, known without building it.
        build: Makes the judge (called at most once).
    """

    def __init__(self, kind: str, build: Callable[[], Judge]) -> None:
        self.kind = kind
        self._build = build
        self._built: Judge | None = None
        self._lock = threading.Lock()

    def build(self) -> Judge:
        """The judge, built now if it was not yet (a failed build is tried again)."""
        with self._lock:
            if self._built is None:
                self._built = self._build()
            return self._built

    def judge(self, prepared: Prepared) -> Scorecard:
        return self.build().judge(prepared)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not the built judge's internals, and no recursion
            raise AttributeError(name)
        return getattr(self.build(), name)
