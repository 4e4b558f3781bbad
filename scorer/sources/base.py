"""The source interface: anything that can produce a `Session`."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from scorer.models import Session, SourceKind


@runtime_checkable
class SessionSource(Protocol):
    """Loads one session. Implementations raise `SourceError` with a one-line message."""

    kind: SourceKind

    def load(self) -> Session: ...
