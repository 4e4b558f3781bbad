"""Score one session end to end: load → prepare → the judging step → publish.

This is the library's entry point (`from scorer import score_session`) and what
`score-session` runs. The settings are read here, once, and handed down: the judge gets
a `JudgeConfig` and a client, `prepare` gets its chunking options.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, NamedTuple

from scorer.errors import CredentialsError
from scorer.jobs.setup import run_settings
from scorer.jobs.step import judge_session
from scorer.judge.base import Judge, make_judge
from scorer.judge.claude_code import find_claude
from scorer.judge.config import JudgeConfig
from scorer.live.final_state import FinalStateOptions, add_final_state
from scorer.prepare import Prepared, prepare
from scorer.prepare.prepared import PrepOptions
from scorer.settings import Settings, get_settings
from scorer.sinks.base import Published, ScoreSink, publish
from scorer.stages import StageListener, report_stage, watch_stages

if TYPE_CHECKING:
    from scorer.judge.sdk import anthropic
    from scorer.models import Scorecard
    from scorer.sources.base import SessionSource

__all__ = [
    "JudgeChoice",
    "JudgeRoute",
    "ScoreResult",
    "choose_judge",
    "claude_code_judge",
    "final_state_options",
    "judge_from_settings",
    "judge_prepared",
    "prepare",
    "score_session",
]

JudgeChoice = Literal["auto", "llm", "claude-code", "heuristic"]
"""What a command may ask for: `llm` is the Sonnet judge through the Messages API,
`claude-code` the same judge through the user's own `claude -p` login."""
JudgeRoute = Literal["llm", "claude-code", "heuristic"]
"""A resolved choice (`auto` decided)."""

log = logging.getLogger(__name__)


def choose_judge(
    choice: JudgeChoice, settings: Settings | None = None, *, prefer_claude_code: bool = False
) -> JudgeRoute:
    """`auto` means the LLM judge when a key is set, else the heuristic (announced).

    Args:
        prefer_claude_code: Without a key, `auto` judges through Claude Code when `claude`
            is found (the plugin's hook: the user is running Claude Code anyway).
    """
    if choice != "auto":
        return choice
    settings = settings or get_settings()
    if settings.anthropic_configured:
        return "llm"
    claude = find_claude(settings.claude_bin)
    if prefer_claude_code and claude:
        return "claude-code"
    also = " or --judge claude-code to judge with your Claude Code login" if claude else ""
    log.info(  # the CLI shows it as a note (not with -q)
        "ANTHROPIC_API_KEY is not set: using the offline heuristic judge "
        f"(scores are stored as judge=heuristic); set it{also} for the LLM judge."
    )
    return "heuristic"


def judge_kind(route: JudgeRoute) -> Literal["llm", "heuristic"]:
    """The card's `judge` of a route: Claude Code is the LLM judge on another transport."""
    return "heuristic" if route == "heuristic" else "llm"


def judge_from_settings(
    choice: JudgeChoice,
    settings: Settings,
    *,
    model: str | None = None,
    effort: str | None = None,
    fallback_model: str | None = None,
    client: anthropic.Anthropic | None = None,
    prefer_claude_code: bool = False,
    second_opinions: bool | None = None,
    sdk: bool = True,
) -> Judge:
    """The judge a command asked for: its options over the settings, with a client.

    `sdk=False` sends the LLM judge's requests over plain HTTP (`judge.http_transport`)
    instead of the SDK's client, which costs about 3 s of CPU to import: what a hook's
    worker, judging one session, does.

    Raises:
        CredentialsError: The LLM judge was asked for and no key is set, or Claude Code
            was asked for and `claude` is not found.
        ConfigError: A bad effort (or price table).
    """
    route = choose_judge(choice, settings, prefer_claude_code=prefer_claude_code)
    if route == "heuristic":
        return make_judge("heuristic", JudgeConfig.from_settings(settings))
    config = JudgeConfig.from_settings(
        settings, model=model, effort=effort, fallback_model=fallback_model,
        second_opinions=second_opinions,
    )  # fmt: skip
    if route == "claude-code":
        return claude_code_judge(config, settings)
    if client is None and not sdk:
        from scorer.judge.anthropic import AnthropicJudge
        from scorer.judge.http_transport import MessagesTransport

        return AnthropicJudge(None, config, transport=MessagesTransport.from_settings(settings))
    if client is None:
        from scorer.judge.client import make_client

        client = make_client(settings)
    return make_judge("llm", config, client=client)


def claude_code_judge(config: JudgeConfig, settings: Settings, *, concurrency: int = 2) -> Judge:
    """The LLM judge sending its requests through `claude -p` (the user's own login).

    Args:
        concurrency: Chunk-notes calls of one session at once (each is a `claude` process).

    Raises:
        CredentialsError: `claude` is not found.
    """
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.claude_code import ClaudeCodeTransport

    binary = find_claude(settings.claude_bin)
    if binary is None:
        where = settings.claude_bin or "on PATH"
        raise CredentialsError(
            f"Claude Code (`claude`) was not found ({where}): install it, set "
            "SCORER_CLAUDE_BIN, or use --judge llm with ANTHROPIC_API_KEY"
        )
    transport = ClaudeCodeTransport(binary, timeout=settings.claude_timeout)
    return AnthropicJudge(None, config, transport=transport, max_concurrency=concurrency)


def judge_prepared(prepared: Prepared, choice: JudgeChoice = "auto") -> Scorecard:
    """The finished card of a prepared session (the judging step, no store, no cap).

    Args:
        prepared: The redacted, chunked session (`prepare`).
        choice: `"llm"`, `"heuristic"` or `"auto"`, with the settings' model and effort.
    """
    judge = judge_from_settings(choice, run_settings())
    card = judge_session(prepared, judge).card
    assert card is not None  # no cost cap: always started
    return card


class ScoreResult(NamedTuple):
    """What `score_session` did."""

    prepared: Prepared
    """The redacted, chunked session."""
    card: Scorecard
    """Its scorecard (scored, or unscored with the reason)."""
    published: Published
    """What the sinks took (and why a remote one did not)."""


def score_session(
    source: SessionSource,
    *,
    judge: JudgeChoice | Judge = "auto",
    model: str | None = None,
    effort: str | None = None,
    fallback_model: str | None = None,
    second_opinions: bool | None = None,
    final_state: FinalStateOptions | bool | None = None,
    task: str | None = None,
    budget: int | None = None,
    overlap: int | None = None,
    sinks: Sequence[ScoreSink] | None = None,
    client: anthropic.Anthropic | None = None,
    on_stage: StageListener | None = None,
) -> ScoreResult:
    """Score one session: load, redact, render, chunk, judge, and publish the card.

    Example:
        >>> from scorer import resolve, score_session
        >>> result = score_session(resolve("session.jsonl"), judge="heuristic", sinks=[])
        >>> result.card.overall, result.card.scores["goal_achievement"].label

    Args:
        source: Where the session comes from (`scorer.resolve(arg)` builds one).
        judge: `"llm"`, `"claude-code"` (the same judge through your `claude -p` login),
            `"heuristic"`, `"auto"` (the LLM when an Anthropic key is set), or a judge you
            built (`make_judge`).
        model: The LLM judge's model (default `SCORER_MODEL`, `claude-sonnet-5-5`).
        effort: The LLM judge's `output_config.effort` (default `SCORER_EFFORT`, medium).
        fallback_model: Where a refused request is retried (default
            `SCORER_FALLBACK_MODEL`, claude-sonnet-4-6; "" for none).
        second_opinions: Ask the LLM judge twice more when its first verdict's goal
            probability is uncertain (default `SCORER_SECOND_OPINIONS`, on).
        final_state: Add the workspace's final state when the session's repository is
            here (`scorer.live.final_state`): True/False, or options; None means
            `SCORER_FINAL_STATE` (on).
        task: The task statement, used when the session has none.
        budget: Chunk token budget (default `SCORER_CHUNK_BUDGET`).
        overlap: Events repeated between chunks (default `SCORER_CHUNK_OVERLAP`).
        sinks: Where the card goes, published once (`sinks.base.publish`): local ones
            first, remote ones (a `LangfuseSink`) only for a scored card. None means the
            local store (`$SCORER_HOME/scores.sqlite3`); `[]` publishes nowhere.
        client: An `anthropic.Anthropic` for the LLM judge (default: from the settings).
        on_stage: Called with each `scorer.stages.Stage` reached: `fetch`, `prepare`,
            `judge`, then for a chunked session `chunk i/n` and `final`, and `store`.

    Returns:
        The prepared session, its card and what the sinks took. A session the judge
        cannot score (invalid output twice, refused by the fallback too, too long) is an
        unscored card with its reason, not an exception.

    Raises:
        SourceError: The session cannot be read.
        CredentialsError: The judge's key is missing or rejected.
        JudgeError: The judge API failed after retries (429/529/5xx/network) or rejected
            the request.
        SinkError: A local store could not be written (checked before the judge runs).
    """
    settings = run_settings()
    with watch_stages(on_stage):
        report_stage("fetch")
        session = source.load()
        if task and not session.task:
            session.task = task
        session = add_final_state(session, final_state_options(final_state, settings))
        report_stage("prepare")
        prepared = PrepOptions.from_settings(settings, budget=budget, overlap=overlap).run(session)
        if isinstance(judge, str):  # after the load: a bad file is reported first
            judge = judge_from_settings(
                judge, settings, model=model, effort=effort, fallback_model=fallback_model,
                client=client, second_opinions=second_opinions,
            )  # fmt: skip
        _check_stores(sinks, settings)  # before a paid call, not after it
        report_stage("judge")
        card = judge_session(prepared, judge).card
        assert card is not None  # no cost cap: always started
        published = _publish(card, sinks)
    return ScoreResult(prepared, card, published)


def final_state_options(
    choice: FinalStateOptions | bool | None, settings: Settings
) -> FinalStateOptions:
    """A command's `--final-state/--no-final-state` (or a caller's options) over the
    settings' `SCORER_FINAL_STATE`."""
    if isinstance(choice, FinalStateOptions):
        return choice
    return FinalStateOptions.from_settings(settings, enabled=choice)


def _check_stores(sinks: Sequence[ScoreSink] | None, settings: Settings) -> None:
    """`SinkError` now when a store the card goes to could not be written."""
    from scorer.sinks.store import ScoreStore
    from scorer.sinks.writable import check_writable

    if sinks is None:
        check_writable(settings.store_path)
    for sink in sinks or []:
        if isinstance(sink, ScoreStore):
            check_writable(sink.path)


def _publish(card: Scorecard, sinks: Sequence[ScoreSink] | None) -> Published:
    if sinks is None:
        from scorer.sinks.store import ScoreStore

        report_stage("store")
        with ScoreStore() as store:
            return publish(card, [store])
    if card.status != "scored":  # an unscored card is kept locally, never pushed
        sinks = [s for s in sinks if not s.remote]
    if not sinks:
        return Published()
    report_stage("store")
    return publish(card, sinks)
