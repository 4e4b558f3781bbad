"""session-scorer: judge coding-agent sessions on six dimensions plus a weighted overall."""

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from scorer.models import (
    Chunk,
    DimensionScore,
    Event,
    EventKind,
    EvidenceRef,
    JudgeUsage,
    Scorecard,
    Session,
    SourceKind,
    TokenUsage,
)

try:
    __version__ = version("session-scorer")
except PackageNotFoundError:  # running from a checkout without install
    __version__ = "0.0.0"

if TYPE_CHECKING:
    from scorer.jobs.score import score_session


def __getattr__(name: str) -> Any:
    # `score_session` pulls in the whole pipeline; load it on first use so that
    # `import scorer.models` (which runs this file first) stays cheap and acyclic.
    if name == "score_session":
        return import_module("scorer.jobs.score").score_session
    raise AttributeError(f"module 'scorer' has no attribute {name!r}")


__all__ = [
    "Chunk",
    "DimensionScore",
    "Event",
    "EventKind",
    "EvidenceRef",
    "JudgeUsage",
    "Scorecard",
    "Session",
    "SourceKind",
    "TokenUsage",
    "__version__",
    "score_session",
]
