"""session-scorer: judge coding-agent sessions on six dimensions plus a weighted overall.

The public names are loaded on first use (PEP 562), so `import scorer.cli.session` for
`--help` does not pay for the pydantic models, the pipeline or `importlib.metadata`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.jobs.score import score_session
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

    __version__: str

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


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from scorer._version import package_version

        value: Any = package_version()
    elif name == "score_session":
        # The whole pipeline: loaded on first use so `import scorer.models` (which runs
        # this file first) stays cheap and acyclic.
        from scorer.jobs.score import score_session

        value = score_session
    elif name in __all__:
        from scorer import models

        value = getattr(models, name)
    else:
        raise AttributeError(f"module 'scorer' has no attribute {name!r}")
    globals()[name] = value  # cache: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
