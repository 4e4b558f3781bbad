"""The real-Langfuse suite: a real self-hosted server, sessions uploaded by the real plugin.

Opt-in (`SCORER_LANGFUSE_REAL=1`, marker `langfuse_real`); every test skips with the
reason when something is not at hand:

* the server: a Langfuse answering at `SCORER_LANGFUSE_REAL_URL` (default
  http://localhost:3310, keys `SCORER_LANGFUSE_REAL_PUBLIC_KEY` / `..._SECRET_KEY`, default
  the seeded `pk-lf-local-…` / `sk-lf-local-…`), or, when none answers, one started (and
  stopped at the end) by `../shared/langfuse-real/setup.sh start` from an existing build
  in `$LF_SRC` (default /tmp/lf-src). The suite never builds the server: `setup.sh
  install` needs the server's source (`LF_GIT_DIR`) and 8.5 minutes, see docs/langfuse.md;
* the official Claude Code plugin (`langfuse/Claude-Observability-Plugin`): a checkout
  or git dir in `SCORER_LF_PLUGIN`; its hook runs on a Python with `langfuse>=4,<5`
  (`SCORER_LF_HOOK_PYTHON`, else a venv made once under the pytest cache with pip);
* the real transcripts in ../shared/data.

Sessions are uploaded the way users' arrive: the hook reads a real transcript (its
`sessionId` rewritten to a fresh id per run, so runs never meet on a long-lived server)
on a `SessionEnd` payload and sends OTel spans through the Langfuse SDK.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import CC_PROJECTS, REPO

URL = os.environ.get("SCORER_LANGFUSE_REAL_URL", "http://localhost:3310").rstrip("/")
PUBLIC = os.environ.get("SCORER_LANGFUSE_REAL_PUBLIC_KEY", "pk-lf-local-0000000000000000")
SECRET = os.environ.get("SCORER_LANGFUSE_REAL_SECRET_KEY", "sk-lf-local-0000000000000000")
SETUP = Path(os.environ.get("LF_SETUP", REPO / ".." / "shared" / "langfuse-real" / "setup.sh"))
LF_SRC = Path(os.environ.get("LF_SRC", "/tmp/lf-src"))
TRANSCRIPTS = {  # a real session of each shape: short, tool-heavy, another project
    "short": CC_PROJECTS / "-home-USER-projects-spotter" / "short.jsonl",
    "tool_heavy": CC_PROJECTS / "-home-USER-projects-spotter" / "tool_heavy.jsonl",
    "fasthooks": CC_PROJECTS / "-home-USER-projects-fasthooks" / "sample_main_transcript.jsonl",
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.langfuse_real)


def _healthy(url: str) -> dict[str, Any] | None:
    try:
        answer = httpx.get(f"{url}/api/public/health", timeout=5)
    except httpx.HTTPError:
        return None
    return answer.json() if answer.status_code == 200 else None


@dataclass
class RealServer:
    """A running Langfuse and what we know about it."""

    url: str
    version: str
    started_here: bool
    env: dict[str, str] = field(default_factory=dict)


@pytest.fixture(scope="session")
def real_server() -> Iterator[RealServer]:
    if os.environ.get("SCORER_LANGFUSE_REAL") != "1":
        pytest.skip("the real-Langfuse suite is opt-in: SCORER_LANGFUSE_REAL=1 (docs/langfuse.md)")
    health, started = _healthy(URL), False
    if health is None:
        if not (SETUP.exists() and (LF_SRC / "web" / ".next").exists()):
            pytest.skip(
                f"no Langfuse answers at {URL} and there is no server build at {LF_SRC} "
                f"to start ({SETUP} install builds one from the server's source)"
            )
        subprocess.run(["bash", str(SETUP), "start"], check=True, capture_output=True)
        health, started = _healthy(URL), True
        assert health is not None, f"{SETUP} start did not bring up {URL}"
    env = {"LANGFUSE_BASE_URL": URL, "LANGFUSE_PUBLIC_KEY": PUBLIC, "LANGFUSE_SECRET_KEY": SECRET}
    yield RealServer(URL, str(health.get("version")), started, env)
    if started:
        subprocess.run(["bash", str(SETUP), "stop"], check=False, capture_output=True)


@pytest.fixture(scope="session")
def hook(tmp_path_factory, real_server: RealServer) -> tuple[str, Path]:
    """(python, hook script) of the official plugin."""
    plugin = os.environ.get("SCORER_LF_PLUGIN")
    if not plugin:
        pytest.skip("SCORER_LF_PLUGIN is not set (a checkout of the Claude Code plugin)")
    root = Path(plugin)
    script = root / "hooks" / "langfuse_hook.py"
    if not script.exists():  # a git dir: take the hook out of HEAD
        out = tmp_path_factory.mktemp("plugin") / "langfuse_hook.py"
        shown = subprocess.run(
            ["git", f"--git-dir={root}", "show", "HEAD:hooks/langfuse_hook.py"],
            capture_output=True,
        )
        if shown.returncode != 0:
            pytest.skip(f"no hooks/langfuse_hook.py in {root}")
        out.write_bytes(shown.stdout)
        script = out
    return _hook_python(tmp_path_factory), script


def _hook_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("SCORER_LF_HOOK_PYTHON")
    if given:
        return given
    venv = tmp_path_factory.getbasetemp().parent / "lf-hook-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip = [str(python), "-m", "pip", "install", "-q", "langfuse>=4,<5"]
        if subprocess.run(pip, capture_output=True).returncode != 0:
            pytest.skip("could not install langfuse>=4,<5 for the plugin's hook")
    return str(python)


@dataclass
class Uploaded:
    """Sessions the plugin's hook sent, with their local copies."""

    ids: dict[str, str]
    """Transcript name → the session id it was uploaded under."""
    files: dict[str, Path]
    first: datetime
    last: datetime
    upload_seconds: float


@pytest.fixture(scope="session")
def uploaded(tmp_path_factory, real_server: RealServer, hook: tuple[str, Path]) -> Uploaded:
    for path in TRANSCRIPTS.values():
        if not path.exists():
            pytest.skip(f"real data not available: {path}")
    python, script = hook
    work = tmp_path_factory.mktemp("uploads")
    run = uuid.uuid4().hex[:8]
    ids, files, stamps = {}, {}, []
    started = time.monotonic()
    for name, src in TRANSCRIPTS.items():
        sid = f"real-{run}-{name}"
        dst = work / f"{sid}.jsonl"
        stamps += _rewrite(src, dst, sid)
        payload = {"session_id": sid, "transcript_path": str(dst), "hook_event_name": "SessionEnd"}
        env = {**os.environ, **real_server.env, "HOME": str(work / "home")}
        done = subprocess.run(
            [python, str(script)], input=json.dumps(payload).encode(), env=env, capture_output=True
        )
        assert done.returncode == 0, done.stderr.decode()[-2000:]
        ids[name], files[name] = sid, dst
    _wait_for_observations(real_server, ids.values())
    return Uploaded(ids, files, min(stamps), max(stamps), time.monotonic() - started)


def _rewrite(src: Path, dst: Path, session_id: str) -> list[datetime]:
    """Copy a transcript under another session id; returns its timestamps."""
    stamps = []
    with src.open() as inp, dst.open("w") as out:
        for line in inp:
            try:
                row = json.loads(line)
            except ValueError:
                out.write(line)
                continue
            if isinstance(row, dict):
                if "sessionId" in row:
                    row["sessionId"] = session_id
                if isinstance(row.get("timestamp"), str):
                    stamps.append(datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")))
            out.write(json.dumps(row) + "\n")
    return stamps


def _wait_for_observations(server: RealServer, session_ids: Any, timeout: float = 180) -> None:
    """Ingestion is asynchronous (queue → worker → ClickHouse): wait until each session
    reads back with a root observation."""
    auth = (PUBLIC, SECRET)
    deadline = time.monotonic() + timeout
    pending = set(session_ids)
    while pending and time.monotonic() < deadline:
        for sid in list(pending):
            answer = httpx.get(
                f"{server.url}/api/public/v2/observations",
                params={"sessionId": sid, "fields": "core,basic", "limit": 5},
                auth=auth,
                timeout=30,
            )
            if answer.status_code == 200 and answer.json()["data"]:
                pending.discard(sid)
        time.sleep(2)
    assert not pending, f"the server never showed {sorted(pending)}"


@pytest.fixture
def on_real_server(monkeypatch, real_server: RealServer) -> RealServer:
    """This test's scorer env pointed at the real server, with real waits (ingestion is
    asynchronous: the read-back waits for the worker as it would for a user)."""
    from scorer import langfuse_client
    from scorer.settings import get_settings

    monkeypatch.setattr(langfuse_client.RETRY, "sleep", time.sleep)
    for key, value in real_server.env.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    return real_server


@dataclass
class Exchange:
    method: str
    url: str
    status: int


@pytest.fixture
def wire(monkeypatch, real_server: RealServer) -> list[Exchange]:
    """Every HTTP exchange this process has with the real server (in-process runs)."""
    seen: list[Exchange] = []
    send = httpx.Client.send

    def recording(self: httpx.Client, request: httpx.Request, **kw: Any) -> httpx.Response:
        response = send(self, request, **kw)
        if str(request.url).startswith(real_server.url):
            seen.append(Exchange(request.method, str(request.url), response.status_code))
        return response

    monkeypatch.setattr(httpx.Client, "send", recording)
    return seen
