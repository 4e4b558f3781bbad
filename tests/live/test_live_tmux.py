"""Real tmux: a private server runs a scripted program; capture, clean, cache fallback."""

from __future__ import annotations

import shutil
import sys
import time
import uuid

import libtmux
import pytest

from scorer.errors import SourceError
from scorer.live.terminal import clean_terminal
from scorer.live.tmux import cache_path, capture
from tests.conftest import FIXTURES

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
SCRIPT = FIXTURES / "live" / "scripted_run.py"


def wait_for(srv: libtmux.Server, target: str, marker: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = srv.cmd("capture-pane", "-p", "-t", target).stdout
        if any(marker in line for line in out):
            return
        time.sleep(0.05)
    raise AssertionError(f"{marker!r} never appeared in {target}")


def start(srv: libtmux.Server, name: str) -> libtmux.Session:
    session = srv.new_session(
        name, window_name="work", window_command="env PS1='$ ' bash --norc --noprofile",
        x=120, y=30,
    )  # fmt: skip
    pane = session.active_window.active_pane
    pane.send_keys(f"{sys.executable} {SCRIPT}")
    wait_for(srv, name, "SCRIPT-FINISHED")
    return session


def test_capture_clean_and_cache_fallback(server):
    start(server, "agent")
    cap = capture("agent", socket_name=server.socket_name)
    assert not cap.from_cache and len(cap.panes) == 1
    assert cap.panes[0].label == "0:work.0" and cap.panes[0].pane_id.startswith("%")
    text = clean_terminal(cap.text)
    lines = text.splitlines()
    assert "Starting build" in lines
    assert "Downloading deps 100%" in lines
    assert not any("25%" in line for line in lines)  # \r redraws collapsed by the terminal
    assert "ERROR: could not import foo" in lines
    assert "========== 1 failed, 3 passed in 0.12s ==========" in lines
    assert "\x1b" not in text and "window title" not in text
    assert lines[-1] == "$"  # the shell prompt came back

    cached = cache_path("agent")
    assert cached.read_text(encoding="utf-8") == cap.text

    server.kill()  # the session (and server) is gone: the last capture is returned
    again = capture("agent", socket_name=server.socket_name)
    assert again.from_cache
    assert again.text == cap.text


def test_all_panes_are_labelled_and_lines_limited(server):
    session = start(server, "multi")
    session.active_window.split()
    cap = capture("multi", socket_name=server.socket_name, all_panes=True)
    assert [p.label for p in cap.panes] == ["0:work.0", "0:work.1"]
    assert cap.text.startswith("=== pane 0:work.0 ===\n")
    assert "\n=== pane 0:work.1 ===\n" in cap.text
    short = capture("multi:0.0", socket_name=server.socket_name, lines=3)
    assert len(short.text.splitlines()) == 3
    assert short.text.splitlines()[-1].startswith("$")


def test_missing_session_without_cache_is_a_clear_error(server):
    start(server, "present")
    with pytest.raises(SourceError) as info:
        capture("absent", socket_name=server.socket_name)
    assert str(info.value) == (
        f"tmux session 'absent' not found (socket -L {server.socket_name}); "
        "no cached capture either"
    )


def test_no_server_at_all_is_a_clear_error():
    name = f"scorer-test-{uuid.uuid4().hex[:10]}"  # never started
    with pytest.raises(SourceError, match="tmux session 'gone' not found"):
        capture("gone", socket_name=name)


def test_cached_capture_is_redacted_and_private(server):
    token = "ghp_" + "Z9y8X7w6V5" * 4
    session = server.new_session(
        "leaky", window_command="env PS1='$ ' bash --norc --noprofile", x=120, y=30
    )
    session.active_window.active_pane.send_keys(f"echo GITHUB_TOKEN={token}; echo LEAK-DONE")
    wait_for(server, "leaky", "LEAK-DONE")
    capture("leaky", socket_name=server.socket_name)
    cached = cache_path("leaky")
    text = cached.read_text()
    assert token not in text and "[REDACTED:github_token]" in text
    assert cached.stat().st_mode & 0o777 == 0o600
