"""Score one session end to end: load → redact → render → chunk → judge → overall → store.

The stages themselves are pure functions elsewhere; this module only wires them and
decides which judge runs.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Literal

from scorer.judge.base import JudgeKind, make_judge
from scorer.judge.rubric import Rubric
from scorer.models import Scorecard
from scorer.prepare import Prepared, prepare
from scorer.settings import get_settings
from scorer.sources.base import SessionSource

JudgeChoice = Literal["auto", "llm", "heuristic"]


def choose_judge(choice: JudgeChoice) -> Literal["llm", "heuristic"]:
    """`auto` means the LLM judge when a key is set, else the heuristic (announced)."""
    if choice != "auto":
        return choice
    if get_settings().anthropic_api_key or os.environ.get("ANTHROPIC_AUTH_TOKEN"):
        return "llm"
    print(
        "note: ANTHROPIC_API_KEY is not set: using the offline heuristic judge "
        "(scores are stored as judge=heuristic).",
        file=sys.stderr,
    )
    return "heuristic"


def judge_prepared(
    prepared: Prepared,
    kind: JudgeKind,
    *,
    model: str | None = None,
    rubric: Rubric | None = None,
    client: Any = None,
) -> Scorecard:
    """Run the judge of this kind on a prepared session."""
    return make_judge(kind, model=model, rubric=rubric, client=client).judge(prepared)


def judge_and_store(
    prepared: Prepared,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    store: bool = True,
    client=None,
) -> Scorecard:
    """Judge a prepared session, stamp provenance, and save it to the local store."""
    card = judge_prepared(prepared, choose_judge(judge), model=model, client=client)
    card.meta.setdefault("redactions", prepared.redactions.total)
    if prepared.session.origin:
        card.meta.setdefault("origin", prepared.session.origin)
    if store:
        from scorer.sinks.store import ScoreStore

        ScoreStore().save(card)
    return card


def score_session(
    source: SessionSource,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    budget: int | None = None,
    overlap: int | None = None,
    store: bool = True,
    client=None,
) -> tuple[Prepared, Scorecard]:
    """Load, prepare, judge and (unless `store=False`) save one session."""
    prepared = prepare(source.load(), budget=budget, overlap=overlap)
    card = judge_and_store(prepared, judge=judge, model=model, store=store, client=client)
    return prepared, card
