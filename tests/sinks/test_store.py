"""The SQLite score store: round trips, replacement, transactions, redaction, push state."""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scorer.errors import SinkError
from scorer.sinks import store as store_mod
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card, unscored_card

GH = "ghp" + "_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"


@pytest.fixture
def store(tmp_path: Path) -> ScoreStore:
    with ScoreStore(tmp_path / "s.sqlite3") as s:
        yield s


def _count(store: ScoreStore, table: str) -> int:
    return store._query(f"SELECT COUNT(*) AS n FROM {table}")[0]["n"]


def test_default_path_is_under_scorer_home(clean_env: Path) -> None:
    with ScoreStore() as s:
        assert s.path == clean_env / "scores.sqlite3"
        assert s.path.exists()
        assert s.schema_version == len(store_mod._MIGRATIONS)
        assert s._query("PRAGMA journal_mode")[0][0] == "wal"
        assert s._query("PRAGMA foreign_keys")[0][0] == 1


def test_round_trip_rebuilds_the_same_scorecard(store: ScoreStore) -> None:
    card = make_card()
    run_id = store.save(card)
    assert run_id == 1
    back = store.latest("sess-1")
    assert back == card
    assert list(back.scores) == list(card.scores)  # rubric order kept
    assert back.overall == pytest.approx(card.overall)
    assert back.scores["goal_achievement"].label == "complete"
    assert back.scores["tool_efficiency"].evidence[1].valid is False


def test_unscored_round_trip(store: ScoreStore) -> None:
    card = unscored_card()
    store.save(card)
    back = store.latest("sess-u")
    assert back.status == "unscored"
    assert back.raw_reply == "Sorry, I cannot"
    assert back.scores == {}
    assert not store.is_scored("sess-u", card.rubric_version, card.model, "llm")


def test_same_identity_replaces_other_model_or_version_is_kept(store: ScoreStore) -> None:
    store.save(make_card(values={"process_adherence": 2}))
    store.save(make_card(values={"process_adherence": 5}))  # same identity → replace
    assert _count(store, "runs") == 1
    assert _count(store, "scores") == 7
    assert store.latest("sess-1").scores["process_adherence"].value == 5
    store.save(make_card(model="claude-opus-5"))
    store.save(make_card(rubric_version="2025-01-01.1"))
    store.save(make_card(judge="heuristic", model=None))
    store.save(make_card(judge="heuristic", model=None))  # NULL model still replaces
    assert _count(store, "runs") == 4
    assert _count(store, "scores") == 28
    assert len(store.scorecards(judge="llm")) == 3
    assert [c.model for c in store.scorecards(rubric_version="2025-01-01.1")] == [
        "claude-sonnet-5-5"
    ]
    assert store.latest("sess-1", judge="heuristic").model is None
    assert store.latest("sess-1", model="claude-opus-5").model == "claude-opus-5"


def test_crash_mid_write_leaves_nothing(store: ScoreStore, monkeypatch) -> None:
    store.save(make_card(values={"process_adherence": 2}))

    def boom(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(ScoreStore, "_insert_scores", boom)
    with pytest.raises(SinkError, match="cannot save scores for sess-1"):
        store.save(make_card(values={"process_adherence": 5}))
    # the replacement was rolled back with the insert: the old run is intact
    assert _count(store, "runs") == 1
    assert store.latest("sess-1").scores["process_adherence"].value == 2


def test_secrets_are_redacted_before_storing(store: ScoreStore) -> None:
    card = make_card(
        rationale="the agent printed " + GH + " in #7",
        summary="Leaked " + GH,
        meta={"env": {"GITHUB_TOKEN": GH}},
        failures=["pushed with " + GH],
        raw_reply="{'token': '" + GH + "'}",
    )
    store.save(card)
    store.close()
    assert GH.encode() not in store.path.read_bytes()
    with ScoreStore(store.path) as reopened:
        back = reopened.latest("sess-1")
    assert GH not in back.model_dump_json()
    assert back.summary == "Leaked [REDACTED:github_token]"
    assert back.meta["env"]["GITHUB_TOKEN"] == "[REDACTED:github_token]"
    assert back.session_id == "sess-1" and back.prompt_hash == "abc123"


def test_list_runs_newest_first_with_overall_and_goal(store: ScoreStore) -> None:
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    for i in range(5):
        store.save(make_card(f"s{i}", created_at=t0 + timedelta(days=i)))
    store.save(
        make_card("s4", judge="heuristic", model=None, values={"goal_achievement": "failed"})
    )
    runs = store.list_runs()
    # the heuristic card is dated 2026-11-20, after every llm card
    assert [(r.session_id, r.judge) for r in runs[:3]] == [
        ("s4", "heuristic"),
        ("s4", "llm"),
        ("s3", "llm"),
    ]
    assert runs[0].goal == "failed" and runs[1].goal == "complete"
    assert runs[1].overall == pytest.approx(make_card().overall)
    assert runs[0].overall < runs[1].overall
    assert len(store.list_runs(limit=2)) == 2
    assert {r.judge for r in store.list_runs(session_id="s4")} == {"llm", "heuristic"}
    recent = store.list_runs(judge="llm", since=t0 + timedelta(days=3))
    assert [r.session_id for r in recent] == ["s4", "s3"]


def test_push_state(store: ScoreStore) -> None:
    a, b = make_card("a"), make_card("b")
    store.save(a)
    store.save(b)
    assert [c.session_id for c in store.unpushed()] == ["a", "b"]
    assert store.mark_pushed("a", "llm", a.model, a.rubric_version) == 1
    assert store.mark_pushed("b", "llm", b.model, b.rubric_version, error="HTTP 500 " + GH) == 1
    assert [c.session_id for c in store.unpushed()] == ["b"]
    runs = {r.session_id: r for r in store.list_runs()}
    assert runs["a"].pushed_at is not None and runs["a"].push_error is None
    assert runs["b"].pushed_at is None
    assert runs["b"].push_error == "HTTP 500 [REDACTED:github_token]"
    store.save(make_card("a"))  # re-scored: must be pushed again
    assert {c.session_id for c in store.unpushed()} == {"a", "b"}


def test_is_scored_and_find_sessions(store: ScoreStore) -> None:
    card = make_card("ae4a77f8-aedd")
    store.save(card)
    assert store.is_scored("ae4a77f8-aedd", card.rubric_version, card.model, "llm")
    assert not store.is_scored("ae4a77f8-aedd", "old", card.model, "llm")
    assert not store.is_scored("ae4a77f8-aedd", card.rubric_version, "other", "llm")
    assert store.find_sessions("ae4a") == ["ae4a77f8-aedd"]
    assert store.find_sessions("ae4_") == []  # LIKE wildcards are escaped


def test_worker_threads_share_one_store(store: ScoreStore) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(5):
                store.save(make_card(f"t{i}-{j}"))
                store.latest(f"t{i}-{j}")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert _count(store, "runs") == 40
    assert _count(store, "scores") == 280


def test_reopen_keeps_data_and_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with ScoreStore(path) as s:
        s.save(make_card())
    with ScoreStore(path) as s:
        assert s.latest("sess-1") is not None
        with s._tx() as db:
            db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(SinkError, match="newer than this scorer"):
        ScoreStore(path)


def test_unopenable_path_is_a_sink_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(SinkError, match="cannot open score store"):
        ScoreStore(blocker / "s.sqlite3")
