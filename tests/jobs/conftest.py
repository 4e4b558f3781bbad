"""Backfill tests: no real sleeping between retries (judge and Langfuse)."""

from __future__ import annotations

import pytest

from scorer import langfuse_client
from scorer.judge import retry


@pytest.fixture(autouse=True)
def fast_retry_waits(monkeypatch) -> None:
    monkeypatch.setattr(retry, "sleep", lambda s: None)
    monkeypatch.setattr(langfuse_client.RETRY, "sleep", lambda s: None)
