"""The judges: rubric, prompts and structured-output schema, the Sonnet judge, costs.

Heavy modules (the anthropic SDK) are imported on first use of their names, so importing
`scorer.judge.rubric` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_EXPORTS = {
    "AnthropicJudge": "scorer.judge.anthropic",
    "ChunkNotes": "scorer.judge.schema",
    "ContextWindowExceeded": "scorer.judge.anthropic",
    "Pricing": "scorer.judge.cost",
    "Rubric": "scorer.judge.rubric",
    "cost_usd": "scorer.judge.cost",
    "default_rubric": "scorer.judge.rubric",
    "load_prompts": "scorer.judge.prompts",
    "load_rubric": "scorer.judge.rubric",
    "prompt_hash": "scorer.judge.prompts",
    "prompt_version": "scorer.judge.prompts",
    "scoring_model": "scorer.judge.schema",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'scorer.judge' has no attribute {name!r}")
