"""Move what an earlier version wrongly kept in the home folder into the data dir.

Up to 0.1.0 the settings also read each field from its unprefixed name, so `HOME`
(always set) became `SCORER_HOME`: every user's store was `~/scores.sqlite3`, next to
`~/token-counts.sqlite3`, `~/langfuse-configs.json` and `~/tmux-cache/`. Now the default
is the platform's user data dir. The first run that finds such a store there, and no
store in the data dir yet, moves it (and those caches) over, with one note; when both
stores exist, nothing is moved and a warning names the old one, so no history is lost
silently. `SCORER_HOME` set explicitly turns all of this off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
from pathlib import Path

log = logging.getLogger("scorer.settings")

STORE = "scores.sqlite3"
CACHES = ("token-counts.sqlite3", "langfuse-configs.json", "tmux-cache")
"""What the old version also wrote into the home folder (safe to lose, moved when free)."""
_warned: set[Path] = set()


def adopt_legacy_home(data_dir: Path, home: Path | None = None) -> Path | None:
    """Move `home/scores.sqlite3` (and the old caches) into `data_dir` when it is ours.

    Args:
        data_dir: The store's folder now (the platform's user data dir).
        home: Where the old version put it (default: the user's home folder).

    Returns:
        The new store path when a store was moved, else None.
    """
    home = home if home is not None else Path.home()
    old, new = home / STORE, data_dir / STORE
    if old == new or not old.is_file() or not _is_store(old):
        return None
    if new.exists():
        if old not in _warned:
            _warned.add(old)
            log.warning(
                "an older score store is still at %s (the current one is %s); "
                "`scorer scores list` shows only the current one",
                old,
                new,
            )
        return None
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        _move_store(old, new)
    except OSError as exc:
        log.warning("could not move the score store %s to %s: %s", old, new, exc)
        return None
    for name in CACHES:
        _move_quietly(home / name, data_dir / name)
    log.info("moved the score store from %s to %s (an earlier version put it there)", old, new)
    return new


def _is_store(path: Path) -> bool:
    """A SQLite file holding the store's `runs` table (not someone else's file)."""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            row = con.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'"
            ).fetchone()
        finally:
            con.close()
    except sqlite3.Error:
        return False
    return row is not None


def _move_store(old: Path, new: Path) -> None:
    """Move a SQLite file without losing its write-ahead log and without clobbering.

    A checkpoint folds the WAL into the main file first. `link` + `unlink` never replaces
    a store another process created meanwhile; across file systems the file is copied
    with SQLite's backup API instead.
    """
    con = sqlite3.connect(old)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    try:
        os.link(old, new)
    except FileExistsError:
        raise OSError(f"{new} appeared meanwhile") from None
    except OSError:  # another file system (or no hard links): copy, then publish
        tmp = new.with_name(new.name + ".moving")
        src, dst = sqlite3.connect(old), sqlite3.connect(tmp)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
        os.link(tmp, new)
        tmp.unlink()
    old.unlink()
    for side in ("-wal", "-shm"):
        Path(str(old) + side).unlink(missing_ok=True)


def _move_quietly(old: Path, new: Path) -> None:
    if old.exists() and not new.exists():
        with contextlib.suppress(OSError):  # a cache: rebuilt when missing
            old.rename(new)
