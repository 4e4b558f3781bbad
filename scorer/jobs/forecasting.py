"""The backfill's side of the account's rate limits: the chunk plan a run starts with, the
limits it remembers for the next run, and a dry run's forecast.

Settings are read here, where the run is assembled, and handed down as values
(`account.ChunkPlan`, `forecast.forecast`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scorer.jobs.account import ChunkPlan, assumed_limits, known_limits, save_learned
from scorer.jobs.forecast import Forecast, forecast

if TYPE_CHECKING:
    from scorer.jobs.run_state import BackfillOptions, BackfillSummary, Services, SessionResult


def chunk_plan(opts: BackfillOptions, services: Services, model: str) -> ChunkPlan | None:
    """Chunks under the account's input limit: learned this run, by an earlier one, or a
    tier's (a dry run assumes what its forecast does). None: no direct judge calls."""
    from scorer.settings import get_settings

    if opts.judge != "llm" or (opts.batch_api and not opts.dry_run):
        return None  # Message Batches are not metered per minute
    s = get_settings()
    pick = assumed_limits if opts.dry_run else known_limits
    limiter = services.limiters.get("anthropic")

    def live() -> int | None:
        found = limiter.learned_limits().get(model) if limiter is not None else None
        return int(found["itpm"]) if found else None

    return ChunkPlan(
        s.chunk_budget,
        s.estimate_factor,
        s.token_safety_factor,
        pick(s.home, model, s.rate_tier),
        live,
    )


def remember_limits(services: Services) -> dict[str, dict[str, float]]:
    """Save what the run learned of the account's limits (for the next plan and forecast)."""
    from scorer.settings import get_settings

    limiter = services.limiters.get("anthropic")
    learned = limiter.learned_limits() if limiter is not None else {}
    save_learned(get_settings().home, learned)
    return learned


def dry_run_forecast(
    opts: BackfillOptions, model: str, results: list[SessionResult], summary: BackfillSummary
) -> Forecast:
    """Wall time and cost of judging the sessions a dry run estimated (`jobs.forecast`)."""
    from scorer.jobs.estimate import judge_shape
    from scorer.judge.cost import cost_usd
    from scorer.models import JudgeUsage
    from scorer.settings import get_settings

    s = get_settings()
    system, max_tokens = judge_shape(model, opts.effort or s.effort)
    estimated = [r for r in results if r.outcome == "estimated"]
    requests = sum(r.requests for r in estimated) + round(sum(r.second_opinions for r in estimated))
    tokens_in, tokens_out = summary.estimated_input_tokens, summary.estimated_output_tokens
    cached = system * max(requests - 1, 0)  # a warm prompt cache reads the system prompt
    usage = JudgeUsage(input_tokens=tokens_in, output_tokens=tokens_out)
    return forecast(
        assumed_limits(s.home, model, s.rate_tier),
        requests=requests,
        charged_input_tokens=max(tokens_in - cached, 0),
        output_tokens=tokens_out,
        concurrency=opts.concurrency,
        max_tokens=max_tokens,
        cost_usd=cost_usd(usage, model),
        batch_cost_usd=cost_usd(usage, model, batch=True),
    )


def dry_run_note(judge: str, keyed: bool) -> str | None:
    """Why a dry run's figures are not (only) what this very run would pay: the heuristic
    judge calls no API, and without a key the input is counted locally (None: neither)."""
    local = "its input counted locally (cl100k), since count_tokens needs ANTHROPIC_API_KEY"
    if judge == "heuristic":
        why = "" if keyed else " (ANTHROPIC_API_KEY is not set)"
        llm = (
            f"what --judge llm would cost, {local}" if not keyed else "what --judge llm would cost"
        )
        return f"this run's heuristic judge{why} makes no API calls ($0); the figures are {llm}"
    return None if keyed else f"ANTHROPIC_API_KEY is not set: an estimate with {local}"
