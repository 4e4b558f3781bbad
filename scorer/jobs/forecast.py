"""How long a backfill will take at the account's rate limits, and what it will cost
(`--dry-run`), for the direct path and for `--batch-api`.

Direct calls are metered per minute (`jobs.account_limits`). The buckets start full, so
the calls use up a minute of each limit at once and then go at the limit's pace:

    minutes of a limit   charged ÷ limit (requests; input tokens, cache reads excluded;
                         output tokens)
    paced                (the largest of those − 1) minutes: that limit binds
    in flight            calls × latency ÷ concurrency, where concurrency is at most
                         `--concurrency` and at most OTPM ÷ max_tokens (the API holds each
                         call's max_tokens of the output limit until it ends)
    wall                 one call's latency (the first call, which learns the limits)
                         + the larger of paced and in flight + one call's latency (the last)

The latency is the one measured by the run that learned the limits, else an assumption
(`DEFAULT_LATENCY`), and the forecast says which. Message Batches are not metered per
minute: only their queue (requests waiting, per tier) limits them, and a batch ends within
24 hours (most within one), so their forecast is a cost and a queue check, not a time.
"""

from __future__ import annotations

from pydantic import BaseModel

from scorer.jobs.account import BATCH_QUEUE, TIER_LIMITS, AccountLimits
from scorer.jobs.account_limits import KINDS, LABELS

DEFAULT_LATENCY = 60.0
"""Seconds per judge call assumed when no run has measured it (medium effort: ~5,000
output tokens of thinking and answer a call)."""


class Forecast(BaseModel):
    """A dry run's forecast (printed under the estimate; in `--json` as `forecast`)."""

    limits_source: str
    rpm: int
    itpm: int
    otpm: int
    requests: int
    charged_input_tokens: int
    """Input tokens the limits charge: cache reads of the system prompt excluded."""
    output_tokens: int
    minutes: dict[str, float]
    """Minutes of each limit the run charges (`requests`, `input-tokens`, `output-tokens`)."""
    binding: str
    concurrency: int
    """Calls in flight the forecast assumes: `--concurrency`, or fewer when the output
    limit cannot hold that many calls' `max_tokens` at once."""
    latency_s: float
    latency_basis: str
    wall_seconds: float
    cost_usd: float
    batch_cost_usd: float
    batch_queue: int | None
    """The tier's Message Batches queue (None: the tier is not known)."""

    def lines(self) -> list[str]:
        """The forecast as the dry run prints it."""
        used = ", ".join(f"{self.minutes[k]:.1f} of {LABELS[k]}" for k in KINDS)
        if self.binding == "concurrency":
            binds = f"calls in flight bind ({self.concurrency} at a time)"
        else:
            binds = f"{LABELS[self.binding]} bind"
        queue = (
            f"{self.requests:,} requests {'fit' if self.requests <= self.batch_queue else 'exceed'}"
            f" the tier's queue of {self.batch_queue:,}"
            if self.batch_queue
            else "its queue limit depends on the usage tier"
        )
        return [
            f"forecast at {_n(self.rpm)} requests / {_n(self.itpm)} input / {_n(self.otpm)} "
            f"output tokens per minute ({self.limits_source}):",
            f"  direct: ~{_duration(self.wall_seconds)}, {binds} (minutes of each limit: "
            f"{used}); {self.latency_s:g} s a call ({self.latency_basis}); ~${self.cost_usd:.2f}",
            f"  --batch-api: ~${self.batch_cost_usd:.2f} (-50%), not metered per minute; "
            f"{queue}; most batches end within an hour, all within 24 h",
        ]


def _n(value: int) -> str:
    return f"{value / 1000:g}k" if value >= 10_000 else f"{value:,}"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.0f} min" if minutes < 90 else f"{minutes / 60:.1f} h"


def forecast(
    limits: AccountLimits,
    *,
    requests: int,
    charged_input_tokens: int,
    output_tokens: int,
    concurrency: int,
    max_tokens: int,
    cost_usd: float,
    batch_cost_usd: float,
) -> Forecast:
    """The wall time and cost of judging a dry run's sessions (see the module doc).

    Args:
        limits: The account's limits (learned, or a tier's defaults).
        requests: Judge calls (chunk notes and final calls included).
        charged_input_tokens: Input tokens the limit charges (cache reads excluded).
        output_tokens: Expected output tokens (thinking included).
        concurrency: `--concurrency`.
        max_tokens: The `max_tokens` of a scoring call (held of the output limit in flight).
        cost_usd / batch_cost_usd: The estimate priced directly and as Message Batches.
    """
    charged = {
        "requests": requests,
        "input-tokens": charged_input_tokens,
        "output-tokens": output_tokens,
    }
    minutes = {k: round(charged[k] / limits.per_minute(k), 3) for k in KINDS}
    latency = limits.latency_s or DEFAULT_LATENCY
    basis = (
        "measured by the run that learned the limits"
        if limits.latency_s
        else f"assumed: no run has measured it yet (DEFAULT_LATENCY = {DEFAULT_LATENCY:g} s)"
    )
    limit_kind = max(KINDS, key=minutes.__getitem__)
    paced = max(0.0, minutes[limit_kind] - 1) * limits.period_s
    in_flight = max(1, min(concurrency, limits.otpm // max(max_tokens, 1)))
    flowing = requests * latency / in_flight
    binding = limit_kind if paced >= flowing else "concurrency"
    wall = (latency + max(paced, flowing) + latency) if requests else 0.0
    return Forecast(
        limits_source=limits.source,
        rpm=limits.rpm,
        itpm=limits.itpm,
        otpm=limits.otpm,
        requests=requests,
        charged_input_tokens=charged_input_tokens,
        output_tokens=output_tokens,
        minutes=minutes,
        binding=binding,
        concurrency=in_flight,
        latency_s=round(latency, 3),
        latency_basis=basis,
        wall_seconds=round(wall, 1),
        cost_usd=round(cost_usd, 4),
        batch_cost_usd=round(batch_cost_usd, 4),
        batch_queue=BATCH_QUEUE.get(_tier(limits) or 0),
    )


def _tier(limits: AccountLimits) -> int | None:
    """The usage tier whose documented limits these are, if any."""
    if limits.tier is not None:
        return limits.tier
    found = (limits.rpm, limits.itpm, limits.otpm)
    return next((tier for tier, documented in TIER_LIMITS.items() if documented == found), None)
