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
    assert make_client(get_settings()).auth_token == "tok"
    assert _anthropic_client(get_settings(), RateLimiter()).auth_token == "tok"


def test_scorer_debug_in_dotenv_shows_the_traceback(tmp_path):
    write_env(tmp_path, SCORER_DEBUG="1")
    result = CliRunner().invoke(app, ["session", str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0
    assert result.exception is not None and not isinstance(result.exception, SystemExit)


# --- only our documented variables ------------------------------------------------------

FOREIGN = {
    "MODEL": "gpt-4o",
    "DEBUG": "1",
    "EFFORT": "max",
    "CHUNK_BUDGET": "5",
    "CHUNK_OVERLAP": "99",
    "FALLBACK_MODEL": "gpt-4o-mini",
    "CONTEXT_WINDOW": "10",
    "MAX_PROMPT_TOKENS": "10",
    "ESTIMATE_FACTOR": "9",
    "TOKEN_SAFETY_FACTOR": "9",
    "CACHE_DIR": "/nowhere",
    "CLAUDE_PROJECTS": "/nowhere",
    "PRICES_FILE": "/nowhere.toml",
    "BATCH_POLL_SECONDS": "0",
}
"""Unprefixed names of `Settings` fields that other tools set (`HOME` is set apart)."""


def _foreign_env(monkeypatch, tmp_path: Path) -> Path:
    """Every foreign name set, `HOME` elsewhere, `SCORER_HOME` unset; returns that HOME."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.delenv("SCORER_HOME")
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(elsewhere))
    for name, value in FOREIGN.items():
        monkeypatch.setenv(name, value)
        monkeypatch.setenv(name.lower(), value)
    get_settings.cache_clear()
    return elsewhere


def test_unprefixed_variables_change_no_setting(monkeypatch, tmp_path):
    elsewhere = _foreign_env(monkeypatch, tmp_path)
    write_env(tmp_path, **FOREIGN)  # not from a .env file either
    s = get_settings()
    defaults = get_settings().model_construct()  # every field at its default
    assert s.model == defaults.model == "claude-sonnet-5-5"
    assert (s.effort, s.fallback_model, s.debug) == ("medium", "claude-sonnet-4-6", False)
    assert (s.chunk_budget, s.chunk_overlap, s.token_safety_factor) == (70_000, 4, 1.25)
    assert (s.context_window, s.max_prompt_tokens, s.estimate_factor) == (None, None, 1.3)
    assert s.prices_file is None and s.batch_poll_seconds == 30.0
    assert s.claude_projects != Path("/nowhere") and s.cache_dir != Path("/nowhere")
    # The documented data dir (platformdirs under this HOME), never HOME itself.
    assert s.home == elsewhere / ".local" / "share" / "session-scorer"
    assert s.store_path == s.home / "scores.sqlite3"


def test_unprefixed_variables_change_no_command(monkeypatch, tmp_path):
    elsewhere = _foreign_env(monkeypatch, tmp_path)
    runner = CliRunner()
    demo = str(Path(__file__).resolve().parents[1] / "examples" / "demo-session.jsonl")
    scored = runner.invoke(app, ["session", demo, "--judge", "heuristic", "--json"])
    assert scored.exit_code == 0, scored.output  # CHUNK_BUDGET=5 would split every event
    assert (elsewhere / ".local/share/session-scorer/scores.sqlite3").is_file()
    assert not (elsewhere / "scores.sqlite3").exists()
    dry = runner.invoke(app, ["session", demo, "--judge", "llm", "--dry-run", "--json"])
    payload = __import__("json").loads(dry.stdout)
    assert payload["chunk_budget"] == 70_000 and payload["estimate"]["model"] == "claude-sonnet-5-5"
    assert payload["estimate"]["effort"] == "medium"
    failed = runner.invoke(app, ["session", str(tmp_path / "missing.jsonl")])
    assert failed.exit_code == 1 and isinstance(failed.exception, SystemExit)  # DEBUG=1: no trace


# --- a store left in the home folder by the earlier version ------------------------------


def _legacy_store(home: Path, session_id: str = "old-session") -> None:
    from scorer.sinks.store import ScoreStore
    from tests.sinks.cards import make_card

    home.mkdir(parents=True, exist_ok=True)
    with ScoreStore(home / "scores.sqlite3") as store:
        store.save(make_card(session_id))
    (home / "token-counts.sqlite3").write_bytes(b"")


def _default_home(monkeypatch, tmp_path: Path) -> tuple[Path, Path]:
    home, data = tmp_path / "home", tmp_path / "data"
    monkeypatch.delenv("SCORER_HOME")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    get_settings.cache_clear()
    return home, data / "session-scorer"


def test_a_store_in_the_home_folder_is_moved_to_the_data_dir(monkeypatch, tmp_path):
    home, data_dir = _default_home(monkeypatch, tmp_path)
    _legacy_store(home)
    result = CliRunner().invoke(app, ["scores", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert [r["session_id"] for r in __import__("json").loads(result.stdout)] == ["old-session"]
    assert "moved the score store" in result.stderr and str(data_dir) in result.stderr
    assert not (home / "scores.sqlite3").exists() and (data_dir / "scores.sqlite3").is_file()
    assert (data_dir / "token-counts.sqlite3").exists()  # its caches come along
    get_settings.cache_clear()
    again = CliRunner().invoke(app, ["scores", "list", "--json"])
    assert "moved" not in again.stderr  # once


def test_with_both_stores_nothing_moves_and_the_old_one_is_named(monkeypatch, tmp_path):
    from scorer._legacy_home import adopt_legacy_home

    home, data_dir = _default_home(monkeypatch, tmp_path)
    _legacy_store(home, "old")
    _legacy_store(data_dir, "new")
    result = CliRunner().invoke(app, ["scores", "list", "--json"])
    assert [r["session_id"] for r in __import__("json").loads(result.stdout)] == ["new"]
    assert "older score store is still at" in result.stderr
    assert (home / "scores.sqlite3").is_file()
    assert adopt_legacy_home(data_dir, home) is None


def test_a_foreign_file_named_like_the_store_is_left_alone(monkeypatch, tmp_path):
    home, data_dir = _default_home(monkeypatch, tmp_path)
    home.mkdir()
    (home / "scores.sqlite3").write_text("someone else's file")
    get_settings()
    assert (home / "scores.sqlite3").read_text() == "someone else's file"
    assert not (data_dir / "scores.sqlite3").exists()


def test_an_explicit_scorer_home_never_adopts_the_home_folder(monkeypatch, tmp_path, clean_env):
    home = tmp_path / "home"
    _legacy_store(home)
    monkeypatch.setenv("HOME", str(home))
    get_settings.cache_clear()
    assert get_settings().home == clean_env
    assert (home / "scores.sqlite3").is_file()
