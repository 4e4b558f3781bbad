"""The plugin tests run the `scorer` console script the way the plugin finds it."""

from __future__ import annotations

import subprocess

import pytest

from tests.jobs.hook.helpers import require_fresh_scorer
from tests.plugin.helpers import BASE_PATH, PLUGIN_DIR


@pytest.fixture(autouse=True)
def fresh_scorer():
    require_fresh_scorer()


@pytest.fixture
def no_scorer(tmp_path):
    """A machine where session-scorer is not installed: a PATH and HOME without it."""
    probe = subprocess.run(
        ["python3", "-c", "import scorer.cli.entry"], env={"PATH": BASE_PATH}, capture_output=True
    )
    if probe.returncode == 0:
        pytest.skip("the system python3 has session-scorer installed")
    home_dir = tmp_path / "user"
    home_dir.mkdir()
    env = {"PATH": BASE_PATH, "HOME": str(home_dir), "CLAUDE_PLUGIN_ROOT": str(PLUGIN_DIR)}
    return home_dir, env
