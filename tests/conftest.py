"""Shared fixtures: a clean environment per test, and the real data folder beside the repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from scorer.settings import get_settings

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
CC_PROJECTS = SHARED_DATA / "claude-code-projects"
TERMINAL_BENCH_ALL = SHARED_DATA / "terminal-bench"
"""Every backend (agent model) of the Terminal-Bench runs: the same 80 tasks each."""
TERMINAL_BENCH = TERMINAL_BENCH_ALL / "claude_code_coder"
TERMINAL_BENCH_GPT5 = TERMINAL_BENCH_ALL / "claude_code_gpt5"
SPOTTER = CC_PROJECTS / "-home-USER-projects-spotter"
BIG_SESSION = SPOTTER / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
FIXTURES = Path(__file__).resolve().parent / "fixtures"

_ENV_VARS = [
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "LANGFUSE_PUBLIC_KEY",
    "LANGFUSE_SECRET_KEY",
    "LANGFUSE_BASE_URL",
    "LANGFUSE_HOST",
    "SCORER_HOME",
    "SCORER_CLAUDE_PROJECTS",
    "SCORER_MODEL",
    "SCORER_DEBUG",
    "SCORER_EFFORT",
    "SCORER_TERMINAL_BENCH",
    "SCORER_VALIDITY_DIR",
    "SCORER_FALLBACK_MODEL",
    "SCORER_CONTEXT_WINDOW",
    "SCORER_MAX_PROMPT_TOKENS",
    "SCORER_ESTIMATE_FACTOR",
    "SCORER_CLAUDE_BIN",
    "SCORER_SECOND_OPINIONS",
    "SCORER_CLAUDE_TIMEOUT",
    "SCORER_FINAL_STATE",
    "SCORER_FINAL_STATE_MAX_AGE",
    *(
        f"SCORER_HOOK_{knob}"
        for knob in (
            "ENABLED",
            "EVENTS",
            "STOP_DEBOUNCE",
            "MIN_TOOL_CALLS",
            "DAILY_COST_CAP",
            "PROJECTS",
            "IGNORE_PROJECTS",
            "JUDGE",
            "PUSH",
            "MODE",
            "BATCH_SIZE",
            "BATCH_MINUTES",
        )
    ),
]


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    """One `SCORER_CACHE_DIR` for the whole run (derived data only: the tokenizer tables)."""
    return tmp_path_factory.mktemp("scorer-cache")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path, cache_dir):
    """No real keys, state under a tmp dir, fresh settings (and Langfuse server
    capabilities: every fake is a new server) for every test."""
    from scorer import langfuse_caps
    from scorer.prepare import tokens
    from scorer.sinks.langfuse import configs

    langfuse_caps.reset()
    configs.forget_checks()
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    home = tmp_path / "scorer-home"
    monkeypatch.setenv("SCORER_HOME", str(home))
    monkeypatch.setenv("SCORER_CACHE_DIR", str(cache_dir))
    monkeypatch.setattr(tokens, "_cache_dir", cache_dir)  # what `run_settings()` does
    # Backfills prepare in their threads unless a test asks for worker processes
    # (tests/jobs/test_prep_pool.py): spawning one costs about a second.
    monkeypatch.setenv("SCORER_PREP_PROCESSES", "0")
    monkeypatch.setenv("SCORER_CLAUDE_PROJECTS", str(tmp_path / "no-projects"))
    monkeypatch.chdir(tmp_path)  # so no stray .env is read
    get_settings.cache_clear()
    yield home
    get_settings.cache_clear()


class RetryWaits(list[float]):
    """Every retry wait asked for, in order (all APIs); `.anthropic` / `.langfuse` split them."""

    def __init__(self) -> None:
        super().__init__()
        self.anthropic: list[float] = []
        self.langfuse: list[float] = []

    def recorder(self, api: list[float]):
        def record(seconds: float) -> None:
            api.append(seconds)
            self.append(seconds)

        return record


@pytest.fixture(autouse=True)
def fast_retry_waits(monkeypatch) -> RetryWaits:
    """No test sleeps between retries: the judge's and Langfuse's waits are recorded instead."""
    from scorer import langfuse_client
    from scorer.judge import retry

    waits = RetryWaits()
    monkeypatch.setattr(retry, "sleep", waits.recorder(waits.anthropic))
    monkeypatch.setattr(langfuse_client.RETRY, "sleep", waits.recorder(waits.langfuse))
    return waits


def require(path: Path) -> Path:
    """Skip the test when a real-data path is absent (CI has ../shared/data beside the repo)."""
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    return path


@pytest.fixture
def cc_projects() -> Path:
    return require(CC_PROJECTS)


@pytest.fixture
def terminal_bench() -> Path:
    return require(TERMINAL_BENCH)


@pytest.fixture
def terminal_bench_all() -> Path:
    """The folder holding both backends (skips unless both are there)."""
    require(TERMINAL_BENCH)
    require(TERMINAL_BENCH_GPT5)
    return TERMINAL_BENCH_ALL


@pytest.fixture
def big_session() -> Path:
    return require(BIG_SESSION)


@pytest.fixture
def claude() -> str:
    """The real Claude Code CLI (`tests.fakes.claude_code.claude_binary`), or a skip."""
    from tests.fakes.claude_code import claude_binary

    binary = claude_binary()
    if binary is None:
        pytest.skip("Claude Code CLI not installed (.ci/run installs it into .ci/claude-code)")
    return binary
