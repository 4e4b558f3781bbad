"""The score store's SQLite schema: `MIGRATIONS[i]` upgrades version i to i+1.

v1: `runs` (one judged session) and `scores` (one row per dimension of a run).
v2: the session's start/end time, project, branch and agent model on `runs` (plus the
    rest of `SessionInfo` as JSON), and `timelines`: the redacted rendered timeline of
    each session, gzip-compressed JSON `[[index, depth, text], ...]`, for the viewer.
    Runs stored before v2 keep NULLs there (their session was not kept).
v3: the session's human `title` and `task` text and the run's `collection` (`production`,
    or `calibration` for runs `score-calibrate` judged) on `runs`. Older runs get the
    title their session info has, else the first prompt of their stored timeline
    (`AFTER[3]`), and stay in `production`.
v4: no new columns: saved terminal output is re-filed under its unique id and runs timed
    by their file get their run label's times, where the files are still there
    (`AFTER[4]`, `_store_reidentify`).
"""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from collections.abc import Callable

from scorer._identity import TASK_CHARS, cut_text, one_line
from scorer.sinks._store_reidentify import reidentify

__all__ = ["AFTER", "MIGRATIONS"]

MIGRATIONS: list[str] = [
    """
    CREATE TABLE runs (
        id              INTEGER PRIMARY KEY AUTOINCREMENT,
        session_id      TEXT NOT NULL,
        source          TEXT NOT NULL,
        status          TEXT NOT NULL CHECK (status IN ('scored', 'unscored')),
        unscored_reason TEXT,
        raw_reply       TEXT,
        judge           TEXT NOT NULL,
        model           TEXT,
        prompt_version  TEXT NOT NULL,
        prompt_hash     TEXT NOT NULL,
        rubric_version  TEXT NOT NULL,
        rubric_hash     TEXT NOT NULL,
        package_version TEXT NOT NULL,
        recommendation  TEXT,
        summary         TEXT NOT NULL DEFAULT '',
        accomplishments TEXT NOT NULL DEFAULT '[]',
        failures        TEXT NOT NULL DEFAULT '[]',
        unknown_refs    TEXT NOT NULL DEFAULT '[]',
        n_chunks        INTEGER NOT NULL DEFAULT 0,
        input_tokens    INTEGER NOT NULL DEFAULT 0,
        output_tokens   INTEGER NOT NULL DEFAULT 0,
        cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
        cache_write_tokens INTEGER NOT NULL DEFAULT 0,
        requests        INTEGER NOT NULL DEFAULT 0,
        cost_usd        REAL NOT NULL DEFAULT 0,
        created_at      TEXT NOT NULL,
        meta            TEXT NOT NULL DEFAULT '{}',
        pushed_at       TEXT,
        push_error      TEXT
    );
    CREATE INDEX runs_session ON runs (session_id, created_at);
    CREATE INDEX runs_identity ON runs (session_id, rubric_version, judge, model);
    CREATE INDEX runs_unpushed ON runs (pushed_at) WHERE pushed_at IS NULL;
    CREATE TABLE scores (
        run_id      INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        session_id  TEXT NOT NULL,
        name        TEXT NOT NULL,
        value       REAL NOT NULL,
        label       TEXT,
        normalized  REAL NOT NULL,
        rationale   TEXT NOT NULL DEFAULT '',
        evidence    TEXT NOT NULL DEFAULT '[]',
        position    INTEGER NOT NULL,
        PRIMARY KEY (run_id, name)
    );
    CREATE INDEX scores_name ON scores (name);
    """,
    """
    ALTER TABLE runs ADD COLUMN started_at TEXT;
    ALTER TABLE runs ADD COLUMN ended_at TEXT;
    ALTER TABLE runs ADD COLUMN project TEXT;
    ALTER TABLE runs ADD COLUMN branch TEXT;
    ALTER TABLE runs ADD COLUMN agent_model TEXT;
    ALTER TABLE runs ADD COLUMN session_info TEXT NOT NULL DEFAULT '{}';
    CREATE INDEX runs_started ON runs (started_at);
    CREATE INDEX runs_project ON runs (project, started_at);
    CREATE TABLE timelines (
        session_id  TEXT PRIMARY KEY,
        n_events    INTEGER NOT NULL,
        chars       INTEGER NOT NULL,
        events      BLOB NOT NULL,
        rendered_at TEXT NOT NULL
    );
    """,
    """
    ALTER TABLE runs ADD COLUMN title TEXT;
    ALTER TABLE runs ADD COLUMN task TEXT;
    ALTER TABLE runs ADD COLUMN collection TEXT NOT NULL DEFAULT 'production';
    CREATE INDEX runs_collection ON runs (collection, started_at);
    """,
    "",  # v4: Python only (AFTER[4])
]

_PROMPT = re.compile(r"^#\d+ USER: ?", re.MULTILINE)


def _titles_from_timelines(db: sqlite3.Connection) -> None:
    """Give runs stored before v3 a title and task: their session info's title, else the
    first prompt of their stored (redacted) timeline."""
    rows = db.execute("SELECT id, session_id, session_info FROM runs WHERE title IS NULL")
    for run_id, session_id, info_text in rows.fetchall():
        info = json.loads(info_text or "{}")
        prompt = _first_prompt(db, session_id)
        own = info.get("title")
        title = own or one_line(prompt)
        if title is None:
            continue
        info.update(title=title, title_from="session" if own else "first prompt")
        info.setdefault("task", cut_text(prompt, TASK_CHARS))
        db.execute(
            "UPDATE runs SET title = ?, task = ?, session_info = ? WHERE id = ?",
            (title, info["task"], json.dumps(info, ensure_ascii=False), run_id),
        )


def _first_prompt(db: sqlite3.Connection, session_id: str) -> str | None:
    row = db.execute("SELECT events FROM timelines WHERE session_id = ?", (session_id,)).fetchone()
    if row is None:
        return None
    for _, _, text in json.loads(gzip.decompress(row[0])):
        match = _PROMPT.match(text)
        if match:
            return text[match.end() :]
    return None


AFTER: dict[int, Callable[[sqlite3.Connection], None]] = {
    3: _titles_from_timelines,
    4: reidentify,
}
"""Python steps run right after the script that brings a store to that version."""
