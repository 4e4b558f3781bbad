"""Typed errors. They become one-line messages only at the CLI.

ScorerError
├── ConfigError        bad score config, prompt file or option
│   └── SettingsError  a bad environment variable (a usage error: exit 2)
├── CredentialsError   a missing/rejected key; names the env var to check
├── SourceError        a session could not be found or read
│   └── EmptySessionError
├── JudgeError         the judge API failed for good (after retries)
│   └── OverRateLimit  a request larger than the account's per-minute limit (never sent)
├── SinkError          a store / Langfuse write failed
└── RunStopped         a stopped run sends no more requests

KeyboardInterrupt
└── RunInterrupted     Ctrl-C ended a backfill or calibration; carries what it did
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.models import JudgeUsage


class ScorerError(Exception):
    """Base class: anything the user can fix or should be told about in one line."""

    spent: JudgeUsage | None = None
    """What the judge's calls for this session had used before the error (billed even
    though the session gets no card); set by the LLM judge, recorded by the backfill."""
    spent_usd: float = 0.0
    """`spent` in USD."""


class ConfigError(ScorerError):
    pass


class SettingsError(ConfigError):
    """An environment variable with a value outside what the program accepts."""

    exit_code = 2


class CredentialsError(ScorerError):
    pass


class SourceError(ScorerError):
    pass


class EmptySessionError(SourceError):
    pass


class JudgeError(ScorerError):
    pass


class OverRateLimit(JudgeError):
    """A judge request the account's token bucket can never take (it holds one minute of
    the limit), so it is not sent to wait forever: the judge re-chunks the session.

    Attributes:
        tokens: The request's estimated input tokens (charged ones: cache reads excluded).
        limit: The account's input tokens per minute for the model.
    """

    def __init__(self, tokens: int, limit: int, model: str) -> None:
        self.tokens, self.limit, self.model = tokens, limit, model
        super().__init__(
            f"a judge request of ~{tokens:,} input tokens can never fit the account's "
            f"{limit:,} input tokens per minute for {model}"
        )


class SinkError(ScorerError):
    pass


class RunStopped(ScorerError):
    """A run was stopped (Ctrl-C, bad credentials) before this request went out."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C ended a run once the judge calls on the wire were stored.

    Still a `KeyboardInterrupt` (exit 130), carrying what the run did so the CLI can say
    what was stored, what was spent and how to resume.

    Attributes:
        summary: The run's account: a `BackfillSummary` or calibration's `FillResult`.
    """

    def __init__(self, summary: Any) -> None:
        super().__init__("interrupted")
        self.summary = summary
