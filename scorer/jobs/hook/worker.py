"""The background job of `scorer hook`: score one ended session once, within the policy.

    locate the transcript → (Stop: wait out the debounce) → load → fingerprint its work →
    claim in the ledger → big enough? → LLM cost within today's cap? → judge → publish to the
    store (+ Langfuse) → close the claim (and go again if a newer transcript came in)

Everything here reports through the `scorer.hook` logger and returns an `Outcome`; it
never raises for a session it cannot score (a bad transcript, a judge failure): the
caller is a detached process with nobody to show a traceback to. When the store itself
is the trouble (locked past SQLite's wait, broken), the job goes to the retry folder
(`retry.RetryQueue`), with its card if it was judged, for the next hook run to finish.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from scorer.errors import CredentialsError, EmptySessionError, ScorerError, SinkError, SourceError
from scorer.jobs.hook.ledger import HookLedger, State
from scorer.jobs.hook.policy import HookPolicy, count_tool_calls
from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.retry import MAX_ATTEMPTS, Deferred, RetryQueue, retry_dir

if TYPE_CHECKING:
    from scorer.live.final_state import FinalStateOptions
    from scorer.models import Scorecard, Session
    from scorer.prepare import Prepared
    from scorer.settings import Settings

log = logging.getLogger("scorer.hook")

OutcomeState = Literal[
    "scored", "unscored", "skipped", "capped", "failed", "refused", "busy", "unchanged",
    "superseded",
]  # fmt: skip


@dataclass(frozen=True)
class HookEnv:
    """What the job needs from the settings, resolved once where it starts."""

    store_path: Path
    projects_root: Path
    anthropic_configured: bool
    langfuse_configured: bool
    model: str
    effort: str | None = None
    fallback_model: str | None = None
    claude_found: bool = False
    """`claude` (or `SCORER_CLAUDE_BIN`) is there: the LLM judge can run on its login."""
    final_state: FinalStateOptions | None = None
    """Read the workspace's final state (`SCORER_FINAL_STATE`); None: not read."""

    @property
    def retries(self) -> RetryQueue:
        """Jobs the store could not take, beside the store."""
        return RetryQueue(retry_dir(self.store_path))

    @classmethod
    def from_settings(cls, s: Settings) -> HookEnv:
        from scorer.judge.claude_code import find_claude
        from scorer.live.final_state import FinalStateOptions

        return cls(
            store_path=s.store_path,
            projects_root=s.claude_projects,
            anthropic_configured=s.anthropic_configured,
            claude_found=find_claude(s.claude_bin) is not None,
            langfuse_configured=s.langfuse_configured,
            model=s.model,
            effort=s.effort,
            fallback_model=s.fallback_model or None,
            final_state=FinalStateOptions.from_settings(s),
        )


@dataclass
class Outcome:
    """What one job did."""

    state: OutcomeState
    reason: str = ""
    session_id: str | None = None
    card: Scorecard | None = None
    pushed: list[str] = field(default_factory=list)
    """Where the card went besides the store (Langfuse URLs)."""
    push_error: str | None = None
    deferred: bool = False
    """The store could not take it: it waits in the retry folder for the next hook run."""


def fingerprint(transcript: Path) -> str:
    """A hash of the transcript and its subagent files: what makes a session "unchanged".

    Raises:
        SourceError: The transcript cannot be read.
    """
    digest = hashlib.sha256()
    files = [
        transcript,
        *sorted((transcript.parent / transcript.stem / "subagents").glob("*.jsonl")),
    ]
    for path in files:
        try:
            with path.open("rb") as handle:
                digest.update(path.name.encode() + b"\0")
                digest.update(hashlib.file_digest(handle, "sha256").digest())
        except OSError as exc:
            if path == transcript:
                raise SourceError(f"cannot read {transcript}: {exc.strerror or exc}") from exc
    return digest.hexdigest()[:32]


def locate(request: HookRequest, projects_root: Path) -> Path:
    """The transcript file of a request (given, or found by session id).

    Raises:
        SourceError: It does not exist, is not a regular file, or the id is unknown.
    """
    if request.transcript is not None:
        path = request.transcript
        if not path.exists():
            raise SourceError(f"transcript not found: {path}")
        if not path.is_file():
            raise SourceError(f"transcript is not a regular file: {path}")
        return path
    from scorer.sources import find_session

    assert request.session_id  # a request has a transcript or a session id
    return find_session(request.session_id, projects_root)


Route = Literal["llm", "claude-code", "heuristic"]


def judge_route(policy: HookPolicy, env: HookEnv) -> Route:
    """`SCORER_HOOK_JUDGE`; `auto` is the API judge when a key is set, else the same judge
    through the user's Claude Code login when `claude` is found, else the heuristic."""
    if policy.judge != "auto":
        return policy.judge
    if env.anthropic_configured:
        return "llm"
    return "claude-code" if env.claude_found else "heuristic"


class HookJob:
    """One request, run to an `Outcome` (see the module docstring).

    Args:
        request: The session and the event.
        policy: The team's policy.
        env: Paths and keys from the settings.
        enforce: Apply the policy (kill switch, events, projects, size, cost cap); False
            for an explicit request (`/score`, `--now`).
        rescore: Judge even an unchanged transcript.
        sleep: Waits of the Stop debounce (tests replace it).
        deferred: The retry this job is (`retry.Deferred`): its tries so far, and the card
            an earlier try judged but could not store, stored now if the work is the same.
    """

    def __init__(
        self,
        request: HookRequest,
        policy: HookPolicy,
        env: HookEnv,
        *,
        enforce: bool = True,
        rescore: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        deferred: Deferred | None = None,
    ) -> None:
        self.request, self.policy, self.env = request, policy, env
        self.enforce, self.rescore, self.sleep = enforce, rescore, sleep
        self.deferred = deferred
        self.fingerprint: str | None = None
        """The work being judged (set once it is known)."""
        self.judged: Scorecard | None = None
        """The card, once judged (kept for a retry if the store cannot take it)."""
        self.route: Route = judge_route(policy, env)
        self.kind: Literal["llm", "heuristic"] = "heuristic" if self.route == "heuristic" else "llm"
        self.model = env.model if self.kind == "llm" else None

    def run(self) -> Outcome:
        """Do the job; every failure becomes a logged `Outcome`, never an exception."""
        try:
            outcome = self._run()
        except SinkError as exc:  # the store is locked or broken: the next hook run retries
            outcome = self._defer(exc)
        except ScorerError as exc:  # before any claim: the transcript is missing, say
            outcome = Outcome("failed", str(exc), self.request.session_id)
        _log_outcome(self.request, outcome)
        return outcome

    def _defer(self, exc: SinkError) -> Outcome:
        """Keep the job (and its card, if judged) in the retry folder; one log line."""
        card = self.judged.model_dump(mode="json") if self.judged is not None else None
        job = Deferred.of(
            self.request, enforce=self.enforce, why=str(exc), card=card,
            fingerprint=self.fingerprint if card else None,
            attempts=self.deferred.attempts + 1 if self.deferred else 1,
        )  # fmt: skip
        who = self.request.session_id
        if job.attempts > MAX_ATTEMPTS:
            return Outcome("failed", f"{exc}; given up after {MAX_ATTEMPTS} retries", who)
        try:
            self.env.retries.add(job)
        except OSError as err:
            return Outcome("failed", f"{exc}; and it cannot be kept for a retry: {err}", who)
        kept = " (the judged card is kept)" if card else ""
        reason = f"{exc}; the next hook run retries it{kept}"
        return Outcome("failed", reason, who, deferred=True)

    def _run(self) -> Outcome:
        request = self.request
        refusal = self.policy.refuse(request) if self.enforce else None
        if refusal:
            return Outcome("refused", refusal, request.session_id)
        path = locate(request, self.env.projects_root)
        session = None
        session_id = request.session_id
        if session_id is None:  # an orchestrator gave only the transcript
            session = self._load(path, None)
            session_id = session.session_id
        with HookLedger(self.env.store_path) as ledger:
            seq = ledger.trigger(session_id, request.event)
            debounce = request.event == "Stop" and self.deferred is None
            if debounce and self._superseded(ledger, session_id, seq):
                return Outcome("superseded", "a later hook call for this session took over")
            while True:
                outcome, again = self._claim_and_score(ledger, session_id, path, session)
                if not again:
                    return outcome
                session = None  # the transcript grew: read it again

    def _superseded(self, ledger: HookLedger, session_id: str, seq: int) -> bool:
        """Wait out the Stop debounce; True when another hook call came meanwhile."""
        waited = 0.0
        while waited < self.policy.stop_debounce:
            step = min(2.0, self.policy.stop_debounce - waited)
            self.sleep(step)
            waited += step
            if ledger.latest_trigger(session_id) != seq:
                return True
        return False

    @property
    def identity(self) -> str:
        """What makes two scores of a session comparable: judge, model and rubric."""
        from scorer.judge.rubric import default_rubric

        rubric = default_rubric()
        return f"{self.kind}|{self.model or '-'}|{rubric.version}|{rubric.hash}"

    def _claim_and_score(
        self, ledger: HookLedger, session_id: str, path: Path, session: Session | None
    ) -> tuple[Outcome, bool]:
        """Claim, score, close the claim. True second: score again (the transcript grew).

        What was judged is the session's work (`work_fingerprint`), not the file's bytes:
        Claude Code's bookkeeping and our own `/score` output never make it judged again.
        A transcript that cannot be read is claimed under its bytes' hash, so it is not
        retried until the file changes.
        """
        from scorer.prepare.own_output import work_fingerprint

        identity = self.identity
        unreadable: ScorerError | None = None
        try:
            session = session or self._load(path, session_id)
            fp = work_fingerprint(session)
        except (SourceError, EmptySessionError) as exc:
            unreadable, fp = exc, "bytes:" + fingerprint(path)
        self.fingerprint = fp
        claim = ledger.claim(
            session_id, identity, fp, trigger=self.request.event, transcript=str(path),
            force=self.rescore, explicit=not self.enforce,
        )  # fmt: skip
        if not claim.granted:
            state: OutcomeState = "busy" if claim.previous == "running" else "unchanged"
            return Outcome(state, claim.reason, session_id), False
        log.info("%s: scoring %s (%s)", session_id, path, claim.reason)

        def close(state: State, reason: str | None, **kw: Any) -> str | None:
            return ledger.finish(
                session_id, identity, state, reason=reason, automatic=self.enforce, **kw
            )

        try:
            if unreadable is not None:
                raise unreadable
            outcome = self._leased(ledger, identity, session_id, path, session)
        except SinkError:  # the store: `run` keeps the job (and the card) for a retry, and
            raise  # the claim left running is taken over then (its process is gone)
        except EmptySessionError as exc:  # opened and closed without a prompt: nothing to do
            close("skipped", str(exc))
            return Outcome("skipped", str(exc), session_id), False
        except ScorerError as exc:
            retry = not isinstance(exc, SourceError)  # the same bytes fail the same way
            close("failed", str(exc), retry=retry, cost_usd=exc.spent_usd)
            return Outcome("failed", str(exc), session_id), False
        except Exception as exc:  # a bug: keep the traceback in the log
            log.exception("%s: unexpected failure", session_id)
            close("failed", f"{type(exc).__name__}: {exc}", retry=True)
            return Outcome("failed", f"{type(exc).__name__}: {exc}", session_id), False
        except BaseException:
            close("failed", "interrupted", retry=True)
            raise
        cost = outcome.card.cost_usd if outcome.card is not None else 0.0
        newer = close(
            "skipped" if outcome.state == "busy" else cast(State, outcome.state),
            outcome.reason or None,
            retry=outcome.state == "capped",
            cost_usd=cost,
        )
        if newer is not None:
            log.info("%s: the transcript grew while it was judged; scoring it again", session_id)
            return outcome, True
        return outcome, False

    def _leased(
        self,
        ledger: HookLedger,
        identity: str,
        session_id: str,
        path: Path,
        session: Session | None,
    ) -> Outcome:
        """`_score` under the session's lease in the store (`jobs.session_leases`): a
        backfill or calibration of the same store that is scoring the session keeps it,
        and this job skips it ("being scored by process N") instead of paying again."""
        from scorer.jobs.session_leases import SessionLeases

        with SessionLeases(self.env.store_path, "scorer hook") as leases:
            holder = leases.take(session_id)
            if holder is not None:
                return Outcome("busy", holder.text(), session_id)
            return self._score(ledger, identity, session_id, path, session)

    def _load(self, path: Path, session_id: str | None) -> Session:
        from scorer.sources import resolve_file

        session = resolve_file(str(path)).load()
        if session_id and session.session_id != session_id:
            session.extra["transcript_session_id"] = session.session_id
            session.session_id = session_id
        return session

    def _score(
        self,
        ledger: HookLedger,
        identity: str,
        session_id: str,
        path: Path,
        session: Session | None,
    ) -> Outcome:
        from scorer.jobs.setup import run_settings
        from scorer.live.final_state import add_final_state
        from scorer.prepare import PrepOptions

        kept = self.deferred.card if self.deferred else None
        if kept is not None and self.deferred and self.deferred.fingerprint == self.fingerprint:
            from scorer.models import Scorecard

            return self._publish(Scorecard.model_validate(kept))  # judged before: store it
        session = session or self._load(path, session_id)
        session.session_id = session_id
        if self.enforce:
            why = self.policy.refuse_project(session.cwd) or self.policy.too_small(
                count_tool_calls(session.events)
            )
            if why:
                return Outcome("skipped", why, session_id)
        session = add_final_state(session, self.env.final_state)  # after the work's fingerprint
        prepared = PrepOptions.from_settings(run_settings()).run(session)
        if self.kind == "llm" and self.enforce:
            estimate = self._estimate(prepared)
            ok, spent = ledger.reserve(session_id, identity, estimate, self.policy.daily_cost_cap)
            if not ok:
                why = self.policy.over_cap(spent, estimate) or "over the daily cost cap"
                return Outcome("capped", why, session_id)
        return self._judge_and_publish(prepared)

    def _estimate(self, prepared: Prepared) -> float:
        from scorer.jobs.estimate import estimate_prepared
        from scorer.jobs.setup import run_settings
        from scorer.judge.anthropic import AnthropicJudge
        from scorer.judge.config import JudgeConfig

        config = JudgeConfig.from_settings(
            run_settings(), model=self.env.model, effort=self.env.effort
        )
        judge = AnthropicJudge(None, config, verify_tokens=False)
        return estimate_prepared(prepared, judge, exact=False).cost_usd

    def _judge_and_publish(self, prepared: Prepared) -> Outcome:
        from scorer.jobs.score import judge_from_settings
        from scorer.jobs.setup import run_settings
        from scorer.jobs.step import judge_session

        judge = judge_from_settings(
            self.route, run_settings(), model=self.model, effort=self.env.effort,
            fallback_model=self.env.fallback_model, sdk=False,
        )  # fmt: skip
        try:
            card = judge_session(prepared, judge).card  # the daily cap is the ledger's, above
        except CredentialsError as exc:
            if self.route != "claude-code" or self.policy.judge == "claude-code":
                raise
            log.warning("%s: %s; scored by the heuristic judge instead", self.request.label(), exc)
            card = judge_session(prepared, judge_from_settings("heuristic", run_settings())).card
        assert card is not None
        card.meta["trigger"] = self.request.event
        self.judged = card
        return self._publish(card)

    def _publish(self, card: Scorecard) -> Outcome:
        """The card to the store (+ Langfuse); a store failure raises `SinkError`."""
        from scorer.sinks.base import ScoreSink, publish
        from scorer.sinks.store import ScoreStore

        self.judged = card
        with ScoreStore(self.env.store_path) as store:
            sinks: list[ScoreSink] = [store]
            if card.status == "scored" and self.policy.push and self.env.langfuse_configured:
                from scorer.sinks.langfuse import LangfuseSink

                sinks.append(LangfuseSink(target="session"))
            done = publish(card, sinks, store=store)
        outcome = Outcome(card.status, card.unscored_reason or "", card.session_id, card)
        outcome.pushed = [loc for loc in done.locations if loc != str(self.env.store_path)]
        if not done.ok:
            outcome.push_error = done.problem()
        return outcome


def _log_outcome(request: HookRequest, outcome: Outcome) -> None:
    """One line per job in the hook log."""
    who = outcome.session_id or request.label()
    card = outcome.card
    if card is not None and outcome.state == "scored":
        where = "; Langfuse: " + ", ".join(outcome.pushed) if outcome.pushed else ""
        log.info(
            "%s: scored by %s%s: overall %.2f, $%.4f%s",
            who, card.judge, f" ({card.model})" if card.model else "", card.overall or 0.0,
            card.cost_usd, where,
        )  # fmt: skip
        if outcome.push_error:
            log.warning(
                "%s: %s; the card is in the store, `scorer scores push` sends it later",
                who, outcome.push_error,
            )  # fmt: skip
    elif outcome.state == "unscored" or (
        outcome.state == "failed" and not _routine(request, outcome)
    ):
        log.warning("%s: %s: %s", who, outcome.state, outcome.reason)
    else:
        log.info("%s: %s: %s", who, outcome.state, outcome.reason)


def _routine(request: HookRequest, outcome: Outcome) -> bool:
    """A session that ended before Claude Code wrote a transcript (opened and closed)."""
    return request.automatic and outcome.reason.startswith("transcript not found")
