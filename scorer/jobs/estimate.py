"""Cost estimation: tokens and USD the LLM judge would spend (dry runs, `--max-cost`).

Input tokens come from Claude's own tokenizer (`messages.count_tokens`, cached per request
content in `$SCORER_HOME/token-counts.sqlite3`) when an Anthropic key is set, else from the
chunker's cl100k counts times `SCORER_ESTIMATE_FACTOR` (1.3: Claude yields ~30 % more
tokens than cl100k on transcripts). Output tokens are the typical answer plus the thinking
billed at the judge's effort (`judge.catalog.expected_output`). Every `Estimate` says which
basis it used.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.judge.anthropic import AnthropicJudge
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


def estimate_prepared(
    prepared: Prepared,
    *,
    model: str,
    batch: bool = False,
    judge: AnthropicJudge | None = None,
    exact: bool | None = None,
    effort: str | None = None,
) -> Estimate:
    """Tokens and USD the LLM judge would spend on a prepared session.

    A chunked session's final call includes notes not written yet, counted as
    `NOTES_PROMPT_TOKENS` per chunk. Every input token is priced at the full input rate
    (cache reads would be cheaper), so the input cost is an upper bound.

    Args:
        prepared: The redacted, chunked session.
        model: The judge model (prices, tokenizer, limits).
        batch: Price as Message Batches (-50 %).
        judge: The judge whose prompts are used (default: one per model and effort).
        exact: Count with `messages.count_tokens`; None means "when a key is set".
        effort: The judge's effort (default `SCORER_EFFORT`).
    """
    from scorer.judge.catalog import EXPECTED_ANSWER, EXPECTED_THINKING, expected_output
    from scorer.judge.cost import cost_usd
    from scorer.models import JudgeUsage
    from scorer.settings import get_settings

    settings = get_settings()
    judge = judge or _estimator(model, effort or settings.effort)
    chunks = prepared.chunks
    if exact is None:
        exact = settings.anthropic_configured
    est = Estimate(requests=len(chunks) + (1 if len(chunks) > 1 else 0))
    counted = _claude_counts(judge, prepared) if exact else None
    if counted is not None:
        est.input_tokens = counted
        est.input_basis = "count_tokens (Claude's tokenizer, cached per request)"
    else:
        est.input_tokens = _factor_counts(judge, prepared)
        est.input_basis = f"cl100k x {settings.estimate_factor:.2f} (no count_tokens)"
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
    est.cost_usd = cost_usd(usage, model, batch=batch)
    return est


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
    chunks = prepared.chunks
    if len(chunks) == 1:
        return judge.estimate_chunk(chunks[0], "score")
    total = sum(judge.estimate_chunk(c, "notes") for c in chunks)
    final = judge.final_request(prepared.header, [], chunks[-1])
    text = judge.system_text + "".join(m["content"] for m in final["messages"])
    return total + judge.counter.count(text) + _final_extra(prepared)


def _claude_counts(judge: AnthropicJudge, prepared: Prepared) -> int | None:
    """Sum of `count_tokens` over the session's requests; None when the API cannot count."""
    from scorer.judge.client import count_tokens
    from scorer.judge.token_counts import content_key

    cache, client = _cache(), None
    total = 0
    for params in _requests(judge, prepared):
        key = content_key(params)
        tokens = cache.get(key)
        if tokens is None:
            client = client or _client(judge)
            tokens = count_tokens(client, params)
            if tokens is None:
                return None
            cache.put(key, tokens)
        total += tokens
    return total + _final_extra(prepared)


def judge_shape(model: str, effort: str | None = None) -> tuple[int, int]:
    """(system prompt tokens, scoring call `max_tokens`) of the judge at `effort`: what a
    warm prompt cache reads on every call, and what a call holds of the output limit."""
    from scorer.settings import get_settings

    judge = _estimator(model, effort or get_settings().effort)
    return judge.counter.count(judge.system_text), judge.max_tokens("score")


_ESTIMATORS: dict[tuple[str, str], AnthropicJudge] = {}
_CACHES: dict[str, TokenCountCache] = {}
_CLIENTS: dict[str, Any] = {}
_LOCK = threading.Lock()


def _estimator(model: str, effort: str) -> AnthropicJudge:
    """An AnthropicJudge used for its prompts, counter and client (it judges nothing)."""
    from scorer.judge.anthropic import AnthropicJudge

    with _LOCK:
        if (model, effort) not in _ESTIMATORS:
            _ESTIMATORS[(model, effort)] = AnthropicJudge(
                None, model=model, effort=effort, verify_tokens=False
            )
        return _ESTIMATORS[(model, effort)]


def _client(judge: AnthropicJudge) -> Any:
    """The judge's own client, or (for the shared estimators) one per credentials."""
    with _LOCK:  # another thread may be adding an estimator: never iterate unlocked
        shared = any(judge is e for e in _ESTIMATORS.values())
    if not shared:
        return judge.client
    from scorer.judge.client import make_client
    from scorer.settings import get_settings

    s = get_settings()
    key = f"{s.anthropic_base_url}|{s.anthropic_api_key}|{s.anthropic_auth_token}"
    with _LOCK:
        if key not in _CLIENTS:
            _CLIENTS[key] = make_client()
        return _CLIENTS[key]


def _cache() -> TokenCountCache:
    """One count cache per store folder (tests move `SCORER_HOME`)."""
    from scorer.judge.token_counts import TokenCountCache
    from scorer.settings import get_settings

    home = str(get_settings().home)
    with _LOCK:
        if home not in _CACHES:
            _CACHES[home] = TokenCountCache()
        return _CACHES[home]
