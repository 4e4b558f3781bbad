"""Which score write a Langfuse server takes, decided before the first score is sent.

    path        request                                   servers
    list        POST /api/public/scores, a list of 7-8    Langfuse Cloud; self-hosted newer
                (202 / 207)                                than 4.16
    ingestion   POST /api/public/ingestion, 7-8           self-hosted up to 4.16.x (v3, v4):
                `score-create` events (207)               measured on a real 4.16.0
    single      POST /api/public/scores, one object per   a server that refused the list
                score (200 {id})                          body although its version said
                                                          otherwise (remembered on disk)

Self-hosted servers up to 4.16 refuse a list body with 400 and stamp a single POST's score
with their own clock; their ingestion endpoint takes the seven or eight scores in one request and
keeps each event's timestamp as the score's, so a re-push lands on the same row.

The decision costs one `GET /api/public/health` per self-hosted host and process (Cloud
pays nothing): it is unauthenticated and never refused. Under concurrency only one thread
asks (`Capabilities.trying`). A list POST that a server refuses after all flips that host
to `single` and is remembered in `$SCORER_HOME/langfuse-servers.json` with the server's
version, so no later process sends it again until the server is upgraded.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, cast
from urllib.parse import urlsplit

from scorer.errors import SinkError
from scorer.langfuse_caps import capabilities
from scorer.langfuse_client import LangfuseClient
from scorer.settings import get_settings

WriteMode = Literal["list", "ingestion", "single"]
LAST_ONE_OBJECT = (4, 16)
"""The newest server line known (measured) to refuse list bodies: 4.16.x."""
SERVERS_FILE = "langfuse-servers.json"
log = logging.getLogger(__name__)
_FILE_LOCK = threading.Lock()


def is_cloud(host: str) -> bool:
    """Langfuse Cloud (any region): takes the SDK's list body, no probe needed."""
    name = urlsplit(host).hostname or ""
    return name == "cloud.langfuse.com" or name.endswith(".cloud.langfuse.com")


def parse_version(text: str | None) -> tuple[int, ...] | None:
    """`"4.16.0"` / `"v3.179.1-rc1"` → `(4, 16, 0)` / `(3, 179, 1)`; None if not a version."""
    match = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", (text or "").strip())
    if not match:
        return None
    return tuple(int(part) for part in match.groups(default="0"))


def mode_for_version(version: tuple[int, ...] | None) -> WriteMode:
    """The write path a server version takes (pure). Unknown versions get the list body;
    a refusal then switches to `single` and is remembered (`remember_refusal`)."""
    if version is not None and version[:2] <= LAST_ONE_OBJECT:
        return "ingestion"
    return "list"


def score_write_mode(client: LangfuseClient) -> WriteMode:
    """The write path for `client.host`: decided once per host and process.

    Raises:
        CredentialsError: Never (the health endpoint takes no credentials).
    """
    caps = capabilities(client)
    with caps.trying("score_write") as known:
        if known is not None:
            return cast(WriteMode, known)
        mode = _decide(client)
        caps.score_write = mode
        return mode


def _decide(client: LangfuseClient) -> WriteMode:
    if is_cloud(client.host):
        return "list"
    version = server_version(client)
    caps = capabilities(client)
    caps.version = version
    remembered = _read().get(client.host, {})
    if remembered.get("refused_list") and remembered.get("version") == version:
        return "single"
    mode = mode_for_version(parse_version(version))
    log.debug("Langfuse at %s is version %s: scores go by %s", client.host, version, mode)
    return mode


def server_version(client: LangfuseClient) -> str | None:
    """`GET /api/public/health` → the version string, or None when it does not say."""
    try:
        health = client.call(
            client.api.health.health,
            error=SinkError,
            what="reading the server version",
            passthrough=(404, 405, 503),
        )
    except Exception as exc:  # advisory: an unknown version gets the list, then learns
        log.debug("Langfuse at %s: no version from /api/public/health (%s)", client.host, exc)
        return None
    return str(health.version) if health.version else None


def remember_refusal(client: LangfuseClient) -> None:
    """This host refused a list body: `single` from now on, in every process, until the
    server reports another version."""
    caps = capabilities(client)
    caps.score_write, caps.score_list = "single", False
    entry: dict[str, object] = {
        "version": caps.version,
        "refused_list": True,
        "seen_at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    with _FILE_LOCK:
        data = _read()
        data[client.host] = entry
        _write(data)


def _path() -> Path:
    return get_settings().home / SERVERS_FILE


def _read() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(data: dict[str, dict[str, object]]) -> None:
    path = _path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
    os.replace(tmp, path)  # readers in other processes never see half a file
