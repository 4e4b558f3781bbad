"""Score one session end to end: load → redact → render → chunk → judge → overall → store.

The stages themselves are pure functions elsewhere; this module only wires them and
decides which judge runs.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from scorer.judge.base import JudgeKind, make_judge
from scorer.judge.rubric import Rubric
from scorer.models import Scorecard, SessionInfo, TimelineEvent
from scorer.prepare import Prepared, prepare
from scorer.settings import get_settings
from scorer.sources.base import SessionSource
from scorer.stages import StageListener, report_stage, watch_stages

JudgeChoice = Literal["auto", "llm", "heuristic"]

log = logging.getLogger(__name__)


def choose_judge(choice: JudgeChoice) -> Literal["llm", "heuristic"]:
    """`auto` means the LLM judge when a key is set, else the heuristic (announced)."""
    if choice != "auto":
        return choice
    if get_settings().anthropic_configured:
        return "llm"
    log.info(  # the CLI shows it as a note (not with -q)
        "ANTHROPIC_API_KEY is not set: using the offline heuristic judge "
        "(scores are stored as judge=heuristic)."
    )
    return "heuristic"


def judge_prepared(
    prepared: Prepared,
    kind: JudgeKind,
    *,
    model: str | None = None,
    rubric: Rubric | None = None,
    client: Any = None,
    effort: str | None = None,
    fallback_model: str | None = None,
) -> Scorecard:
    """Run the judge of this kind on a prepared session; the card carries the session's
    description, its redacted rendered timeline (for the store and the viewer) and any
    input problems (lines skipped or decoded with replacements) in `meta`."""
    judge = make_judge(
        kind, model=model, rubric=rubric, client=client, effort=effort,
        fallback_model=fallback_model,
    )  # fmt: skip
    return attach_session(judge.judge(prepared), prepared)


def attach_session(card: Scorecard, prepared: Prepared) -> Scorecard:
    """Stamp the session's metadata, input warnings and its redacted rendered timeline.

    Every judge path (score-session, backfill, Message Batches) calls this on its card.
    """
    warnings = prepared.session.extra.get("warnings")
    if warnings:  # lines of the input that were skipped or decoded with replacements
        card.meta.setdefault("input_warnings", list(warnings))
    card.describe(SessionInfo.of(prepared.session, n_events=len(prepared.events)))
    card.attach_timeline([TimelineEvent(*e) for e in prepared.events])
    return card


def judge_and_store(
    prepared: Prepared,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    store: bool = True,
    client: Any = None,
    effort: str | None = None,
    fallback_model: str | None = None,
) -> Scorecard:
    """Judge a prepared session, stamp provenance, and publish it to the local store.

    Raises:
        SinkError: The store cannot be written; checked before the judge is called, so
            no paid call is made for a card that could not be kept.
    """
    kind = choose_judge(judge)
    if store:
        from scorer.sinks.writable import check_writable

        check_writable()
    report_stage("judge")
    card = judge_prepared(
        prepared, kind, model=model, client=client, effort=effort,
        fallback_model=fallback_model,
    )  # fmt: skip
    card.meta.setdefault("redactions", prepared.redactions.total)
    if prepared.session.origin:
        card.meta.setdefault("origin", prepared.session.origin)
    if store:
        from scorer.sinks.base import publish
        from scorer.sinks.store import ScoreStore

        report_stage("store")
        with ScoreStore() as db:
            publish(card, [db])
    return card


def score_session(
    source: SessionSource,
    *,
    judge: JudgeChoice = "auto",
    model: str | None = None,
    task: str | None = None,
    budget: int | None = None,
    overlap: int | None = None,
    store: bool = True,
    client: Any = None,
    effort: str | None = None,
    fallback_model: str | None = None,
    on_stage: StageListener | None = None,
) -> tuple[Prepared, Scorecard]:
    """Score one session: load, redact, render, chunk, judge, and save it locally.

    This is the library's entry point (`from scorer import score_session`) and what
    `score-session` runs. Pushing to Langfuse is a separate step: `sinks.base.publish`
    with a `LangfuseSink`.

    Example:
        >>> from scorer import score_session
        >>> from scorer.sources import resolve
        >>> prepared, card = score_session(resolve("session.jsonl"), judge="heuristic")
        >>> card.overall, card.scores["goal_achievement"].label

    Args:
        source: Where the session comes from (`scorer.sources.resolve(arg)` builds one).
        judge: `"llm"`, `"heuristic"`, or `"auto"` (the LLM when an Anthropic key is set).
        model: The LLM judge's model (default `SCORER_MODEL`, `claude-sonnet-5-5`).
        task: The task statement, used when the session has none.
        budget: Chunk token budget (default `SCORER_CHUNK_BUDGET`).
        overlap: Events repeated between chunks (default `SCORER_CHUNK_OVERLAP`).
        store: Save the card to the local SQLite store (`$SCORER_HOME/scores.sqlite3`).
        client: An `anthropic.Anthropic` client for the LLM judge (default: from settings).
        effort: The LLM judge's `output_config.effort` (default `SCORER_EFFORT`, medium).
        fallback_model: Where a refused request is retried (default
            `SCORER_FALLBACK_MODEL`, claude-sonnet-4-6).
        on_stage: Called with each `scorer.stages.Stage` reached: `fetch`, `prepare`,
            `judge`, then for a chunked session `chunk i/n` and `final`, and `store`.

    Returns:
        The prepared (redacted, chunked) session and its scorecard. A session the judge
        cannot score (invalid output twice, refused by the fallback too, too long) is an
        unscored card with its reason, not an exception.

    Raises:
        SourceError: The session cannot be read.
        CredentialsError: The judge's key is missing or rejected.
        JudgeError: The judge API failed after retries (429/529/5xx/network) or rejected
            the request.
    """
    with watch_stages(on_stage):
        report_stage("fetch")
        session = source.load()
        if task and not session.task:
            session.task = task
        report_stage("prepare")
        prepared = prepare(session, budget=budget, overlap=overlap)
        card = judge_and_store(
            prepared, judge=judge, model=model, store=store, client=client, effort=effort,
            fallback_model=fallback_model,
        )  # fmt: skip
    return prepared, card
