"""Which discovered sessions a run takes: shard, sample and limit, deterministically (pure)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Protocol, TypeVar

from scorer.errors import ConfigError


class _HasSessionId(Protocol):
    @property
    def session_id(self) -> str: ...


R = TypeVar("R", bound=_HasSessionId)


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
    refs: Iterable[R],
    *,
    shard: tuple[int, int] | None = None,
    sample: int | None = None,
    fraction: float | None = None,
    seed: int = 0,
    limit: int | None = None,
) -> list[R]:
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
