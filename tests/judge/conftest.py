"""Judge tests: no real sleeping between retries (waits are recorded instead)."""

from __future__ import annotations

import pytest

from scorer.judge import retry


@pytest.fixture(autouse=True)
def fast_retry_waits(monkeypatch) -> list[float]:
    """Record every retry wait instead of sleeping; the list is the fixture's value."""
    waits: list[float] = []
    monkeypatch.setattr(retry, "sleep", waits.append)
    return waits
