"""The plugin tests run the `scorer` console script the way the plugin finds it."""

from __future__ import annotations

import pytest

from tests.jobs.hook.helpers import require_fresh_scorer


@pytest.fixture(autouse=True)
def fresh_scorer():
    require_fresh_scorer()
