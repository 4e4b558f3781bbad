"""The account's rate limits as a run knows them before it starts: learned by an earlier
run, or a usage tier's documented defaults.

Every paced run learns RPM / ITPM / OTPM per model from the API's headers
(`account_limits`) and leaves them in `$SCORER_HOME/rate-limits.json`, with the refill time
of a bucket and the median judge-call latency. The next run plans its chunks under them
from its first session, and `--dry-run` forecasts at them. Without that file the forecast
uses the documented limits of `SCORER_RATE_TIER` (default tier 2) and says so; chunks are
planned under a tier's limits only when `SCORER_RATE_TIER` is set.

Tier limits (platform.claude.com/docs/en/api/rate-limits, Claude Sonnet / Opus 4.x; we
assume the same for the 5.x models until the page lists them):

    tier   RPM     ITPM        OTPM      Message Batches queue
    1      50      30,000      8,000     100,000 requests
    2      1,000   450,000     90,000    200,000
    3      2,000   800,000     160,000   300,000
    4      4,000   2,000,000   400,000   500,000
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

log = logging.getLogger(__name__)

TIER_LIMITS: dict[int, tuple[int, int, int]] = {
    1: (50, 30_000, 8_000),
    2: (1_000, 450_000, 90_000),
    3: (2_000, 800_000, 160_000),
    4: (4_000, 2_000_000, 400_000),
}
BATCH_QUEUE: dict[int, int] = {1: 100_000, 2: 200_000, 3: 300_000, 4: 500_000}
"""Message Batches requests an organisation may have in the processing queue, per tier."""
DEFAULT_TIER = 2
LIMITS_FILE = "rate-limits.json"
FIT_SHARE = 0.75
"""A chunk request may use this share of the input bucket (the header, template and the
estimate's error take the rest)."""
FIT_OVERHEAD = 3_000
"""Input tokens a chunk request carries besides the chunk (header, instructions)."""


@dataclass(frozen=True)
class AccountLimits:
    """Requests, input and output tokens per minute for one model, and where they came from."""

    rpm: int
    itpm: int
    otpm: int
    source: str
    """`learned 2026-11-22` or `tier 2 defaults (documented; ...)`, for the forecast."""
    learned: bool = False
    period_s: float = 60.0
    """Seconds a bucket takes to refill from empty (a minute, on the real API)."""
    latency_s: float | None = None
    """Median seconds per judge call the run that learned them measured."""
    tier: int | None = None

    def per_minute(self, kind: str) -> int:
        return {"requests": self.rpm, "input-tokens": self.itpm, "output-tokens": self.otpm}[kind]


def tier_limits(tier: int, why: str) -> AccountLimits:
    """A tier's documented limits; `why` ends the source text."""
    rpm, itpm, otpm = TIER_LIMITS[tier]
    return AccountLimits(rpm, itpm, otpm, f"tier {tier} defaults ({why})", tier=tier)


def load_learned(home: Path, model: str) -> AccountLimits | None:
    """The limits an earlier run learned for `model` (None: none, or an unreadable file)."""
    entry = _read(home / LIMITS_FILE).get(model)
    if not isinstance(entry, dict):
        return None
    try:
        return AccountLimits(
            rpm=int(entry["rpm"]),
            itpm=int(entry["itpm"]),
            otpm=int(entry["otpm"]),
            source=f"learned {entry.get('learned_at', 'earlier')[:10]}",
            learned=True,
            period_s=float(entry.get("period_s", 60.0)),
            latency_s=float(entry["latency_s"]) if "latency_s" in entry else None,
        )
    except (KeyError, TypeError, ValueError):
        log.warning("ignoring a malformed entry for %s in %s", model, home / LIMITS_FILE)
        return None


def save_learned(
    home: Path, learned: dict[str, dict[str, float]], now: datetime | None = None
) -> None:
    """Remember what a run learned, model by model (atomic replace; other models kept)."""
    if not learned:
        return
    path = home / LIMITS_FILE
    found = _read(path)
    stamp = (now or datetime.now(UTC)).isoformat(timespec="seconds")
    for model, limits in learned.items():
        found[model] = {**limits, "learned_at": stamp}
    home.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=home, prefix=".rate-limits-", suffix=".json")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(found, fh, indent=1, sort_keys=True)
        os.replace(tmp, path)
    except OSError as exc:  # remembering is a convenience: never fail a run for it
        log.warning("could not save the learned rate limits to %s: %s", path, exc)
        Path(tmp).unlink(missing_ok=True)


def _read(path: Path) -> dict:
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def known_limits(home: Path, model: str, tier: int | None) -> AccountLimits | None:
    """What a real run plans its chunks under: learned limits, else an explicit tier's."""
    learned = load_learned(home, model)
    if learned is not None:
        return learned
    return tier_limits(tier, "SCORER_RATE_TIER") if tier else None


def assumed_limits(home: Path, model: str, tier: int | None) -> AccountLimits:
    """What a forecast uses: learned limits, else a tier's defaults (named as assumed)."""
    known = known_limits(home, model, tier)
    if known is not None:
        return known
    why = "documented; this account's limits are not known yet: a run learns them, "
    return tier_limits(DEFAULT_TIER, why + "or set SCORER_RATE_TIER")


def fit_budget(itpm: int, budget: int, *, estimate_factor: float, safety: float) -> int | None:
    """A chunk budget whose requests fit `itpm`, or None when `budget` already does.

    Chunk budgets count cl100k tokens times `safety`; the API charges Claude tokens
    (about `estimate_factor` cl100k tokens each). A request may use `FIT_SHARE` of the
    bucket, less `FIT_OVERHEAD` for what it carries besides the chunk.
    """
    room = FIT_SHARE * itpm - FIT_OVERHEAD
    fitting = max(1_000, math.floor(room * safety / estimate_factor))
    return fitting if fitting < budget else None


@dataclass
class ChunkPlan:
    """The chunk budget of a run's sessions: the configured one, or one under the
    account's input-token limit once that limit is known (learned now or earlier).

    Args:
        default: `SCORER_CHUNK_BUDGET`.
        estimate_factor: Claude tokens per cl100k token (`SCORER_ESTIMATE_FACTOR`).
        safety: The chunker's multiplier on cl100k counts (`SCORER_TOKEN_SAFETY`).
        account: The limits known before the run (None: none).
        live: The input tokens per minute the run's limiter has learned (None: not yet).
    """

    default: int
    estimate_factor: float
    safety: float
    account: AccountLimits | None = None
    live: Callable[[], int | None] = lambda: None
    used: str | None = None
    """The note of the last budget planned under a limit (for the run's summary)."""

    def budget(self) -> tuple[int | None, str | None]:
        """(budget, note) for the next session; (None, None): the configured budget fits."""
        itpm, source = self.live(), "learned this run"
        if itpm is None and self.account is not None:
            itpm, source = self.account.itpm, self.account.source
        if itpm is None:
            return None, None
        fit = fit_budget(
            itpm, self.default, estimate_factor=self.estimate_factor, safety=self.safety
        )
        if fit is None:
            return None, None
        self.used = (
            f"chunks planned under the account's {itpm:,} input tokens per minute ({source}): "
            f"a {fit:,}-token chunk budget instead of {self.default:,}"
        )
        return fit, self.used
