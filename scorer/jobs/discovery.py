"""Find the sessions a backfill should score: local transcripts or Langfuse sessions.

Local files: `scorer.jobs.discover_local` (`<root>/<folder>/<file>.jsonl` by modification
time, under the ids their sources report, finished ones only). Langfuse: root observations from
`GET /api/public/v2/observations`, deduplicated by observation id and grouped by
`sessionId`. The window is walked with adaptive sub-windows, so the cost follows the
number of observations, not the number of days: each sub-window is sized to hold about
half a page at the density the previous one showed, at most doubling (empty ranges are
crossed in a few requests); a full first page halves its sub-window and asks again
(down to `MIN_SPLIT`, below which the cursor is followed). A progress callback hears
after every page how far discovery got. A self-hosted v3 server
(no v2 observations) is listed through `GET /api/public/traces` instead.

Either way a session whose last activity is within the idle threshold is still running
and is left for a later run. Selection afterwards (`select`) is pure: shard by a stable
hash, then sample deterministically from a seed, then limit.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from scorer._text import plural
from scorer.errors import ConfigError, SourceError

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient

PAGE_LIMIT = 1000
LEGACY_TRACE_PAGE = 100
OBSERVATION_FIELDS = "core,basic,trace_context"
SUBWINDOW = timedelta(days=1)
"""The first adaptive sub-window; `next_step` sizes the later ones."""
MIN_SPLIT = timedelta(hours=1)
"""A full page splits its sub-window down to this span; below it the cursor is followed."""
OVERLAP = timedelta(minutes=5)
"""Sub-windows overlap so an observation on a boundary is never missed; dedupe by id."""


@dataclass
class SessionRef:
    """A discovered session, before it is fetched."""

    session_id: str
    source: str
    """`claude-code` or `langfuse`."""
    origin: str | None = None
    """The transcript path (local) or None (Langfuse: the id is enough)."""
    last_activity: datetime | None = None
    trace_ids: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Discovery:
    """What discovery found, and what it left out and why (for the summary)."""

    sessions: list[SessionRef] = field(default_factory=list)
    active: list[str] = field(default_factory=list)
    """Sessions skipped because they were active within the idle threshold."""
    active_why: dict[str, str] = field(default_factory=dict)
    """Why a local session counts as active (`its last event was 3 min ago`)."""
    idle_minutes: float = 30.0
    """The idle threshold the run used (named in the note on active sessions)."""
    observations: int = 0
    pages: int = 0
    without_session: int = 0
    """Root observations with no sessionId (not scoreable as a session)."""
    skipped_files: list[str] = field(default_factory=list)
    """Local paths that are no readable regular file (dangling symlink, loop, FIFO), with why."""
    clashes: list[str] = field(default_factory=list)
    """Session ids found in more than one project folder (the newest file is scored)."""
    future_mtime: list[str] = field(default_factory=list)
    """Files modified in the future (a wrong clock): taken as modified now, not as active."""

    def notes(self) -> list[str]:
        """One line per file that discovery left out or had to guess about, and what to
        do about sessions left alone as active."""
        return [
            *self._active_notes(),
            *(f"skipped {entry}" for entry in self.skipped_files),
            *(f"session id clash: {entry}" for entry in self.clashes),
            *(f"modification time in the future, taken as now: {p}" for p in self.future_mtime),
        ]

    def _active_notes(self, shown: int = 5) -> list[str]:
        if not self.active:
            return []
        limit = f"{self.idle_minutes:g} min"
        lines = [
            f"{plural(len(self.active), 'session')} left for a later run: active within the "
            f"last {limit} (--idle-minutes); run again later, or pass --idle-minutes 0 to "
            "score them now"
        ]
        for sid in self.active[:shown]:
            why = self.active_why.get(sid)
            lines.append(f"  active: {sid}" + (f" ({why})" if why else ""))
        if len(self.active) > shown:
            lines.append(f"  … and {len(self.active) - shown} more")
        return lines


@dataclass(frozen=True)
class DiscoveryProgress:
    """How far a Langfuse discovery got; sent to the progress callback after each page."""

    sessions: int
    """Distinct sessions seen so far (active ones included)."""
    observations: int
    """Distinct root observations seen so far."""
    requests: int
    """List requests made so far."""
    reached: datetime
    """Everything in `[start, reached)` has been listed."""
    start: datetime
    end: datetime
    done: bool = False
    """True on the last call, once the whole window is listed."""

    @property
    def fraction(self) -> float:
        """Share of the window listed, 0..1."""
        span = (self.end - self.start).total_seconds()
        return 1.0 if span <= 0 else (self.reached - self.start).total_seconds() / span


ProgressFn = Callable[[DiscoveryProgress], None]
_LISTENER: ContextVar[ProgressFn | None] = ContextVar("discovery_progress", default=None)


@contextmanager
def watch_discovery(callback: ProgressFn) -> Iterator[None]:
    """Send the progress of Langfuse discoveries run in this context to `callback`.

    For callers that reach discovery through layers that do not pass a callback along
    (the CLI around `run_backfill`); an explicit `progress=` argument wins.
    """
    token = _LISTENER.set(callback)
    try:
        yield
    finally:
        _LISTENER.reset(token)


# --- shared ------------------------------------------------------------------------


def in_window(when: datetime, start: datetime | None, end: datetime | None) -> bool:
    """`start <= when < end`, open bounds when None."""
    return (start is None or when >= start) and (end is None or when < end)


# --- Langfuse ----------------------------------------------------------------------


def observation_filter(
    start: datetime,
    end: datetime,
    *,
    tags: list[str] | None = None,
    environment: str | None = None,
    user: str | None = None,
) -> list[dict[str, Any]]:
    """The JSON `filter` conditions for root observations in `[start, end)`.

    The `filter` param overrides the plain query params (time bounds included), so
    every condition, the root flag and the window too, goes inside it.
    """
    conds: list[dict[str, Any]] = [
        {"type": "boolean", "column": "isRootObservation", "operator": "=", "value": True},
        {"type": "datetime", "column": "startTime", "operator": ">=", "value": _iso(start)},
        {"type": "datetime", "column": "startTime", "operator": "<", "value": _iso(end)},
    ]
    if tags:
        conds.append(
            {"type": "arrayOptions", "column": "tags", "operator": "all of", "value": tags}
        )
    if environment:
        conds.append(
            {
                "type": "stringOptions",
                "column": "environment",
                "operator": "any of",
                "value": [environment],
            }
        )
    if user:
        conds.append({"type": "string", "column": "userId", "operator": "=", "value": user})
    return conds


def _iso(when: datetime) -> str:
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return when.astimezone(UTC).isoformat().replace("+00:00", "Z")


def iter_root_observations(
    client: LangfuseClient,
    start: datetime,
    end: datetime,
    *,
    tags: list[str] | None = None,
    environment: str | None = None,
    user: str | None = None,
    stats: Discovery | None = None,
    on_page: Callable[[datetime], None] | None = None,
) -> Iterator[Any]:
    """Root observations in `[start, end)`, each observation id once.

    Walks adaptive sub-windows (see the module docstring), earliest first, each
    reaching back `OVERLAP` into the previous one. Every page goes through
    `LangfuseClient.call`, so a 429 waits for its `Retry-After` and a 5xx backs off
    instead of ending the whole discovery. `on_page(reached)` is called after each
    page's observations were yielded, with the time up to which the window is listed.
    """
    from langfuse.api.core.api_error import ApiError

    from scorer.langfuse_caps import capabilities, v2_missing

    if end <= start:
        raise ConfigError(
            f"empty window: --from {start.isoformat()} is not before --to {end.isoformat()}"
        )
    caps = capabilities(client)

    def page_of(lo: datetime, hi: datetime, cursor: str | None) -> Any:
        if stats:
            stats.pages += 1
        what = f"listing root observations in [{_iso(lo)}, {_iso(hi)})"
        with caps.trying("observations_v2") as v2:
            if v2 is False:
                return _legacy_page(client, lo, hi, cursor, tags, environment, user, what)
            try:
                page = client.call(
                    client.api.observations.get_many,
                    error=SourceError,
                    what=what,
                    passthrough=(404, 405),
                    fields=OBSERVATION_FIELDS,
                    limit=PAGE_LIMIT,
                    cursor=cursor,
                    filter=json.dumps(
                        observation_filter(lo, hi, tags=tags, environment=environment, user=user)
                    ),
                )
            except ApiError as exc:
                if not v2_missing(exc) or cursor is not None:
                    raise client.translate(exc, error=SourceError, what=what) from exc
                caps.observations_v2 = False  # self-hosted v3: list traces instead
                return _legacy_page(client, lo, hi, cursor, tags, environment, user, what)
            caps.observations_v2 = True
            return page

    seen: set[str] = set()
    notify = on_page or (lambda reached: None)
    reached, step = start, SUBWINDOW
    dense_until = start  # [reached, dense_until) held a full page when last asked
    while reached < end:
        hi = min(reached + step, end)
        if dense_until > reached:  # don't grow back into a range known to be full
            hi = min(hi, max(reached + (dense_until - reached) / 2, reached + MIN_SPLIT))
        lo = max(start, reached - OVERLAP)
        page = page_of(lo, hi, None)
        while _is_full(page) and hi - reached > MIN_SPLIT:
            # Too dense for one page: try the first half instead (these rows come again).
            yield from _unseen(page.data, seen)
            notify(reached)
            dense_until, hi = hi, reached + (hi - reached) / 2
            page = page_of(lo, hi, None)
        rows = len(page.data)
        yield from _unseen(page.data, seen)
        while (cursor := _get(page.meta, "cursor")) and page.data:
            notify(reached)
            page = page_of(lo, hi, cursor)
            rows += len(page.data)
            yield from _unseen(page.data, seen)
        span, reached = hi - reached, hi
        notify(reached)
        step = next_step(span, rows)


def next_step(span: timedelta, rows: int) -> timedelta:
    """The next sub-window: aim at half a page at the density just seen, at most 2x."""
    growth = min(2.0, PAGE_LIMIT / 2 / rows) if rows else 2.0
    return max(span * growth, MIN_SPLIT)


def _is_full(page: Any) -> bool:
    """A full page with more to come (a short page with a cursor is a size cap: page on)."""
    return len(page.data) >= PAGE_LIMIT and bool(_get(page.meta, "cursor"))


def _unseen(observations: Iterable[Any], seen: set[str]) -> Iterator[Any]:
    for obs in observations:
        oid = _get(obs, "id")
        if oid not in seen:
            seen.add(oid)
            yield obs


@dataclass
class _Page:
    data: list[Any]
    meta: dict[str, Any]


def _legacy_page(
    client: LangfuseClient,
    lo: datetime,
    hi: datetime,
    cursor: str | None,
    tags: list[str] | None,
    environment: str | None,
    user: str | None,
    what: str,
) -> _Page:
    """One page of `GET /api/public/traces` (self-hosted v3), as stand-in root
    observations; the page number travels in the cursor."""
    from scorer.sources.langfuse_read import trace_root

    page = int(cursor or 1)
    body = client.get_json(
        "api/public/traces",
        error=SourceError,
        what=what + " (legacy API)",
        page=page,
        limit=LEGACY_TRACE_PAGE,
        fromTimestamp=_iso(lo),
        toTimestamp=_iso(hi),
        tags=tags or None,
        environment=[environment] if environment else None,
        userId=user,
        fields="core,metrics",  # metrics: latency, hence the trace end
    )
    roots = [trace_root(t, "") for t in body.get("data") or [] if t.get("sessionId")]
    total = int((body.get("meta") or {}).get("totalPages") or 1)
    more = page < total and bool(body.get("data"))
    return _Page(roots, {"cursor": str(page + 1) if more else None})


def _get(obj: Any, name: str) -> Any:
    """Field of an SDK model or dict (v2 observations are `extra="allow"` models)."""
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


def discover_langfuse(
    client: LangfuseClient,
    start: datetime,
    end: datetime,
    *,
    tags: list[str] | None = None,
    environment: str | None = None,
    user: str | None = None,
    idle: timedelta = timedelta(minutes=30),
    now: datetime | None = None,
    progress: ProgressFn | None = None,
) -> Discovery:
    """Langfuse sessions with a root observation in the window, grouped by `sessionId`.

    Args:
        client: The Langfuse project to list.
        start: Inclusive window start (root observations' `startTime`).
        end: Exclusive window end.
        tags: Trace tags that must all be present.
        environment: Only this environment.
        user: Only this user id.
        idle: A session active less than this long ago is left for a later run.
        now: The current time (tests pin it).
        progress: Called after every list request and once at the end (`done=True`);
            defaults to the callback set by `watch_discovery`, if any.

    Returns:
        The finished sessions (oldest first), the active ones and the counts.
    """
    now = now or datetime.now(UTC)
    found = Discovery(idle_minutes=idle.total_seconds() / 60)
    groups: dict[str, SessionRef] = {}
    report = progress or _LISTENER.get()

    def on_page(reached: datetime, done: bool = False) -> None:
        if report:
            report(
                DiscoveryProgress(
                    len(groups), found.observations, found.pages, reached, start, end, done
                )
            )

    for obs in iter_root_observations(
        client,
        start,
        end,
        tags=tags,
        environment=environment,
        user=user,
        stats=found,
        on_page=on_page,
    ):
        found.observations += 1
        sid = _get(obs, "sessionId") or _get(obs, "session_id")
        if not sid:
            found.without_session += 1
            continue
        ref = groups.setdefault(sid, SessionRef(sid, "langfuse"))
        trace = _get(obs, "traceId") or _get(obs, "trace_id")
        if trace and trace not in ref.trace_ids:
            ref.trace_ids.append(trace)
        seen_at = _as_dt(_get(obs, "endTime") or _get(obs, "end_time")) or _as_dt(
            _get(obs, "startTime") or _get(obs, "start_time")
        )
        if seen_at and (ref.last_activity is None or seen_at > ref.last_activity):
            ref.last_activity = seen_at
    on_page(end, done=True)
    for ref in groups.values():
        if ref.last_activity and now - ref.last_activity < idle:
            found.active.append(ref.session_id)
        else:
            found.sessions.append(ref)
    found.sessions.sort(key=lambda r: (r.last_activity or now, r.session_id))
    return found


def _as_dt(value: Any) -> datetime | None:
    if value is None or isinstance(value, datetime):
        return value if value is None or value.tzinfo else value.replace(tzinfo=UTC)
    try:
        parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
