"""One judge identity's Message Batches for the hook: the backfill's `BatchRun`, one round
at a time, on a backfill ledger of its own (run key: `hook: batch` and the identity).

Nothing here is a second batch client: the requests, the intents before `create`, the
adoption after a kill, the polling, the repairs and the second opinions are
`jobs.batches` and `jobs.batch_intents`, with the same judge the direct hook builds.

The workspace's final state (`live.final_state`) is read when a session is sent and kept
beside its copy (`final_state.json`): the collection, maybe hours later, prepares the
same events the judge saw, not the workspace as it is by then.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from scorer.jobs.discovery import SessionRef
from scorer.jobs.step import JudgingStep

if TYPE_CHECKING:
    from scorer.jobs.run_state import SessionResult
    from scorer.judge.anthropic import AnthropicJudge
    from scorer.live.final_state import FinalStateOptions
    from scorer.models import Scorecard, Session
    from scorer.prepare import Prepared


class BatchEnv(Protocol):
    """What the batch mode needs of the hook's `HookEnv`."""

    @property
    def store_path(self) -> Path: ...
    @property
    def langfuse_configured(self) -> bool: ...
    @property
    def effort(self) -> str | None: ...
    @property
    def fallback_model(self) -> str | None: ...
    @property
    def final_state(self) -> FinalStateOptions | None: ...


FINAL_STATE = "final_state.json"
"""Beside a sent session's copy: the final-state events it was sent with."""


def load_as(path: Path, session_id: str | None) -> Session:
    """A transcript loaded under the hook's session id (the file's own is kept in `extra`).

    Raises:
        SourceError: It cannot be read.
        EmptySessionError: It holds no prompt.
    """
    from scorer.sources import resolve_file

    session = resolve_file(str(path)).load()
    if session_id and session.session_id != session_id:
        session.extra["transcript_session_id"] = session.session_id
        session.session_id = session_id
    return session


class _Step(JudgingStep):
    """The judging step's `finish`, also stamping the hook event that queued the session
    (`meta.trigger`, as the direct hook does) and keeping each finished card."""

    def __init__(self) -> None:
        super().__init__()
        self.triggers: dict[str, str] = {}
        self.cards: dict[str, Scorecard] = {}

    def finish(self, prepared: Prepared, card: Scorecard, reserved: float) -> Scorecard:
        card = super().finish(prepared, card, reserved)
        if card.session_id in self.triggers:
            card.meta["trigger"] = self.triggers[card.session_id]
        self.cards[card.session_id] = card
        return card


class HookBatchRun:
    """The batch machinery for the hook's sessions of one judge identity.

    Args:
        identity: The hook ledger's judge identity (`llm|model|rubric version|hash`).
        env: The hook's settings (`HookEnv`).
        push: Push scored cards to Langfuse (when its keys are set).
    """

    def __init__(self, identity: str, env: BatchEnv, push: bool) -> None:
        from scorer.jobs.ledger import Ledger, run_key
        from scorer.jobs.run_state import BackfillOptions, Context, Services
        from scorer.jobs.score import judge_from_settings
        from scorer.jobs.session_leases import SessionLeases
        from scorer.jobs.setup import run_settings
        from scorer.jobs.step import Budget
        from scorer.judge.rubric import default_rubric
        from scorer.prepare import PrepOptions
        from scorer.sinks.base import ScoreSink
        from scorer.sinks.store import ScoreStore

        settings = run_settings()
        self.identity, self.final_state = identity, env.final_state
        self.model = identity.split("|")[1]
        judge = judge_from_settings(
            "llm", settings, model=self.model, effort=env.effort,
            fallback_model=env.fallback_model,
        )  # fmt: skip
        self.judge = cast("AnthropicJudge", judge)
        sinks: list[ScoreSink] = []
        if push and env.langfuse_configured:
            from scorer.sinks.langfuse import LangfuseSink

            sinks.append(LangfuseSink(target="session"))
        params = {"hook": "batch", "identity": identity}
        self.ledger = Ledger(env.store_path, run_key(params), params)
        self.store = ScoreStore(env.store_path)
        self.origins: dict[str, str] = {}
        """Session id → its real transcript (the card's `meta.origin`, not the copy's)."""
        services = Services(self._load, self.judge, self.store, sinks)
        services.batch_judge = self.judge
        services.chunking = PrepOptions.from_settings(settings)
        services.batch_poll = settings.batch_poll_seconds
        services.batch_adopt = settings.batch_adopt_seconds
        opts = BackfillOptions(
            judge="llm", batch_api=True, rescore=True, concurrency=1, model=self.model,
            effort=env.effort, fallback_model=env.fallback_model,
        )  # fmt: skip
        self.ctx = Context(
            opts, services, self.ledger, Budget(), self.model, default_rubric().version
        )
        self.step = self.ctx.step = _Step()
        # One writer per session: a backfill or calibration judging it keeps it. The
        # leases go back when the round ends (`close`): a batch outlives the process.
        self.leases = self.ctx.leases = SessionLeases(env.store_path, "scorer hook")

    def ref(self, row: dict[str, Any], copy: Path) -> SessionRef:
        """The batch ref of a hook ledger row whose transcript was copied to `copy`."""
        sid = row["session_id"]
        self.step.triggers[sid] = row["trigger"]
        self.origins[sid] = row["transcript"]
        return SessionRef(sid, "claude-code", origin=str(copy))

    def _load(self, ref: SessionRef) -> Session:
        """The copy, described as the real transcript (`meta.origin`, the title's path),
        with the final state it was sent with."""
        copy = Path(ref.origin or "")
        session = load_as(copy, ref.session_id)
        session.origin = self.origins.get(ref.session_id, session.origin)
        return _thaw(session, copy.parent / FINAL_STATE)

    def prepare(self, session: Session, copy: Path) -> tuple[Prepared, str]:
        """The session prepared as the batch will send it, with the workspace's final
        state read now and kept beside its `copy`; and its work fingerprint."""
        from scorer.prepare.own_output import work_fingerprint

        fingerprint = work_fingerprint(session)  # the work only, not the final state
        session = self._freeze(session, copy.parent / FINAL_STATE)
        return self.ctx.services.chunking.run(session), fingerprint

    def _freeze(self, session: Session, path: Path) -> Session:
        from scorer.live.final_state import add_final_state

        read = add_final_state(session, self.final_state)
        added = read.events[len(session.events) :]
        frozen = {
            "summary": read.extra.get("final_state"),
            "events": [e.model_dump(mode="json") for e in added],
        }
        path.write_text(json.dumps(frozen), encoding="utf-8")
        return read

    def estimate(self, prepared: Prepared) -> float:
        """USD the batch will charge for it (batch prices; second opinions go direct)."""
        from scorer.jobs.estimate import estimate_prepared

        return estimate_prepared(prepared, self.judge, batch=True, exact=False).cost_usd

    def reset(self, ref: SessionRef) -> None:
        """Make the session new to this ledger: a session judged before and queued again
        is submitted afresh, not skipped as done."""
        self.ledger.add([(ref.session_id, ref.origin)])
        self.ledger.set_state(
            ref.session_id, "discovered", "queued by the hook", origin=ref.origin, attempts=0,
            batch_id=None, cost_usd=0.0, input_tokens=0, output_tokens=0,
        )  # fmt: skip

    def resume(self, refs: list[SessionRef]) -> None:
        """A round killed between the card's `judged` and `stored` steps: read the batch's
        results again (free for 29 days) instead of submitting the session again."""
        for ref in refs:
            row = self.ledger.get(ref.session_id) or {}
            if row.get("state") == "judged" and row.get("batch_id"):
                self.ledger.set_state(ref.session_id, "fetched", row.get("reason"))

    def run(self, refs: list[SessionRef]) -> list[SessionResult]:
        """One round: submit what is needed, collect what ended; the finished results.

        Unscored cards are stored like the direct hook's (the backfill keeps them in its
        ledger only), so `/score` shows them instead of paying again.
        """
        from scorer.jobs.batches import BatchRun
        from scorer.sinks.base import publish

        results = BatchRun(self.ctx).run(refs, wait=False)
        for result in results:
            card = self.step.cards.get(result.session_id)
            if result.outcome == "unscored" and card is not None:
                publish(card, [self.store], store=self.store)
        return results

    def card(self, session_id: str) -> Scorecard | None:
        """The card this round finished, else the stored one (a resumed round's)."""
        card = self.step.cards.get(session_id)
        return card or self.store.latest(session_id, judge="llm", model=self.model)

    def close(self) -> None:
        self.leases.close()
        self.ledger.close()
        self.store.close()


def _thaw(session: Session, path: Path) -> Session:
    """`session` with the final state frozen at `path` when it was sent (if any)."""
    from scorer.models import Event

    try:
        frozen = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return session
    if frozen["summary"] is None:
        return session
    events = [Event.model_validate(e) for e in frozen["events"]]
    extra = {**session.extra, "final_state": frozen["summary"]}
    return session.model_copy(update={"events": [*session.events, *events], "extra": extra})
