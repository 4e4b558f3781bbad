"""Cost estimates: Claude's count_tokens when a key is set (cached on disk), 1.3 x cl100k
otherwise, and output that includes thinking at the judge's effort."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.jobs import estimate as E
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.catalog import expected_output
from scorer.judge.client import make_client
from scorer.judge.config import JudgeConfig
from scorer.judge.token_counts import TokenCountCache
from scorer.prepare import prepare
from scorer.prepare.tokens import TokenCounter
from scorer.settings import get_settings
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import FakeAnthropic, claude_like_count, serve

DEMO = REPO / "examples" / "demo-session.jsonl"


def demo():
    return prepare(resolve(str(DEMO)).load())


def estimator_judge(
    model: str = "claude-sonnet-5-5",
    effort: str | None = None,
    client=None,
    *,
    second_opinions: bool = False,
):
    """The judge an estimate prices, as the CLI builds it (no client: no key); the first
    verdict alone unless `second_opinions`."""
    config = JudgeConfig.from_settings(
        get_settings(), model=model, effort=effort, second_opinions=second_opinions
    )
    return AnthropicJudge(client, config, verify_tokens=False)


def test_without_a_key_the_calibrated_factor_over_the_chunker_counts():
    prepared = demo()
    judge = estimator_judge()
    est = E.estimate_prepared(prepared, judge)
    assert est.input_basis.startswith("cl100k x 1.30")
    params = judge.scoring_request(prepared.header, prepared.chunks[0])
    text = judge.system_text + params["messages"][0]["content"]
    truth = TokenCounter(1.3).count(text)
    assert abs(est.input_tokens - truth) <= 0.03 * truth


def test_output_estimate_includes_thinking_at_the_effort():
    prepared = demo()
    medium = E.estimate_prepared(prepared, estimator_judge(effort="medium"))
    high = E.estimate_prepared(prepared, estimator_judge(effort="high"))
    assert medium.output_tokens == expected_output("score", "medium")
    assert high.output_tokens > medium.output_tokens and high.cost_usd > medium.cost_usd
    assert "thinking at effort high" in high.output_basis


def test_second_opinions_add_the_dev_share_of_two_calls_over_one_cached_prefix():
    """On by default: the uncertain band's dev share times two scoring calls, the prefix
    written once and read once, priced at the full (not batch) rate."""
    prepared = demo()
    first = E.estimate_prepared(prepared, estimator_judge())
    judge = estimator_judge(second_opinions=True)
    both = E.estimate_prepared(prepared, judge)
    share = judge.config.goal_models.llm.in_band_share
    assert 0 < share < 1 and both.second_opinions == pytest.approx(2 * share)
    assert both.input_tokens == first.input_tokens + round(share * first.input_tokens)
    assert both.output_tokens == first.output_tokens + round(
        share * 2 * expected_output("score", "medium")
    )
    prices = judge.pricing.price(judge.model)  # sonnet 5.5: writes at 1.25 x input
    extra = share * (
        first.input_tokens * (1.25 * prices.input + prices.cache_read) / 1e6
        + 2 * expected_output("score", "medium") * prices.output / 1e6
    )
    assert both.cost_usd == pytest.approx(first.cost_usd + extra)
    assert first.second_opinions == 0
    batch = E.estimate_prepared(prepared, judge, batch=True)
    first_batch = E.estimate_prepared(prepared, estimator_judge(), batch=True)
    assert batch.cost_usd - first_batch.cost_usd == pytest.approx(extra)


def test_with_a_key_count_tokens_decides_and_is_cached_on_disk(monkeypatch, clean_env):
    prepared = demo()
    fake = FakeAnthropic(count_tokens_value=None)  # Claude-like: differs from tiktoken
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        settings = get_settings()
        judge = estimator_judge(client=make_client(settings))
        counts = TokenCountCache(settings.token_counts_path)
        est = E.estimate_prepared(prepared, judge, counts=counts)
        [body] = fake.count_token_bodies
        assert est.input_basis.startswith("count_tokens")
        assert est.input_tokens == claude_like_count(body)
        assert est.input_tokens != E.estimate_prepared(prepared, judge, exact=False).input_tokens
        E.estimate_prepared(prepared, judge, counts=counts)
        assert len(fake.count_token_bodies) == 1  # same content: cached
        fresh = TokenCountCache(settings.token_counts_path)  # a new process: the disk answers
        high = estimator_judge(effort="high", client=make_client(settings))
        again = E.estimate_prepared(prepared, high, counts=fresh)
        assert again.input_tokens == est.input_tokens and len(fake.count_token_bodies) == 1
    assert (clean_env / "token-counts.sqlite3").exists()


def test_dry_run_shows_the_estimate_and_its_basis():
    runner = CliRunner()
    result = runner.invoke(
        app, ["session", str(DEMO), "--dry-run", "--judge", "llm", "--effort", "high"]
    )
    assert result.exit_code == 0, result.output
    assert "input basis: cl100k x 1.30" in result.stdout
    assert "thinking at effort high" in result.stdout
    data = json.loads(
        runner.invoke(app, ["session", str(DEMO), "--dry-run", "--judge", "llm", "--json"]).stdout
    )
    assert data["estimate"]["effort"] == "medium" and data["estimate"]["input_tokens"] > 0
    assert data["estimate"]["input_basis"].startswith("cl100k")


def test_auto_judge_without_a_key_dry_run_has_no_llm_estimate():
    """`auto` means the heuristic when no key is set: nothing to estimate (or import)."""
    result = CliRunner().invoke(app, ["session", str(DEMO), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["estimate"] is None
