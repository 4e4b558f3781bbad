"""Store v4: runs stored before unique terminal ids and run-label times, brought up to date.

Runs once, when a v3 store is opened:

- A saved capture or recording used to be filed as `terminal:<folder>/<file name>`, so
  two `pane-post-agent.txt` of one task shared an id (the second replaced the first).
  Each such run whose file (`meta.origin`) is still there is re-filed under the id its
  file gets now (`sources._ids.capture_id`), scores and timeline with it, so scoring the
  file again adds to its history rather than starting a second session. A run whose
  file is gone keeps its old id (nothing can score it again, so nothing is doubled).
- A run whose times were the file's (`times_from == "file"`) and whose run folder has a
  `label.json` (Terminal-Bench) gets the label's start and end (`times_from == "label"`),
  so trends put each run on its own day without judging it again.

Old tmux ids (`tmux:<target>`) are kept: when that session started is not known any
more. The next capture of a session is filed under its new id (`tmux:<name>:<digest>`).
Scorecards already pushed to Langfuse keep their old session id there.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from scorer.sinks._store_query import iso

__all__ = ["reidentify"]

_WHEN = TypeAdapter(datetime)


def reidentify(db: sqlite3.Connection) -> None:
    """Re-file old terminal ids and re-time label-timed runs (see the module doc)."""
    # Sources load their parsers on import; a store opened by `scores list` should not.
    from scorer.sources._run_label import label_times

    renamed: dict[str, str] = {}
    rows = db.execute("SELECT id, session_id, source, meta, session_info FROM runs").fetchall()
    for run_id, session_id, source, meta_text, info_text in rows:
        origin = _origin(meta_text)
        if origin is None:
            continue
        if source == "terminal" and "/" in session_id:
            new_id = _capture_id(origin)
            if new_id is not None:
                _rename_run(db, run_id, new_id)
                renamed[session_id] = new_id
        info = json.loads(info_text or "{}")
        if info.get("times_from") == "file":
            label = label_times(origin)
            if label.started is not None:
                _retime(db, run_id, info, label.started, label.ended)
    for old, new in renamed.items():
        db.execute(
            "UPDATE OR REPLACE timelines SET session_id = ? WHERE session_id = ?", (new, old)
        )


def _origin(meta_text: str | None) -> Path | None:
    """The run's file, when it was stored as an absolute path (a relative one would be
    read against today's working directory)."""
    origin = json.loads(meta_text or "{}").get("origin")
    path = Path(origin) if isinstance(origin, str) else None
    return path if path is not None and path.is_absolute() else None


def _capture_id(origin: Path) -> str | None:
    from scorer.sources._ids import capture_id, file_digest

    try:
        return capture_id(origin.name, file_digest(origin)) if origin.is_file() else None
    except OSError:
        return None


def _rename_run(db: sqlite3.Connection, run_id: int, new_id: str) -> None:
    db.execute("UPDATE runs SET session_id = ? WHERE id = ?", (new_id, run_id))
    db.execute("UPDATE scores SET session_id = ? WHERE run_id = ?", (new_id, run_id))


def _retime(
    db: sqlite3.Connection,
    run_id: int,
    info: dict[str, Any],
    started: datetime,
    ended: datetime | None,
) -> None:
    info.update(
        started_at=_WHEN.dump_python(started, mode="json"),
        ended_at=_WHEN.dump_python(ended, mode="json") if ended else None,
        times_from="label",
    )
    db.execute(
        "UPDATE runs SET started_at = ?, ended_at = ?, session_info = ? WHERE id = ?",
        (iso(started), iso(ended) if ended else None, json.dumps(info, ensure_ascii=False), run_id),
    )
