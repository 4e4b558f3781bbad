"""Backfill cost estimation: tokens and USD the LLM judge would spend (dry run, `--max-cost`)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.prepare import Prepared

NOTES_OUTPUT_TOKENS = 700
"""Assumed output tokens of one chunk-notes call (the dry-run estimate)."""


FINAL_OUTPUT_TOKENS = 1800
"""Assumed output tokens of one scoring call: seven rationales with evidence + summary."""


NOTES_PROMPT_TOKENS = 350
"""Assumed size of one chunk's notes as fed to the final call of a chunked session."""


@dataclass
class Estimate:
    """Estimated judge usage of one session."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0


def estimate_prepared(
    prepared: Prepared, *, model: str, batch: bool = False, judge: AnthropicJudge | None = None
) -> Estimate:
    """Tokens and USD the LLM judge would spend on a prepared session.

    Input tokens are counted the way the judge counts its requests: `TokenCounter` over
    the system prompt plus the rendered messages of each call. A chunked session's final
    call includes notes we cannot know yet, counted as `NOTES_PROMPT_TOKENS` per chunk.
    Output tokens are assumed (`NOTES_OUTPUT_TOKENS`, `FINAL_OUTPUT_TOKENS`). The USD
    figure prices every input token at the full input rate (cache reads would be cheaper),
    so it is an upper bound on input cost.
    """
    from scorer.judge import prompts as P
    from scorer.judge.anthropic import TAIL_CHARS
    from scorer.judge.cost import cost_usd
    from scorer.models import JudgeUsage

    judge = judge or _estimator(model)
    system = judge.system_text
    chunks, header = prepared.chunks, prepared.header

    def count(messages: list[dict]) -> int:
        return judge.counter.count(system + "".join(m["content"] for m in messages))

    est = Estimate()
    if len(chunks) == 1:
        est.input_tokens = count(P.single_scoring_messages(judge.prompts, header, chunks[0]))
        est.output_tokens, est.requests = FINAL_OUTPUT_TOKENS, 1
    elif chunks:
        for chunk in chunks:
            est.input_tokens += count(
                P.chunk_notes_messages(judge.prompts, header, chunk, len(chunks))
            )
        final = P.final_scoring_messages(
            judge.prompts, header, [], chunks[-1], tail_chars=TAIL_CHARS
        )
        est.input_tokens += count(final) + NOTES_PROMPT_TOKENS * len(chunks)
        est.output_tokens = NOTES_OUTPUT_TOKENS * len(chunks) + FINAL_OUTPUT_TOKENS
        est.requests = len(chunks) + 1
    usage = JudgeUsage(input_tokens=est.input_tokens, output_tokens=est.output_tokens)
    est.cost_usd = cost_usd(usage, model, batch=batch)
    return est


_ESTIMATORS: dict[str, AnthropicJudge] = {}


_EST_LOCK = threading.Lock()


def _estimator(model: str) -> AnthropicJudge:
    """An AnthropicJudge used only for its prompts and counter (never calls the API)."""
    from scorer.judge.anthropic import AnthropicJudge

    with _EST_LOCK:
        if model not in _ESTIMATORS:
            _ESTIMATORS[model] = AnthropicJudge(None, model=model, verify_tokens=False)
        return _ESTIMATORS[model]
