"""session-scorer: judge coding-agent sessions on six dimensions plus a weighted overall."""

from importlib.metadata import PackageNotFoundError, version

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
]
