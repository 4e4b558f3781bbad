"""Session ids for sources that carry none of their own: saved terminal output and tmux.

A Claude Code transcript or a stream-json run names its session; a pane capture, a
recording or a tmux pane does not, so its id is built here. An id must be

- unique: two different captures never share one (a second would replace the first's
  run in the store), and
- stable: scoring the same capture again files the run under the same id, so the store
  keeps one session with its runs, and a backfill does not judge it twice.

Saved output (`terminal:<file name>:<digest>`): the file's name, for people, and the first
10 hex digits of its content's SHA-256. The same bytes are the same capture wherever the
file lies and whatever it is called (a moved or copied capture keeps its id and its
history); a capture taken again later, or a recording that grew, is another snapshot
and gets another id. Two `pane-post-agent.txt` of one task run by two agents differ.

A tmux pane (`tmux:<session name>:<digest>`): the tmux session's name, and a digest of the
target as given, the session's creation time (tmux's `session_created`) and the
repository (resolved). Every capture of one running session, and its cached capture
after it ended, has the same id; a new session that reuses the name (tmux numbers them
`0`, `1`, ... again after a restart), or the same one scored against another repo, does
not.

Stores written before these ids kept `terminal:<folder>/<file name>` and `tmux:<target>`;
see `scorer.sinks._store_schema` (v4) for what happens to them.
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from pathlib import Path

__all__ = ["DIGEST_CHARS", "capture_id", "file_digest", "tmux_id"]

DIGEST_CHARS = 10
"""Hex digits of SHA-256 kept in an id (40 bits: no clash in any one person's store)."""
_CHUNK = 1 << 20


def file_digest(path: Path) -> str:
    """SHA-256 of a file's bytes, as hex (read in 1 MiB chunks).

    Raises:
        OSError: The file cannot be read.
    """
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def capture_id(name: str, sha256_hex: str) -> str:
    """The id of a saved capture or recording named `name` whose bytes hash to
    `sha256_hex`.

    Example:
        >>> capture_id("pane.txt", "3f9a2c1b7d0e" + "0" * 52)
        'terminal:pane.txt:3f9a2c1b7d'
    """
    return f"terminal:{name}:{sha256_hex[:DIGEST_CHARS]}"


def tmux_id(target: str, created: datetime | None, repo: Path | None) -> str:
    """The id of a tmux target's session: its session name, then a digest of the target,
    the session's creation time (None when unknown, as for a capture cached by an older
    version) and the repository.

    Example:
        >>> tmux_id("work:1.0", None, None).startswith("tmux:work:")
        True
    """
    when = created.isoformat() if created else ""
    where = str(repo.expanduser().resolve()) if repo else ""
    key = "\0".join((target, when, where)).encode()
    name = target.split(":", 1)[0]
    return f"tmux:{name}:{hashlib.sha256(key).hexdigest()[:DIGEST_CHARS]}"
