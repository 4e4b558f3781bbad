"""Find the sessions a backfill should score: local transcripts or Langfuse sessions.

Local: every `<root>/<project>/<session>.jsonl` (subagent `agent-*.jsonl` files excluded)
whose modification time falls in the window. Langfuse: root observations from
`GET /api/public/v2/observations`, paged with a cursor over consecutive overlapping
sub-windows, deduplicated by observation id and grouped by `sessionId`; a self-hosted v3
server (no v2 observations) is listed through `GET /api/public/traces` instead.

Either way a session whose last activity is within the idle threshold is still running
and is left for a later run. Selection afterwards (`select`) is pure: shard by a stable
hash, then sample deterministically from a seed, then limit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from scorer.errors import ConfigError, SourceError

PAGE_LIMIT = 1000
LEGACY_TRACE_PAGE = 100
OBSERVATION_FIELDS = "core,basic,trace_context"
SUBWINDOW = timedelta(days=1)
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
    observations: int = 0
    pages: int = 0
    without_session: int = 0
    """Root observations with no sessionId (not scoreable as a session)."""


# --- local -------------------------------------------------------------------------


def discover_local(
    root: Path,
    *,
    start: datetime | None = None,
    end: datetime | None = None,
    project: str | None = None,
    idle: timedelta = timedelta(minutes=30),
    now: datetime | None = None,
) -> Discovery:
    """Transcripts under a Claude Code projects root, by modification time.

    Args:
        root: The projects root (`~/.claude/projects`).
        start: Inclusive lower bound on the file's mtime.
        end: Exclusive upper bound on the file's mtime.
        project: Only project folders whose name contains this text.
        idle: A file modified less than this long ago is an active session.
        now: The current time (tests pin it).

    Returns:
        The sessions, oldest first.
    """
    if not root.is_dir():
        raise SourceError(f"projects root not found: {root}")
    now = now or datetime.now(UTC)
    found = Discovery()
    for path in sorted(root.glob("*/*.jsonl")):
        if path.name.startswith("agent-") or (project and project not in path.parent.name):
            continue
        mtime = datetime.fromtimestamp(path.stat().st_mtime, UTC)
        if not in_window(mtime, start, end):
            continue
        if now - mtime < idle:
            found.active.append(path.stem)
            continue
        found.sessions.append(
            SessionRef(
                path.stem, "claude-code", str(path), mtime, meta={"project": path.parent.name}
            )
        )
    found.sessions.sort(key=lambda ref: (ref.last_activity, ref.session_id))
    return found


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


def subwindows(
    start: datetime, end: datetime, step: timedelta = SUBWINDOW, overlap: timedelta = OVERLAP
) -> list[tuple[datetime, datetime]]:
    """Consecutive `[a, b)` windows of `step` covering `[start, end)`, each reaching back
    `overlap` into the previous one."""
    if end <= start:
        raise ConfigError(
            f"empty window: --from {start.isoformat()} is not before --to {end.isoformat()}"
        )
    out: list[tuple[datetime, datetime]] = []
    cursor = start
    while cursor < end:
        upper = min(cursor + step, end)
        out.append((max(start, cursor - overlap), upper))
        cursor = upper
    return out


def iter_root_observations(
    api: Any,
    start: datetime,
    end: datetime,
    *,
    tags: list[str] | None = None,
    environment: str | None = None,
    user: str | None = None,
    stats: Discovery | None = None,
) -> Iterator[Any]:
    """Root observations in the window, each observation id once.

    Every page goes through `LangfuseClient.call`, so a 429 waits for its `Retry-After`
    and a 5xx backs off instead of ending the whole discovery.
    """
    from langfuse.api.core.api_error import ApiError

    from scorer.langfuse_caps import capabilities, v2_missing
    from scorer.langfuse_client import get_client

    client = get_client(api)
    caps = capabilities(client)
    seen: set[str] = set()
    for lo, hi in subwindows(start, end):
        flt = json.dumps(observation_filter(lo, hi, tags=tags, environment=environment, user=user))
        cursor: str | None = None
        while True:
            what = f"listing root observations in [{_iso(lo)}, {_iso(hi)})"
            if caps.observations_v2 is False:
                page = _legacy_page(client, lo, hi, cursor, tags, environment, user, what)
            else:
                try:
                    page = client.call(
                        client.api.observations.get_many,
                        error=SourceError,
                        what=what,
                        passthrough=(404, 405),
                        fields=OBSERVATION_FIELDS,
                        limit=PAGE_LIMIT,
                        cursor=cursor,
                        filter=flt,
                    )
                except ApiError as exc:
                    if not v2_missing(exc) or cursor is not None:
                        raise client.translate(exc, error=SourceError, what=what) from exc
                    caps.observations_v2 = False  # self-hosted v3: list traces instead
                    continue
                caps.observations_v2 = True
            if stats:
                stats.pages += 1
            for obs in page.data:
                oid = _get(obs, "id")
                if oid in seen:
                    continue
                seen.add(oid)
                yield obs
            cursor = _get(page.meta, "cursor")
            if not cursor or not page.data:
                break


@dataclass
class _Page:
    data: list[Any]
    meta: dict[str, Any]


def _legacy_page(
    client: Any,
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
    api: Any,
    start: datetime,
    end: datetime,
    *,
    tags: list[str] | None = None,
    environment: str | None = None,
    user: str | None = None,
    idle: timedelta = timedelta(minutes=30),
    now: datetime | None = None,
) -> Discovery:
    """Langfuse sessions with a root observation in the window, grouped by `sessionId`."""
    now = now or datetime.now(UTC)
    found = Discovery()
    groups: dict[str, SessionRef] = {}
    for obs in iter_root_observations(
        api, start, end, tags=tags, environment=environment, user=user, stats=found
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


# --- selection (pure) --------------------------------------------------------------


def stable_hash(text: str, salt: str = "") -> int:
    """A 64-bit hash that is the same in every process (unlike `hash()`)."""
    return int.from_bytes(hashlib.sha256(f"{salt}\x00{text}".encode()).digest()[:8], "big")


def parse_shard(spec: str | None) -> tuple[int, int] | None:
    """`"i/N"` → `(i, N)` with `0 <= i < N`."""
    if not spec:
        return None
    try:
        i, n = (int(part) for part in spec.split("/"))
    except ValueError:
        raise ConfigError(f"--shard must look like i/N (e.g. 0/4), got {spec!r}") from None
    if n < 1 or not 0 <= i < n:
        raise ConfigError(f"--shard {spec}: need 0 <= i < N")
    return i, n


def in_shard(session_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether a session belongs to shard `(i, N)`: stable hash of the id mod N."""
    return shard is None or stable_hash(session_id, "shard") % shard[1] == shard[0]


def select(
    refs: Iterable[SessionRef],
    *,
    shard: tuple[int, int] | None = None,
    sample: int | None = None,
    fraction: float | None = None,
    seed: int = 0,
    limit: int | None = None,
) -> list[SessionRef]:
    """Shard, sample and limit deterministically (same inputs → same sessions).

    Sampling ranks sessions by a seeded hash of their id, so a session's membership
    does not depend on the order discovery returned them in; `fraction` keeps each
    session independently (stable when new sessions appear in the window).
    """
    if sample is not None and fraction is not None:
        raise ConfigError("give either --sample or --fraction, not both")
    if fraction is not None and not 0 < fraction <= 1:
        raise ConfigError(f"--fraction must be in (0, 1], got {fraction}")
    chosen = [r for r in refs if in_shard(r.session_id, shard)]
    salt = f"sample:{seed}"
    if fraction is not None:
        cut = fraction * 2**64
        chosen = [r for r in chosen if stable_hash(r.session_id, salt) < cut]
    if sample is not None:
        keep = {
            r.session_id
            for r in sorted(chosen, key=lambda r: stable_hash(r.session_id, salt))[:sample]
        }
        chosen = [r for r in chosen if r.session_id in keep]
    return chosen[:limit] if limit is not None else chosen
