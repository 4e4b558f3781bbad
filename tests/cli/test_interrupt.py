"""Ctrl-C while the judge waits on the API: exit 130 with one line, no traceback and no
`Exception ignored … __del__` noise (issue 26, item 6). A backfill first says it waits
for the calls on the wire; a second Ctrl-C quits at once. The Anthropic API is a
loopback server that takes the request and never answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

DEMO = REPO / "examples" / "demo-session.jsonl"


class _SilentServer:
    """Accepts connections, reads the request and never answers."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.got_request = threading.Event()
        self.stop = threading.Event()
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(5)
            self.conns.append(conn)
            try:
                if conn.recv(65536):
                    self.got_request.set()
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        for conn in self.conns:
            conn.close()
        self.sock.close()


def ctrl_c_as_in_a_terminal() -> None:
    """In the child: SIGINT as a terminal gives it. A test run started in the background
    by a non-interactive shell (`pytest &`) ignores SIGINT, and its children inherit that."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _script(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(path)


def _wait_for(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out")
        time.sleep(0.05)


@pytest.mark.parametrize(
    "argv",
    [
        ["score-session", str(DEMO), "--judge", "llm"],
        ["score-backfill", "--judge", "llm", "--idle-minutes", "0", "--no-progress"],
    ],
    ids=["score-session", "score-backfill"],
)
def test_ctrl_c_while_the_judge_waits_ends_with_one_line_and_130(argv, tmp_path) -> None:
    projects = tmp_path / "projects" / "-home-dev-tinycalc"
    projects.mkdir(parents=True)
    (projects / "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00.jsonl").write_bytes(DEMO.read_bytes())
    server = _SilentServer()
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "SCORER_HOME": str(tmp_path / "home"),
        "SCORER_CACHE_DIR": str(tmp_path / "cache"),
        "SCORER_CLAUDE_PROJECTS": str(tmp_path / "projects"),
        "ANTHROPIC_API_KEY": "sk-ant-test-not-a-key",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.port}",
        "SCORER_PREP_PROCESSES": "0",
    }
    proc = subprocess.Popen(
        [_script(argv[0]), *argv[1:]],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        assert server.got_request.wait(60), "the judge never called the API"
        proc.send_signal(signal.SIGINT)
        if argv[0] == "score-backfill":
            # The backfill waits for calls on the wire (they are stored when they end) and
            # says so; a second Ctrl-C quits at once.
            _wait_for(lambda: any("Ctrl-C again to quit now" in line for line in lines))
            proc.send_signal(signal.SIGINT)
        try:
            out = proc.stdout.read() if proc.wait(timeout=30) is not None else ""
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail(f"still running 30 s after Ctrl-C; stderr: {''.join(lines)[-2000:]}")
        reader.join(timeout=5)
        err = "".join(lines)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        server.close()
    assert proc.returncode == 130, err
    assert "interrupted" in err or "quit with 1 session unfinished" in err, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert out == ""
