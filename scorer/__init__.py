"""session-scorer: judge coding-agent sessions on six dimensions plus a weighted overall.

The library in one example (the README's, run by `tests/test_public_api.py`):

    from scorer import ScoreStore, resolve, score_session, to_dataframe

    with ScoreStore() as store:
        result = score_session(resolve("session.jsonl"), judge="heuristic", sinks=[store])
        print(result.card.overall, to_dataframe(store)["overall_quality"].tolist())

The pipeline's stages are also here: `resolve` (a `SessionSource`), `PrepOptions.run` or
`scorer.prepare.prepare` (a `Prepared` session; `prepare` is the subpackage's name, so the
function is imported from it), `make_judge`/`JudgeConfig` (a `Judge`), `publish` to
`ScoreSink`s (`ScoreStore`, `LangfuseSink`), and the `ScorerError` tree.

The public names are loaded on first use (PEP 562), so `import scorer.cli.session` for
`--help` does not pay for the pydantic models, the pipeline or `importlib.metadata`.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.errors import (
        ConfigError,
        CredentialsError,
        EmptySessionError,
        JudgeError,
        RunStopped,
        ScorerError,
        SettingsError,
        SinkError,
        SourceError,
    )
    from scorer.jobs.score import ScoreResult, score_session
    from scorer.judge.base import BatchJudge, Judge, make_judge
    from scorer.judge.config import JudgeConfig
    from scorer.langfuse_client import LangfuseClient, make_client
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
    from scorer.prepare.prepared import Prepared, PrepOptions
    from scorer.results.rows import to_dataframe
    from scorer.sinks.base import Published, ScoreSink, publish
    from scorer.sinks.langfuse.sink import LangfuseSink
    from scorer.sinks.store import ScoreStore
    from scorer.sources import resolve
    from scorer.sources.base import SessionSource

    __version__: str

_HOMES = {
    "scorer.errors": (
        "ConfigError",
        "CredentialsError",
        "EmptySessionError",
        "JudgeError",
        "RunStopped",
        "ScorerError",
        "SettingsError",
        "SinkError",
        "SourceError",
    ),
    "scorer.jobs.score": ("ScoreResult", "score_session"),
    "scorer.judge.base": ("BatchJudge", "Judge", "make_judge"),
    "scorer.judge.config": ("JudgeConfig",),
    "scorer.langfuse_client": ("LangfuseClient", "make_client"),
    "scorer.models": (
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
    ),
    "scorer.prepare.prepared": ("PrepOptions", "Prepared"),
    "scorer.results.rows": ("to_dataframe",),
    "scorer.sinks.base": ("Published", "ScoreSink", "publish"),
    "scorer.sinks.langfuse.sink": ("LangfuseSink",),
    "scorer.sinks.store": ("ScoreStore",),
    "scorer.sources": ("resolve",),
    "scorer.sources.base": ("SessionSource",),
}
"""Where each public name lives (imported on first use)."""

_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}

__all__ = [
    "BatchJudge",
    "Chunk",
    "ConfigError",
    "CredentialsError",
    "DimensionScore",
    "EmptySessionError",
    "Event",
    "EventKind",
    "EvidenceRef",
    "Judge",
    "JudgeConfig",
    "JudgeError",
    "JudgeUsage",
    "LangfuseClient",
    "LangfuseSink",
    "PrepOptions",
    "Prepared",
    "Published",
    "RunStopped",
    "ScoreResult",
    "ScoreSink",
    "ScoreStore",
    "Scorecard",
    "ScorerError",
    "Session",
    "SessionSource",
    "SettingsError",
    "SinkError",
    "SourceError",
    "SourceKind",
    "TokenUsage",
    "__version__",
    "make_client",
    "make_judge",
    "publish",
    "resolve",
    "score_session",
    "to_dataframe",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from scorer._version import package_version

        value: Any = package_version()
    elif name in _HOME_OF:
        value = getattr(import_module(_HOME_OF[name]), name)
    else:
        raise AttributeError(f"module 'scorer' has no attribute {name!r}")
    globals()[name] = value  # cache: later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
