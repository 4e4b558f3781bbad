"""Shared fixtures for the live (tmux + git) tests: a private tmux server per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest


def kill_server(srv: libtmux.Server) -> None:
    """Kill the private test server and remove its socket file (tmux leaves it behind)."""
    if srv.is_alive():
        srv.kill()
    uid_dir = Path(os.environ.get("TMUX_TMPDIR", "/tmp")) / f"tmux-{os.getuid()}"
    (uid_dir / srv.socket_name).unlink(missing_ok=True)


@pytest.fixture
def server() -> Iterator[libtmux.Server]:
    """A tmux server on its own socket, killed (socket removed) after the test."""
    srv = libtmux.Server(socket_name=f"scorer-test-{uuid.uuid4().hex[:10]}")
    try:
        yield srv
    finally:
        kill_server(srv)
