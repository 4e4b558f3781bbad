"""Every setting comes through `Settings`, so a `.env` file applies to every command."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.settings import get_settings


def write_env(tmp_path: Path, **values: str) -> None:
    text = "".join(f"{k}={v}\n" for k, v in values.items())
    (tmp_path / ".env").write_text(text)  # clean_env made tmp_path the working directory
    get_settings.cache_clear()


def test_dotenv_reaches_every_scorer_setting(tmp_path):
    write_env(
        tmp_path,
        SCORER_DEBUG="1",
        SCORER_BATCH_POLL_SECONDS="0.5",
        SCORER_PRICES=str(tmp_path / "p.toml"),
        SCORER_TERMINAL_BENCH=str(tmp_path / "tb"),
        SCORER_NOTEBOOK_HOME=str(tmp_path / "nb"),
        ANTHROPIC_AUTH_TOKEN="tok",
    )
    s = get_settings()
    assert s.debug and s.batch_poll_seconds == 0.5
    assert s.prices_file == tmp_path / "p.toml" and s.terminal_bench == tmp_path / "tb"
    assert s.notebook_home == tmp_path / "nb"
    assert s.anthropic_configured and s.anthropic_api_key is None


def test_auth_token_is_accepted_by_every_judge_path(tmp_path):
    from scorer.jobs.backfill import _anthropic_client
    from scorer.jobs.ratelimit import RateLimiter
    from scorer.jobs.score import choose_judge
    from scorer.judge.anthropic import make_client

    write_env(tmp_path, ANTHROPIC_AUTH_TOKEN="tok")
    assert choose_judge("auto") == "llm"
    assert make_client().auth_token == "tok"
    assert _anthropic_client(RateLimiter()).auth_token == "tok"


def test_scorer_debug_in_dotenv_shows_the_traceback(tmp_path):
    write_env(tmp_path, SCORER_DEBUG="1")
    result = CliRunner().invoke(app, ["session", str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0
    assert result.exception is not None and not isinstance(result.exception, SystemExit)
