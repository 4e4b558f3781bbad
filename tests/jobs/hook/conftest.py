"""Every hook test that runs the `scorer` console script needs the current one."""

from __future__ import annotations

import pytest

from tests.jobs.hook.helpers import require_fresh_scorer


@pytest.fixture(autouse=True)
def fresh_scorer(request):
    if request.module.__name__.endswith(("test_hook_acceptance", "test_batch_acceptance")):
        require_fresh_scorer()
