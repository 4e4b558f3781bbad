"""The `ScoreSink` protocol and `publish`, the one path from a scorecard to its sinks.

Two sinks implement `ScoreSink`: the SQLite `ScoreStore` (local, `remote = False`) and
`LangfuseSink` (remote). `publish` is used by `score-session`, `scorer scores push` and
backfill, so all three share one failure policy:

1. Local sinks are written first (one transaction each). A local failure raises: nothing
   is published without its local record.
2. Remote sinks are written next. Their `SinkError`, `ConfigError` and `CredentialsError`
   are caught and reported in `Published.errors`, never raised: the card is kept.
3. When any remote sink was tried, the store records the outcome (`mark_pushed`, with the
   error when one failed) so `scorer scores push` retries exactly what failed. A card
   that was not stored (`score-session --no-store`) is saved when its push fails.

The caller decides what a failure means for it: the CLI prints one line and exits 1,
backfill fails the session (its ledger keeps it `stored` for the next run) and stops the
whole run on a credentials error (`Published.fatal`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from scorer.errors import ConfigError, CredentialsError, SinkError

if TYPE_CHECKING:
    from scorer.models import Scorecard
    from scorer.sinks.store import ScoreStore


class ScoreSink(Protocol):
    """Somewhere a scorecard is written."""

    name: str
    """Short name used in messages (`store`, `langfuse`)."""
    remote: bool
    """False for the local record (written first, failures raise)."""

    def write(self, card: Scorecard) -> str | None:
        """Write one scorecard; idempotent for the same card.

        Returns:
            Where it went (a path or URL), or None.

        Raises:
            SinkError: The sink refused or failed (a partial write included).
            CredentialsError: The sink's credentials are missing or rejected.
        """
        ...


@dataclass
class Published:
    """What `publish` did with one card."""

    written: list[str] = field(default_factory=list)
    """Names of the sinks that took the card."""
    errors: dict[str, str] = field(default_factory=dict)
    """Remote sink name → one-line reason it failed."""
    locations: list[str] = field(default_factory=list)
    """Paths and URLs the sinks returned (e.g. the Langfuse session URL)."""
    fatal: CredentialsError | None = None
    """Set when a remote sink's credentials failed: every further card would fail too."""

    @property
    def ok(self) -> bool:
        return not self.errors

    def problem(self) -> str:
        """All failures on one line."""
        return "; ".join(f"{name}: {why}" for name, why in self.errors.items())


def publish(
    card: Scorecard,
    sinks: Sequence[ScoreSink],
    *,
    store: ScoreStore | None = None,
    on_stored: Callable[[], None] | None = None,
) -> Published:
    """Write `card` to `sinks`: local first, then remote, then record the push outcome.

    Args:
        card: The scorecard (only scored cards are pushed by callers).
        sinks: Local and remote sinks, in any order.
        store: The store that already holds the card and records push outcomes. When
            None, the first local sink that is a store is used, else the default store,
            which then also keeps a card whose push failed.
        on_stored: Called after the local sinks and before any remote one (backfill moves
            its ledger to `stored` there).

    Returns:
        What was written and what failed (see the module's failure policy).
    """
    from scorer.sinks.store import ScoreStore

    done = Published()
    local = [s for s in sinks if not s.remote]
    remote = [s for s in sinks if s.remote]
    for sink in local:
        _note(done, sink, sink.write(card))
    if on_stored is not None:
        on_stored()
    if not remote:
        return done
    for sink in remote:
        try:
            _note(done, sink, sink.write(card))
        except CredentialsError as exc:
            done.fatal = exc
            done.errors[sink.name] = _one_line(exc)
        except (SinkError, ConfigError) as exc:
            done.errors[sink.name] = _one_line(exc)
    record = store or next((s for s in local if isinstance(s, ScoreStore)), None)
    if record is None:
        with ScoreStore() as fresh:
            _record(fresh, card, done, keep=not done.ok)
    else:
        _record(record, card, done, keep=False)
    return done


def _note(done: Published, sink: ScoreSink, location: str | None) -> None:
    done.written.append(sink.name)
    if location:
        done.locations.append(location)


def _record(store: ScoreStore, card: Scorecard, done: Published, *, keep: bool) -> None:
    if keep:
        store.save(card)
    error = None if done.ok else done.problem()
    store.mark_pushed(
        card.session_id,
        card.judge,
        card.model,
        card.rubric_version,
        error=error,
        collection=card.collection,
    )


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or exc.__class__.__name__
