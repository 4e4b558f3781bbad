"""Cost estimation: tokens and USD the LLM judge would spend (dry runs, `--max-cost`).

Input tokens come from Claude's own tokenizer (`messages.count_tokens`, cached per request
content in `$SCORER_HOME/token-counts.sqlite3`) when the judge has a client (a key is set),
else from the chunker's cl100k counts times `SCORER_ESTIMATE_FACTOR` (1.3: Claude yields ~30 % more
tokens than cl100k on transcripts). Output tokens are the typical answer plus the thinking
billed at the judge's effort (`judge.catalog.expected_output`). Every `Estimate` says which
basis it used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.base import LazyJudge
    from scorer.judge.token_counts import TokenCountCache
    from scorer.prepare import Prepared

NOTES_PROMPT_TOKENS = 350
"""Assumed size of one chunk's notes as fed to the final call of a chunked session."""


@dataclass
class Estimate:
    """Estimated judge usage of one session, with how it was reached."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost_usd: float = 0.0
    input_basis: str = ""
    """`count_tokens` (Claude's tokenizer) or `cl100k x 1.30` (the calibrated factor)."""
    output_basis: str = ""
    """Answer plus thinking tokens assumed per call, and the effort."""
    second_opinions: float = 0.0
    """Expected second-opinion calls (the dev share of uncertain verdicts × 2), included in
    `cost_usd` and the token counts (not in `requests`, which counts calls surely made)."""


def estimate_prepared(
    prepared: Prepared,
    judge: AnthropicJudge,
    *,
    batch: bool = False,
    exact: bool | None = None,
    counts: TokenCountCache | None = None,
) -> Estimate:
    """Tokens and USD `judge` would spend on a prepared session.

    A chunked session's final call includes notes not written yet, counted as
    `NOTES_PROMPT_TOKENS` per chunk. Every input token is priced at the full input rate
    (cache reads would be cheaper), so the input cost is an upper bound.

    Args:
        prepared: The redacted, chunked session.
        judge: The judge whose requests are priced (model, effort, prompts, prices);
            it sends nothing but `count_tokens`.
        batch: Price as Message Batches (-50 %).
        exact: Count with `messages.count_tokens`; None means "when the judge has a
            client".
        counts: The count cache (`$SCORER_HOME/token-counts.sqlite3`); None: in memory.
    """
    from scorer.judge.catalog import EXPECTED_ANSWER, EXPECTED_THINKING, expected_output
    from scorer.models import JudgeUsage

    chunks = prepared.chunks
    if exact is None:
        exact = judge.has_client
    est = Estimate(requests=len(chunks) + (1 if len(chunks) > 1 else 0))
    counted = _claude_counts(judge, prepared, counts) if exact else None
    if counted is not None:
        est.input_tokens = counted
        est.input_basis = "count_tokens (Claude's tokenizer, cached per request)"
    else:
        est.input_tokens = _factor_counts(judge, prepared)
        est.input_basis = f"cl100k x {judge.config.estimate_factor:.2f} (no count_tokens)"
    notes_calls = len(chunks) if len(chunks) > 1 else 0
    est.output_tokens = notes_calls * expected_output("notes", judge.effort) + expected_output(
        "score", judge.effort
    )
    thinking = EXPECTED_THINKING[judge.effort]
    est.output_basis = (
        f"per call {thinking:,} thinking at effort {judge.effort} + answer "
        f"({EXPECTED_ANSWER['score']:,} scoring, {EXPECTED_ANSWER['notes']:,} notes)"
    )
    usage = JudgeUsage(input_tokens=est.input_tokens, output_tokens=est.output_tokens)
    est.cost_usd = judge.pricing.cost_usd(usage, judge.model, batch=batch)
    _add_second_opinions(est, judge, scoring_input=_scoring_input(judge, prepared, est))
    return est


def _scoring_input(judge: AnthropicJudge, prepared: Prepared, est: Estimate) -> int:
    """Input tokens of the scoring call (a chunked session's final call): what a second
    opinion sends again."""
    if len(prepared.chunks) == 1:
        return est.input_tokens
    final = judge.final_request(prepared.header, [], prepared.chunks[-1])
    text = judge.system_text + "".join(m["content"] for m in final["messages"])
    return judge.counter.count(text) + _final_extra(prepared)


def _add_second_opinions(est: Estimate, judge: AnthropicJudge, *, scoring_input: int) -> None:
    """The expected cost of second opinions: the dev share of uncertain verdicts, times two
    scoring calls sent directly (full price) over one cached prefix (one write, one read)."""
    from scorer.judge.catalog import expected_output
    from scorer.models import JudgeUsage

    models = judge.config.goal_models
    if models is None or not judge.config.second_opinions or not models.llm.in_band_share:
        return
    share = models.llm.in_band_share
    est.second_opinions = 2 * share
    one = JudgeUsage(
        cache_write_tokens=scoring_input,
        cache_read_tokens=scoring_input,
        output_tokens=2 * expected_output("score", judge.effort),
    )
    est.cost_usd += share * judge.pricing.cost_usd(one, judge.model)
    est.output_tokens += round(share * one.output_tokens)
    est.input_tokens += round(share * scoring_input)  # the cache write (reads: priced above)


class Estimator:
    """Prices sessions for one run's LLM judge (dry runs and the cost cap); thread-safe.

    Args:
        judge: The judge, or a lazy one (built on the first estimate).
        batch: Price as Message Batches.
        counts: The run's count cache (one per store folder).
    """

    def __init__(
        self,
        judge: AnthropicJudge | LazyJudge[AnthropicJudge],
        *,
        batch: bool = False,
        counts: TokenCountCache | None = None,
    ) -> None:
        self._judge = judge
        self.batch = batch
        self.counts = counts

    @property
    def judge(self) -> AnthropicJudge:
        from scorer.judge.base import LazyJudge

        return self._judge.build() if isinstance(self._judge, LazyJudge) else self._judge

    def estimate(self, prepared: Prepared) -> Estimate:
        return estimate_prepared(prepared, self.judge, batch=self.batch, counts=self.counts)

    def __call__(self, prepared: Prepared) -> float:
        """USD (the `jobs.step.Estimator` the judging step reserves)."""
        return self.estimate(prepared).cost_usd


def _requests(judge: AnthropicJudge, prepared: Prepared) -> list[dict[str, Any]]:
    """Every request of the session (a chunked session's final one with no notes yet)."""
    chunks, header = prepared.chunks, prepared.header
    if len(chunks) == 1:
        return [judge.scoring_request(header, chunks[0])]
    return [*judge.notes_requests(header, chunks), judge.final_request(header, [], chunks[-1])]


def _final_extra(prepared: Prepared) -> int:
    n = len(prepared.chunks)
    return NOTES_PROMPT_TOKENS * n if n > 1 else 0


def _factor_counts(judge: AnthropicJudge, prepared: Prepared) -> int:
    """From the chunker's counts (no re-tokenising); the final call's tail is counted."""
    chunks, safety = prepared.chunks, prepared.safety_factor
    if len(chunks) == 1:
        return judge.estimate_chunk(chunks[0], "score", safety)
    total = sum(judge.estimate_chunk(c, "notes", safety) for c in chunks)
    final = judge.final_request(prepared.header, [], chunks[-1])
    text = judge.system_text + "".join(m["content"] for m in final["messages"])
    return total + judge.counter.count(text) + _final_extra(prepared)


def _claude_counts(
    judge: AnthropicJudge, prepared: Prepared, counts: TokenCountCache | None
) -> int | None:
    """Sum of `count_tokens` over the session's requests; None when the API cannot count."""
    from scorer.judge.client import count_tokens
    from scorer.judge.token_counts import TokenCountCache, content_key

    cache = counts if counts is not None else TokenCountCache()
    total = 0
    for params in _requests(judge, prepared):
        key = content_key(params)
        tokens = cache.get(key)
        if tokens is None:
            tokens = count_tokens(judge.client, params)
            if tokens is None:
                return None
            cache.put(key, tokens)
        total += tokens
    return total + _final_extra(prepared)


def judge_shape(model: str, effort: str) -> tuple[int, int]:
    """(system prompt tokens, scoring call `max_tokens`) of the judge at `effort`: what a
    warm prompt cache reads on every call, and what a call holds of the output limit."""
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.config import JudgeConfig

    judge = AnthropicJudge(None, JudgeConfig(model=model, effort=effort), verify_tokens=False)
    return judge.counter.count(judge.system_text), judge.max_tokens("score")
