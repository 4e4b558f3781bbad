"""Fixtures shared by the jobs tests."""

from __future__ import annotations

import pytest

from scorer.settings import get_settings
from tests.fakes.anthropic import FakeJudgeServer


@pytest.fixture
def judge_env(monkeypatch):
    """`judge_env(server)` points the Anthropic client at a loopback fake server."""

    def use(server: FakeJudgeServer) -> None:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()

    return use
