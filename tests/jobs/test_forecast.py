"""What a run knows of the account's limits before it starts, the chunk plan under them,
and the dry run's forecast (pure arithmetic, then through `score-backfill --dry-run`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from scorer.jobs.account import (
    LIMITS_FILE,
    AccountLimits,
    ChunkPlan,
    assumed_limits,
    fit_budget,
    known_limits,
    load_learned,
    save_learned,
    tier_limits,
)
from scorer.jobs.forecast import DEFAULT_LATENCY, forecast

MODEL = "claude-sonnet-5-5"
LEARNED = {"rpm": 50.0, "itpm": 200_000.0, "otpm": 40_000.0, "period_s": 60.0, "latency_s": 2.0}


def test_learned_limits_are_remembered_per_model(tmp_path):
    save_learned(tmp_path, {MODEL: LEARNED}, datetime(2026, 11, 22, tzinfo=UTC))
    save_learned(tmp_path, {"claude-haiku-4-5": {**LEARNED, "rpm": 4000.0}})
    limits = load_learned(tmp_path, MODEL)
    assert limits is not None and (limits.rpm, limits.itpm, limits.otpm) == (50, 200_000, 40_000)
    assert limits.source == "learned 2026-11-22" and limits.latency_s == 2.0
    assert load_learned(tmp_path, "claude-haiku-4-5").rpm == 4000  # type: ignore[union-attr]
    assert [p.name for p in tmp_path.iterdir()] == [LIMITS_FILE]  # no temp file left


def test_an_unreadable_limits_file_is_no_limits(tmp_path):
    (tmp_path / LIMITS_FILE).write_text("{not json")
    assert load_learned(tmp_path, MODEL) is None
    (tmp_path / LIMITS_FILE).write_text(json.dumps({MODEL: {"rpm": "x"}}))
    assert load_learned(tmp_path, MODEL) is None


def test_what_a_run_plans_under_and_what_a_forecast_assumes(tmp_path):
    assert known_limits(tmp_path, MODEL, None) is None  # the real run: nothing assumed
    assumed = assumed_limits(tmp_path, MODEL, None)
    assert (assumed.itpm, assumed.tier) == (450_000, 2)
    assert "not known yet" in assumed.source and "SCORER_RATE_TIER" in assumed.source
    assert known_limits(tmp_path, MODEL, 1).itpm == 30_000  # type: ignore[union-attr]
    save_learned(tmp_path, {MODEL: LEARNED})
    assert known_limits(tmp_path, MODEL, 1).itpm == 200_000  # type: ignore[union-attr]


def test_the_chunk_budget_fits_a_low_input_limit():
    budget = fit_budget(30_000, 70_000, estimate_factor=1.3, safety=1.25)
    assert budget is not None and budget < 30_000
    # a chunk of that budget, in Claude tokens, plus what the request carries besides
    assert budget * 1.3 / 1.25 + 3_000 <= 0.75 * 30_000 + 1
    assert fit_budget(450_000, 70_000, estimate_factor=1.3, safety=1.25) is None


def test_the_plan_uses_the_limit_learned_this_run_first():
    live: list[int | None] = [None]
    plan = ChunkPlan(70_000, 1.3, 1.25, tier_limits(2, "documented"), lambda: live[0])
    assert plan.budget() == (None, None) and plan.used is None
    live[0] = 30_000
    budget, note = plan.budget()
    assert budget is not None and note is not None
    assert "30,000 input tokens per minute (learned this run)" in note
    assert plan.used == note


def test_the_forecast_names_the_binding_limit_and_adds_one_call_at_each_end():
    f = forecast(
        tier_limits(2, "documented"),
        requests=500,
        charged_input_tokens=20_000_000,  # 500 sessions of 40k
        output_tokens=500 * 5_000,
        concurrency=64,
        max_tokens=16_000,
        cost_usd=52.5,
        batch_cost_usd=26.25,
    )
    assert f.minutes["input-tokens"] == pytest.approx(20_000_000 / 450_000, abs=1e-3)
    # at 60 s a call, 90k OTPM holds 5 calls' max_tokens: calls in flight bind, not ITPM
    assert f.binding == "concurrency" and f.concurrency == 5
    assert f.wall_seconds == pytest.approx(DEFAULT_LATENCY * (2 + 500 / 5))
    assert "assumed" in f.latency_basis
    text = "\n".join(f.lines())
    assert "tier 2 defaults" in text and "calls in flight bind (5 at a time)" in text
    assert "--batch-api: ~$26.25" in text and "fit the tier's queue of 200,000" in text


def test_the_forecast_at_learned_limits_is_the_ideal_plus_the_first_call():
    learned = AccountLimits(50, 200_000, 40_000, "learned 2026-11-22", True, latency_s=2.0)
    f = forecast(
        learned,
        requests=80,
        charged_input_tokens=2_000_000,
        output_tokens=190_000,
        concurrency=16,
        max_tokens=16_000,
        cost_usd=5.0,
        batch_cost_usd=2.5,
    )
    assert f.binding == "input-tokens"
    assert f.wall_seconds == pytest.approx((10 - 1) * 60 + 2 + 2, abs=0.1)
    assert f.batch_queue is None and "depends on the usage tier" in f.lines()[2]
