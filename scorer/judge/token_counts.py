"""Claude's own token counts (`messages.count_tokens`), cached per request content.

The count of a request depends only on its model, system prompt, messages and output
schema, so it is cached under a sha256 of exactly those, on disk in the store's folder
(`$SCORER_HOME/token-counts.sqlite3`): a re-run of `--dry-run` or of a capped backfill
asks the API nothing it already asked.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from pathlib import Path
from typing import Any

_SCHEMA = "CREATE TABLE IF NOT EXISTS token_counts (key TEXT PRIMARY KEY, tokens INTEGER NOT NULL)"


def content_key(params: dict[str, Any]) -> str:
    """sha256 of what the count depends on (everything but `max_tokens` and `effort`)."""
    config = {k: v for k, v in (params.get("output_config") or {}).items() if k != "effort"}
    basis = [params["model"], params.get("system"), params["messages"], config]
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


class TokenCountCache:
    """A thread-safe key → tokens table; in memory only when `path` is None.

    Args:
        path: SQLite file (the edge passes `$SCORER_HOME/token-counts.sqlite3`).
    """

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._memory: dict[str, int] = {}
        self._path = path
        """Opened on first use: a run that counts nothing leaves no file."""
        self._db: sqlite3.Connection | None = None

    def _open(self) -> sqlite3.Connection | None:
        """The SQLite file (under the lock), opened now if it was not yet."""
        if self._db is None and self._path is not None:
            path, self._path = self._path, None  # tried once
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(path, check_same_thread=False)
                self._db.execute(_SCHEMA)
            except (OSError, sqlite3.Error):  # read-only home: a per-process cache still helps
                self._db = None
        return self._db

    def get(self, key: str) -> int | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
            db = self._open()
            if db is None:
                return None
            row = db.execute("SELECT tokens FROM token_counts WHERE key = ?", (key,)).fetchone()
            if row is not None:
                self._memory[key] = int(row[0])
            return self._memory.get(key)

    def put(self, key: str, tokens: int) -> None:
        with self._lock:
            self._memory[key] = tokens
            db = self._open()
            if db is not None:
                with db:
                    db.execute("INSERT OR REPLACE INTO token_counts VALUES (?, ?)", (key, tokens))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
