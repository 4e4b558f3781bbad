"""Store v4: a v3 store's terminal runs are re-filed under their unique ids and its
Terminal-Bench runs timed by their file get their label's times (issue 33 item 6)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scorer.models import SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.conftest import TERMINAL_BENCH, require
from tests.sinks.cards import make_card

FILE_TIME = datetime(2026, 11, 28, 6, 48, tzinfo=UTC)


def _as_v3(path: Path, cards: list) -> None:
    """A store holding `cards` as version 3 left it (v4 adds no columns)."""
    with ScoreStore(path) as store:
        for card in cards:
            store.save(card)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = 3")


def _terminal_card(session_id: str, origin: Path, **kw):
    card = make_card(session_id, source="terminal", **kw)
    card.meta["origin"] = str(origin)
    return card


def test_old_terminal_ids_are_refiled_where_the_file_is_still_there(tmp_path: Path) -> None:
    one, two = tmp_path / "coder" / "task", tmp_path / "gpt5" / "task"
    for folder, text in ((one, "$ make\nok\n"), (two, "$ make\nfailed\n")):
        folder.mkdir(parents=True)
        (folder / "pane.txt").write_text(text)
    gone = tmp_path / "gone" / "pane.txt"
    card = _terminal_card("terminal:task/pane.txt", one / "pane.txt")
    card.attach_timeline([TimelineEvent(1, 0, "#1 TERMINAL: $ make")])
    kept = _terminal_card("terminal:gone/pane.txt", gone)
    tmux = make_card("tmux:age", source="tmux")
    store_path = tmp_path / "s.sqlite3"
    _as_v3(store_path, [card, kept, tmux])

    with ScoreStore(store_path) as store:
        digest = hashlib.sha256(b"$ make\nok\n").hexdigest()[:10]
        new_id = f"terminal:pane.txt:{digest}"
        assert {r.card.session_id for r in store.runs()} == {
            new_id,
            "terminal:gone/pane.txt",  # nothing can score it again: kept
            "tmux:age",  # when that session started is not known: kept
        }
        assert store.latest(new_id).overall == card.overall  # its scores came along
        assert store.timeline(new_id) == [TimelineEvent(1, 0, "#1 TERMINAL: $ make")]
        assert store.timeline("terminal:task/pane.txt") is None
        # scoring the file again now lands on the same session, not a second one
        again = resolve(str(one / "pane.txt")).load()
        assert again.session_id == new_id
        other = resolve(str(two / "pane.txt")).load()
        assert other.session_id != new_id  # the other agent's pane of the same task


def test_file_timed_runs_get_their_label_times(tmp_path: Path) -> None:
    run = tmp_path / "fix-git"
    run.mkdir()
    (run / "session.jsonl").write_text("{}\n")
    (run / "label.json").write_text(
        json.dumps(
            {
                "agent_started_at": "2025-11-09T07:26:24.404842+00:00",
                "agent_ended_at": "2025-11-09T07:27:17.317684+00:00",
            }
        )
    )
    timed = SessionInfo(started_at=FILE_TIME, ended_at=FILE_TIME, times_from="file")
    card = make_card("run-1", source="stream-json", session=timed)
    card.meta["origin"] = str(run / "session.jsonl")
    events = make_card("run-2", session=timed.model_copy(update={"times_from": "events"}))
    events.meta["origin"] = str(run / "session.jsonl")
    store_path = tmp_path / "s.sqlite3"
    _as_v3(store_path, [card, events])

    with ScoreStore(store_path) as store:
        info = store.latest("run-1").session
        assert info.times_from == "label"
        assert info.started_at == datetime(2025, 11, 9, 7, 26, 24, 404842, tzinfo=UTC)
        assert info.ended_at == datetime(2025, 11, 9, 7, 27, 17, 317684, tzinfo=UTC)
        row = store._query("SELECT started_at FROM runs WHERE session_id = 'run-1'")[0]
        assert row["started_at"] == "2025-11-09T07:26:24.404842+00:00"  # trends read this
        assert store.latest("run-2").session.started_at == FILE_TIME  # its own times: kept


def test_real_terminal_bench_runs_migrate(tmp_path: Path) -> None:
    folder = require(TERMINAL_BENCH / "chess-best-move")
    pane = folder / "pane-post-agent.txt"
    timed = SessionInfo(started_at=FILE_TIME, ended_at=FILE_TIME, times_from="file")
    card = _terminal_card("terminal:chess-best-move/pane-post-agent.txt", pane, session=timed)
    store_path = tmp_path / "s.sqlite3"
    _as_v3(store_path, [card])
    with ScoreStore(store_path) as store:
        (run,) = store.runs()
        assert run.card.session_id == resolve(str(pane)).load().session_id
        assert run.card.session.times_from == "label"
        assert run.card.session.started_at.date().isoformat() == "2025-11-09"


@pytest.mark.parametrize("origin", [None, "relative/pane.txt", 7])
def test_runs_without_a_usable_origin_are_left_alone(tmp_path: Path, origin) -> None:
    card = make_card("terminal:x/pane.txt", source="terminal")
    if origin is not None:
        card.meta["origin"] = origin
    store_path = tmp_path / "s.sqlite3"
    _as_v3(store_path, [card])
    with ScoreStore(store_path) as store:
        assert [r.card.session_id for r in store.runs()] == ["terminal:x/pane.txt"]
