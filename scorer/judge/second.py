"""The goal probability of an LLM verdict, with second opinions where it is unsure.

    first card ─► p₁ = model(checklist, signals)
       p₁ outside the uncertain band (or second opinions off) ─► card with p₁
       p₁ inside  ─► the scoring request again, twice, over the same cached prefix:
                       a plain second sample, then one that first makes the strongest
                       case that the task is not done (`prompts/second_opinion.md`)
                 ─► p = mean(p₁, p₂, p₃) ─► card with p; the second verdicts' labels,
                    probabilities and cost in `meta.second_opinions`

The two calls go one after the other: the first writes the material to the prompt cache,
the second reads it (`prompts.second_opinion_messages`). They are paid like any call and
added to the card's usage and cost. A second opinion that cannot be had (refused twice,
invalid twice, the API down) is noted and left out; the first verdict still stands.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from statistics import fmean
from typing import TYPE_CHECKING, Any, Protocol

from scorer.errors import CredentialsError, RunStopped, ScorerError
from scorer.judge import prompts as P
from scorer.judge.probability import apply_probability, features, in_band
from scorer.judge.reply import Unscored, UsageTally
from scorer.judge.schema import ChunkNotes
from scorer.models import JudgeUsage

if TYPE_CHECKING:
    from scorer.judge.calls import CallSettler
    from scorer.judge.config import JudgeConfig
    from scorer.judge.cost import Pricing
    from scorer.judge.probability import GoalModels
    from scorer.judge.prompts import PromptSet
    from scorer.judge.rubric import Rubric
    from scorer.judge.schema import ScoringReplyBase
    from scorer.models import Chunk, Scorecard
    from scorer.prepare.prepared import Prepared


class AnthropicJudge(Protocol):
    """What second opinions use of the LLM judge (`judge.anthropic.AnthropicJudge`)."""

    config: JudgeConfig
    model: str
    rubric: Rubric
    prompts: PromptSet
    pricing: Pricing

    @property
    def reply_model(self) -> type[ScoringReplyBase]: ...

    def settler(self, tally: UsageTally) -> CallSettler: ...

    def scoring_request(self, header: str, chunk: Chunk) -> dict[str, Any]: ...

    def final_request(
        self, header: str, notes: list[ChunkNotes], last_chunk: Chunk
    ) -> dict[str, Any]: ...

    def make_card(
        self,
        session_id: str,
        source: str,
        chunks: Sequence[Chunk],
        usage: JudgeUsage,
        meta: dict[str, Any],
        *,
        reply: ScoringReplyBase | None = None,
    ) -> Scorecard: ...

    def api_failure(self, e: Any) -> Exception: ...


log = logging.getLogger(__name__)

KINDS = ("sample", "adversarial")
"""The second opinions asked, in order."""


def first_request(judge: AnthropicJudge, prepared: Prepared, card: Scorecard) -> dict[str, Any]:
    """The scoring request the card answered (a chunked session's final one, from its notes)."""
    chunks = prepared.chunks
    if len(chunks) == 1:
        return judge.scoring_request(prepared.header, chunks[0])
    notes = [ChunkNotes.model_validate(n) for n in card.meta.get("chunk_notes", [])]
    return judge.final_request(prepared.header, notes, chunks[-1])


def settle_goal(judge: AnthropicJudge, prepared: Prepared, card: Scorecard) -> Scorecard:
    """The card with its goal probability, after second opinions when it is unsure.

    Raises:
        CredentialsError: The key was rejected while asking (nothing else would work).
        RunStopped: The run was stopped while asking.
    """
    models = judge.config.goal_models
    if models is None or card.status != "scored":
        return card
    llm = models.llm
    first = llm.model.predict(features(card, prepared.signals))
    if not (judge.config.second_opinions and in_band(first, llm)):
        return apply_probability(card, first, llm, judge.rubric, version=models.version)
    asked = [_ask(judge, prepared, card, kind, models) for kind in KINDS]
    opinions = [opinion for opinion, _ in asked]
    spent = JudgeUsage()
    for _, usage in asked:
        spent = spent.add(usage)
    p = fmean([first, *(o["p"] for o in opinions if "p" in o)])
    extra = judge.pricing.cost_usd(spent, judge.model)
    meta = {**card.meta, "second_opinions": opinions, "first_goal_probability": round(first, 4)}
    card = card.model_copy(
        update={
            "usage": card.usage.add(spent),
            "cost_usd": round(card.cost_usd + extra, 6),
            "meta": meta,
        }
    )
    return apply_probability(card, p, llm, judge.rubric, version=models.version)


def _ask(
    judge: AnthropicJudge, prepared: Prepared, card: Scorecard, kind: str, models: GoalModels
) -> tuple[dict[str, Any], JudgeUsage]:
    """One second opinion (its probability and label, or why there is none) and its usage."""
    params = first_request(judge, prepared, card)
    messages = P.second_opinion_messages(
        judge.prompts, params["messages"], adversarial=kind == "adversarial"
    )
    tally = UsageTally()
    try:
        reply = judge.settler(tally).call(
            {**params, "messages": messages}, judge.reply_model, f"second opinion ({kind})"
        )
    except Unscored as exc:
        return {"kind": kind, "error": exc.reason}, tally.usage
    except (CredentialsError, RunStopped):
        raise
    except Exception as exc:  # the API still down after retries: the first verdict stands
        failure = _failure(judge, exc)
        if failure is None:
            raise
        log.warning("second opinion (%s) failed: %s", kind, failure)
        return {"kind": kind, "error": str(failure)}, tally.usage
    other = judge.make_card(
        card.session_id, card.source, prepared.chunks, JudgeUsage(), {}, reply=reply
    )
    p = models.llm.model.predict(features(other, prepared.signals))
    opinion = {
        "kind": kind,
        "p": round(p, 4),
        "judge_goal": other.scores["goal_achievement"].label,
        "requirements": [
            c.model_dump(mode="json", exclude={"evidence"}) for c in other.requirements
        ],
        "cost_usd": round(judge.pricing.cost_usd(tally.usage, judge.model), 6),
    }
    return opinion, tally.usage


def _failure(judge: AnthropicJudge, exc: Exception) -> Exception | None:
    """What an infrastructure failure after retries is (None: not one, a bug to raise)."""
    from scorer.judge.retry import is_api_error

    if is_api_error(exc):
        return judge.api_failure(exc)
    return exc if isinstance(exc, ScorerError) else None
