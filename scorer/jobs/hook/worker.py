"""The background job of `scorer hook`: score one ended session once, within the policy.

    locate the transcript → (Stop: wait out the debounce) → load → fingerprint its work →
    claim in the ledger → big enough? → LLM cost within today's cap? → judge → publish to the
    store (+ Langfuse) → close the claim (and go again if a newer transcript came in)

In batch mode (`SCORER_HOOK_MODE=batch`, API key set) the claim ends `queued` instead, and
a round of the queue follows (`jobs.hook.batch`: collect ended batches, send a due queue).

Everything here reports through the `scorer.hook` logger and returns an `Outcome`; it
never raises for a session it cannot score (a bad transcript, a judge failure): the
caller is a detached process with nobody to show a traceback to. When the store itself
is the trouble (locked past SQLite's wait, broken), the job goes to the retry folder
(`retry.RetryQueue`), with its card if it was judged, for the next hook run to finish.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from scorer.errors import CredentialsError, EmptySessionError, ScorerError, SinkError, SourceError
from scorer.jobs.hook.job_parts import fingerprint, locate, log_outcome
from scorer.jobs.hook.ledger import HookLedger, State
from scorer.jobs.hook.outcome import Outcome, OutcomeState
from scorer.jobs.hook.policy import HookPolicy, count_tool_calls
from scorer.jobs.hook.request import HookRequest
from scorer.jobs.hook.retry import MAX_ATTEMPTS, Deferred, RetryQueue, retry_dir

if TYPE_CHECKING:
    from scorer.jobs.hook.batch import HookBatches
    from scorer.live.final_state import FinalStateOptions
    from scorer.models import Scorecard, Session
    from scorer.prepare import Prepared
    from scorer.settings import Settings

log = logging.getLogger("scorer.hook")


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


Route = Literal["llm", "claude-code", "heuristic"]
_REFUSED: dict[str, OutcomeState] = {
    "running": "busy",
    "queued": "queued",
    "submitted": "submitted",
}
"""The outcome of a claim refused because of the row's state (else `unchanged`)."""


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
        # Queue for Message Batches: an API feature, so only with a key.
        self.batch_mode = policy.mode == "batch" and self.route == "llm"
        self.batch_mode = self.batch_mode and env.anthropic_configured

    def run(self) -> Outcome:
        """Do the job; every failure becomes a logged `Outcome`, never an exception.

        A round of the Message Batches queue follows an automatic job, and precedes an
        explicit one (so that `/score` shows a card that came in meanwhile).
        """
        if not self.enforce:
            self._batch_round(send=False)
        elif self.policy.mode == "batch" and not self.batch_mode:
            log.info(
                "%s: SCORER_HOOK_MODE=batch needs ANTHROPIC_API_KEY (Message Batches are "
                "an API feature): judged directly by the %s judge", self.request.label(),
                self.route,
            )  # fmt: skip
        try:
            outcome = self._run()
        except SinkError as exc:  # the store is locked or broken: the next hook run retries
            outcome = self._defer(exc)
        except ScorerError as exc:  # before any claim: the transcript is missing, say
            outcome = Outcome("failed", str(exc), self.request.session_id)
        log_outcome(self.request, outcome)
        if self.enforce:
            self._batch_round()
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

    def _batch_round(self, *, send: bool = True) -> None:
        """Collect ended batches and send a due queue, when batch mode is on or sessions
        still wait from it (`/score` waits for another process's round briefly)."""
        from scorer.jobs.hook.batch import LOCK_WAIT

        def go(batches: HookBatches) -> None:
            if self.batch_mode or batches.waiting() != (0, 0):
                batches.round(send=send, wait=LOCK_WAIT if self.enforce else 10.0)

        if self.env.anthropic_configured:
            self._with_batches(go)

    def linger(self) -> None:
        """Batch mode: keep the queue's time (`HookBatches.keep_time`)."""
        if self.batch_mode and self.enforce:
            self._with_batches(lambda batches: batches.keep_time())

    def _with_batches(self, use: Callable[[HookBatches], None]) -> None:
        """Run `use` on the queue; a failure is logged (the next round tries again)."""
        from scorer.jobs.hook.batch import HookBatches

        try:
            use(HookBatches(self.policy, self.env))
        except ScorerError as exc:
            log.warning("Message Batches: %s; the next hook tries again", exc)
        except Exception as exc:  # a bug: keep the traceback in the log
            log.exception("Message Batches: unexpected failure: %s", exc)

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
            state = _REFUSED.get(claim.previous or "", "unchanged")
            return Outcome(state, claim.reason, session_id), False
        verb = "queueing" if self.batch_mode and self.enforce else "scoring"
        log.info("%s: %s %s (%s)", session_id, verb, path, claim.reason)

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
            if self.batch_mode:  # judged with the queue's next Message Batch
                return Outcome("queued", "waiting for a Message Batch", session_id)
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
