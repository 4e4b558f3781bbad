"""Configuration from the environment: standard SDK names first, our own with `SCORER_`.

Only the documented variables are read: `ANTHROPIC_*`, `LANGFUSE_*` and `SCORER_*`, from
the environment or a `.env` file in the working directory. A field's own name (`home`,
`model`, `debug`, ...) is never an environment variable: `HOME`, `MODEL` or `DEBUG` set
for other tools change nothing here.

Settings are read where the program is assembled (the CLI, the job entry points) and
handed down as values; `prepare/` and `judge/` never call `get_settings()`.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import AliasChoices, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from scorer.errors import CredentialsError, SettingsError

DEFAULT_MODEL = "claude-sonnet-5-5"
DEFAULT_EFFORT: Literal["low", "medium", "high", "xhigh", "max"] = "medium"
DEFAULT_FALLBACK_MODEL = "claude-sonnet-4-6"
DEFAULT_CHUNK_BUDGET = 70_000
DEFAULT_CHUNK_OVERLAP = 4
DEFAULT_TOKEN_SAFETY = 1.25
DEFAULT_ESTIMATE_FACTOR = 1.3
STORE_FILE = "scores.sqlite3"
MIN_BUDGET, MAX_BUDGET = 500, 2_000_000
"""Sane chunk budgets (tokens): below, the task header alone does not fit; above, no
model's context window holds a chunk."""
MAX_OVERLAP = 1_000
"""Events repeated between chunks, at most."""
_MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}")


def check_model_name(value: str) -> str:
    """A model id is one printable word (`claude-sonnet-5-5`, `...-v1:0`, `model@date`);
    '' (no fallback) passes.

    Raises:
        ValueError: The name holds a line break, a space or a control character.
    """
    if value and not _MODEL_NAME.fullmatch(value):
        raise ValueError(
            "must be one word of letters, digits and ._:@/+- (no spaces or line breaks)"
        )
    return value


class Settings(BaseSettings):
    """Everything read from env vars (and a `.env` file in the working directory)."""

    # No `populate_by_name`: it would also read every field from its unprefixed name
    # (`HOME`, `MODEL`, `DEBUG`, ...), which users set for other tools.
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    anthropic_api_key: str | None = Field(default=None, validation_alias="ANTHROPIC_API_KEY")
    anthropic_auth_token: str | None = Field(default=None, validation_alias="ANTHROPIC_AUTH_TOKEN")
    """A bearer token instead of an API key (gateways); every command accepts either."""
    anthropic_base_url: str | None = Field(default=None, validation_alias="ANTHROPIC_BASE_URL")
    langfuse_public_key: str | None = Field(default=None, validation_alias="LANGFUSE_PUBLIC_KEY")
    langfuse_secret_key: str | None = Field(default=None, validation_alias="LANGFUSE_SECRET_KEY")
    langfuse_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("LANGFUSE_BASE_URL", "LANGFUSE_HOST")
    )

    home: Path = Field(
        default_factory=lambda: Path(platformdirs.user_data_dir("session-scorer")),
        validation_alias="SCORER_HOME",
    )
    """Where the SQLite store and caches live."""
    cache_dir: Path = Field(
        default_factory=lambda: Path(platformdirs.user_cache_dir("session-scorer")),
        validation_alias="SCORER_CACHE_DIR",
    )
    """Derived data that is safe to delete (the parsed tokenizer tables)."""
    claude_projects: Path = Field(
        default_factory=lambda: Path.home() / ".claude" / "projects",
        validation_alias="SCORER_CLAUDE_PROJECTS",
    )
    model: str = Field(default=DEFAULT_MODEL, validation_alias="SCORER_MODEL")
    effort: Literal["low", "medium", "high", "xhigh", "max"] = Field(
        default=DEFAULT_EFFORT, validation_alias="SCORER_EFFORT"
    )
    """The judge's `output_config.effort`: low, medium (default), high, xhigh or max."""
    fallback_model: str = Field(
        default=DEFAULT_FALLBACK_MODEL, validation_alias="SCORER_FALLBACK_MODEL"
    )
    """Where a refused judge request is retried once; empty: no fallback."""
    context_window: int | None = Field(
        default=None, ge=1_000, le=10_000_000, validation_alias="SCORER_CONTEXT_WINDOW"
    )
    """Overrides the model table's context window (tokens)."""
    max_prompt_tokens: int | None = Field(
        default=None, ge=1, le=10_000_000, validation_alias="SCORER_MAX_PROMPT_TOKENS"
    )
    """The single-call ceiling: the largest prompt one judge request may carry (default:
    the context window minus that call's max_tokens)."""
    estimate_factor: float = Field(
        default=DEFAULT_ESTIMATE_FACTOR,
        ge=0.5,
        le=5,
        allow_inf_nan=False,
        validation_alias="SCORER_ESTIMATE_FACTOR",
    )
    """Claude tokens per cl100k token for cost estimates without `count_tokens`."""
    chunk_budget: int = Field(
        default=DEFAULT_CHUNK_BUDGET,
        ge=MIN_BUDGET,
        le=MAX_BUDGET,
        validation_alias="SCORER_CHUNK_BUDGET",
    )
    chunk_overlap: int = Field(
        default=DEFAULT_CHUNK_OVERLAP, ge=0, le=MAX_OVERLAP, validation_alias="SCORER_CHUNK_OVERLAP"
    )
    token_safety_factor: float = Field(
        default=DEFAULT_TOKEN_SAFETY,
        ge=0.5,
        le=5,
        allow_inf_nan=False,
        validation_alias="SCORER_TOKEN_SAFETY",
    )
    debug: bool = Field(default=False, validation_alias="SCORER_DEBUG")
    """Re-raise errors with their traceback instead of one red line."""
    prices_file: Path | None = Field(default=None, validation_alias="SCORER_PRICES")
    """A TOML price table that adds to or replaces the built-in model prices."""
    prep_processes: int | None = Field(
        default=None, ge=0, le=256, validation_alias="SCORER_PREP_PROCESSES"
    )
    """Backfill prep worker processes: 0 never, default one per core (at most 4) from
    `--concurrency 4` on (see `jobs.prep_pool`)."""
    batch_poll_seconds: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        allow_inf_nan=False,
        validation_alias="SCORER_BATCH_POLL_SECONDS",
    )
    """Seconds between Message Batches polls."""
    pacing: bool = Field(default=True, validation_alias="SCORER_PACING")
    """Backfill paces judge calls at the account's rate limits from the API's headers
    (false: only react to 429s)."""
    rate_tier: int | None = Field(default=None, ge=1, le=4, validation_alias="SCORER_RATE_TIER")
    """The API usage tier whose documented limits a backfill assumes before a run has
    learned the account's own (`--dry-run` forecast: tier 2 when unset)."""
    batch_adopt_seconds: float = Field(
        default=60.0,
        ge=0,
        le=86_400,
        allow_inf_nan=False,
        validation_alias="SCORER_BATCH_ADOPT_SECONDS",
    )
    """How long after a batch intent a resumed run looks for the batch it may have created
    before submitting its requests again (see `jobs.batch_intents`)."""
    second_opinions: bool = Field(default=True, validation_alias="SCORER_SECOND_OPINIONS")
    """Ask the LLM judge twice more when its first verdict's goal probability is uncertain."""
    claude_bin: str | None = Field(default=None, validation_alias="SCORER_CLAUDE_BIN")
    """The `claude` executable the `claude-code` judge runs (default: `claude` on PATH)."""
    claude_timeout: float = Field(
        default=600.0,
        gt=0,
        le=86_400,
        allow_inf_nan=False,
        validation_alias="SCORER_CLAUDE_TIMEOUT",
    )
    """Seconds one `claude -p` judge call may take before it is killed and retried."""
    final_state: bool = Field(default=True, validation_alias="SCORER_FINAL_STATE")
    """Add the workspace's final state (git status, diff stat since the session's first
    commit, the task's deliverables) when the session's repository is here (docs/judge.md)."""
    final_state_max_age: float = Field(
        default=24.0,
        gt=0,
        le=24 * 366,
        allow_inf_nan=False,
        validation_alias="SCORER_FINAL_STATE_MAX_AGE",
    )
    """Hours after a session's end past which its workspace is not read (it has likely
    moved on)."""
    terminal_bench: Path | None = Field(default=None, validation_alias="SCORER_TERMINAL_BENCH")
    """The Terminal-Bench runs `score-calibrate` and the validity harness use: one
    backend's folder, or the folder holding several (default:
    ../shared/data/terminal-bench, every backend)."""
    notebook_home: Path | None = Field(default=None, validation_alias="SCORER_NOTEBOOK_HOME")
    """`SCORER_HOME` for the calibration notebook (default: a fresh temp dir)."""

    # ---- `scorer hook`: automatic scoring when a Claude Code session ends (docs/plugin.md)
    hook_enabled: bool = Field(default=True, validation_alias="SCORER_HOOK_ENABLED")
    """The kill switch: false stops every automatic scoring (`/score` still works)."""
    hook_events: str = Field(default="SessionEnd", validation_alias="SCORER_HOOK_EVENTS")
    """Comma-separated hook events that start scoring: `SessionEnd`, `Stop`."""
    hook_stop_debounce: float = Field(
        default=600.0, ge=0, allow_inf_nan=False, validation_alias="SCORER_HOOK_STOP_DEBOUNCE"
    )
    """Seconds a `Stop` waits for the session to stay quiet before it is scored."""
    hook_min_tool_calls: int = Field(default=3, ge=0, validation_alias="SCORER_HOOK_MIN_TOOL_CALLS")
    """Sessions with fewer tool calls (subagents' included) are not scored automatically."""
    hook_daily_cost_cap: float = Field(
        default=5.0, ge=0, allow_inf_nan=False, validation_alias="SCORER_HOOK_DAILY_COST_CAP"
    )
    """USD per UTC day the LLM judge may spend on automatic scoring (0: never the LLM)."""
    hook_projects: str = Field(default="", validation_alias="SCORER_HOOK_PROJECTS")
    """Comma-separated globs of project dirs (or names) to score; empty: every project."""
    hook_ignore_projects: str = Field(default="", validation_alias="SCORER_HOOK_IGNORE_PROJECTS")
    """Comma-separated globs of project dirs (or names) never scored (wins over the list)."""
    hook_judge: Literal["auto", "llm", "claude-code", "heuristic"] = Field(
        default="auto", validation_alias="SCORER_HOOK_JUDGE"
    )
    """`auto`: the LLM judge through the API when a key is set, else through the user's
    Claude Code login when `claude` is found, else the heuristic judge."""
    hook_push: bool = Field(default=True, validation_alias="SCORER_HOOK_PUSH")
    """Push automatic scores to Langfuse (when its keys are set)."""
    hook_mode: Literal["direct", "batch"] = Field(
        default="direct", validation_alias="SCORER_HOOK_MODE"
    )
    """`direct`: judge each session when it ends; `batch`: queue sessions and send them as
    Message Batches (half the price, results within hours; needs `ANTHROPIC_API_KEY`)."""
    hook_batch_size: int = Field(
        default=5, ge=1, le=10_000, validation_alias="SCORER_HOOK_BATCH_SIZE"
    )
    """Batch mode: the queue is sent once this many sessions wait."""
    hook_batch_minutes: float = Field(
        default=30.0, ge=0, le=10_080, allow_inf_nan=False,
        validation_alias="SCORER_HOOK_BATCH_MINUTES",
    )  # fmt: skip
    """Batch mode: the queue is sent once its oldest session has waited this long."""

    @field_validator("hook_events")
    @classmethod
    def _hook_events(cls, value: str) -> str:
        names = [n.strip() for n in value.split(",") if n.strip()]
        unknown = sorted(set(names) - {"SessionEnd", "Stop"})
        if unknown:
            raise ValueError(f"unknown hook event(s) {', '.join(unknown)}: use SessionEnd, Stop")
        return ",".join(names)

    @property
    def anthropic_configured(self) -> bool:
        """An API key or an auth token is set."""
        return bool(self.anthropic_api_key or self.anthropic_auth_token)

    def require_anthropic(self, hint: str = "to use the Sonnet judge") -> None:
        """Raise `CredentialsError` unless `anthropic_configured` (no SDK import needed).

        Args:
            hint: Ends the message ("export it <hint>").
        """
        if not self.anthropic_configured:
            raise CredentialsError(f"ANTHROPIC_API_KEY is not set: export it {hint}")

    @field_validator("model", "fallback_model")
    @classmethod
    def _one_word(cls, value: str) -> str:
        return check_model_name(value)

    @field_validator("anthropic_base_url", "langfuse_base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        if not value:
            return None
        try:
            parts = urlsplit(value)
            parts.port  # noqa: B018 - raises ValueError on a bad port
        except ValueError as exc:
            raise ValueError(f"not a valid URL ({exc})") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http(s) URL with a host")
        return value

    @property
    def langfuse_configured(self) -> bool:
        return bool(self.langfuse_public_key and self.langfuse_secret_key)

    @property
    def store_path(self) -> Path:
        return self.home / STORE_FILE

    @property
    def token_counts_path(self) -> Path:
        """Claude's `count_tokens` answers, cached per request content."""
        return self.home / "token-counts.sqlite3"

    @property
    def home_is_default(self) -> bool:
        """`SCORER_HOME` is not set: the platform's user data dir is used."""
        return "home" not in self.model_fields_set


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings (tests clear the cache with `get_settings.cache_clear()`).

    The first call also moves a store an earlier version left in the home folder into
    the data dir (`scorer._legacy_home`), so no history is lost.

    Raises:
        SettingsError: An env var has a bad value; the message names it (exit 2).
    """
    try:
        settings = Settings()
    except ValidationError as exc:
        raise SettingsError(_describe(exc)) from None
    if settings.home_is_default:
        from scorer._legacy_home import adopt_legacy_home

        adopt_legacy_home(settings.home)
    return settings


_URL_FIELDS = ("ANTHROPIC_BASE_URL", "LANGFUSE_BASE_URL", "LANGFUSE_HOST")


def _describe(exc: ValidationError) -> str:
    """One line naming each bad variable and its value, shaped so that redaction leaves
    it alone (`NAME (value 'x')`, not `NAME=x`, which reads as a secret assignment).

    `repr` keeps a value on its line: it escapes every line break, control and invisible
    character (none is printable to `str.isprintable`)."""
    problems = []
    for error in exc.errors():
        name = str(error["loc"][0]) if error["loc"] else "setting"
        message = str(error["msg"]).removeprefix("Value error, ")
        if name in _URL_FIELDS:  # a URL may carry a password: its value is not repeated
            problems.append(f"{name}: {message}")
        else:
            problems.append(f"{name} (value {error.get('input')!r}): {message}")
    return "bad environment variable " + "; ".join(problems)
