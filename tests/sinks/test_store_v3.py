"""Store schema v3: titles, task text and collections; a v2 store upgrades in place."""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

from scorer.models import SessionInfo
from scorer.sinks._store_schema import MIGRATIONS
from scorer.sinks.store import RunFilter, ScoreStore
from tests.sinks.cards import make_card

GH = "ghp" + "_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"


def _v2_store(path: Path) -> None:
    """A store as version 2 wrote it: one run with a timeline, one with a title, one bare."""
    db = sqlite3.connect(path)
    for script in MIGRATIONS[:2]:
        db.executescript(script)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (2)")
    columns = (
        "session_id, source, status, judge, model, prompt_version, prompt_hash, rubric_version,"
        " rubric_hash, package_version, created_at, session_info, project"
    )
    for sid, info in (
        ("with-timeline", {"project": "tinycalc"}),
        ("with-title", {"title": "Summary line from Claude Code"}),
        ("bare", {}),
    ):
        db.execute(
            f"INSERT INTO runs ({columns}) VALUES (?, 'claude-code', 'scored', 'llm', 'm', 'v1',"
            " 'h', 'r1', 'rh', '0.1.0', '2026-11-01T10:00:00+00:00', ?, ?)",
            (sid, json.dumps(info), info.get("project")),
        )
    events = [[1, 0, "#1 USER: Fix median() in stats.py\nand run the tests"], [2, 0, "#2 X"]]
    blob = gzip.compress(json.dumps(events).encode())
    db.execute(
        "INSERT INTO timelines VALUES ('with-timeline', 2, 40, ?, '2026-11-01T10:00:00+00:00')",
        (blob,),
    )
    db.commit()
    db.close()


def test_v2_store_upgrades_with_titles_from_its_timelines(tmp_path: Path) -> None:
    path = tmp_path / "v2.sqlite3"
    _v2_store(path)
    with ScoreStore(path) as store:
        assert store.schema_version == len(MIGRATIONS) == 4
        cards = {r.card.session_id: r.card for r in store.runs()}
        timeline = cards["with-timeline"]
        assert timeline.title == "Fix median() in stats.py"
        assert timeline.session.title_from == "first prompt"
        assert timeline.session.task == "Fix median() in stats.py\nand run the tests"
        assert timeline.session.project == "tinycalc"
        assert cards["with-title"].title == "Summary line from Claude Code"
        assert cards["with-title"].session.title_from == "session"
        assert cards["bare"].title is None
        assert {c.collection for c in cards.values()} == {"production"}
        found = store.runs(RunFilter(search="MEDIAN"))
        assert [r.card.session_id for r in found] == ["with-timeline"]
    with ScoreStore(path) as store:  # reopening does not migrate again
        assert store.schema_version == len(MIGRATIONS) and len(store.runs()) == 3


def test_title_task_and_collection_round_trip_redacted(tmp_path: Path) -> None:
    info = SessionInfo(title="Ship it", task=f"deploy with {GH}", project="p")
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        store.save(make_card("prod", session=info))
        calib = make_card("calib", session=info.model_copy(update={"title": "Calibrate me"}))
        calib.collection = "calibration"
        store.save(calib)
        (prod,) = store.runs()
        assert prod.card.title == "Ship it" and prod.card.collection == "production"
        assert GH not in (prod.card.session.task or "")
        row = store._query("SELECT title, task FROM runs WHERE session_id = 'prod'")[0]
        assert row["title"] == "Ship it" and GH not in row["task"]
        assert [r.card.session_id for r in store.runs(RunFilter(collection="calibration"))] == [
            "calib"
        ]
        assert len(store.runs(RunFilter(collection=None))) == 2
        assert store.count_runs() == 2 and store.count_runs(RunFilter()) == 1
        assert {r.session_id for r in store.list_runs()} == {"prod", "calib"}
        (listed,) = store.list_runs(where=RunFilter(search="calibrate", collection=None))
        assert listed.title == "Calibrate me" and listed.collection == "calibration"
        assert store.list_runs(where=RunFilter(search="calibrate", collection="production")) == []
        assert len(store.scorecards()) == 2  # calibration reads every collection


def test_search_treats_like_wildcards_literally(tmp_path: Path) -> None:
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        store.save(make_card("a", session=SessionInfo(title="100% done")))
        store.save(make_card("b", session=SessionInfo(title="1000 done")))
        assert [r.card.session_id for r in store.runs(RunFilter(search="100%"))] == ["a"]
        assert [r.card.session_id for r in store.runs(RunFilter(search="_done"))] == []


def test_collections_are_apart_for_the_same_judge_identity(tmp_path: Path) -> None:
    """A calibration run of a session never replaces, hides or stands in for its production
    run of the same judge, model and rubric (issue 33 item 3), nor the other way round."""
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        calib = make_card("s1", values={"output_quality": 2})
        calib.collection = "calibration"
        store.save(calib)
        key = ("s1", calib.rubric_version, calib.model, calib.judge)
        assert not store.is_scored(*key)  # production: nothing yet
        assert store.is_scored(*key, collection="calibration")
        assert store.unpushed() == []  # a calibration run is never pushed
        store.save(make_card("s1", values={"output_quality": 4}))
        assert store.is_scored(*key) and store.count_runs(RunFilter(collection=None)) == 2
        prod = store.latest("s1", collection="production")
        assert prod is not None and prod.scores["output_quality"].value == 4
        assert [c.collection for c in store.unpushed()] == ["production"]
        store.mark_pushed("s1", calib.judge, calib.model, calib.rubric_version)
        assert store.unpushed() == []
        (kept,) = store.runs(RunFilter(collection="calibration"))
        assert kept.card.scores["output_quality"].value == 2 and kept.pushed_at is None
