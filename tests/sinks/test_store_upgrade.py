"""Store schema v2: upgrade in place from v1, session metadata and timelines, bad stores."""

from __future__ import annotations

import gzip
import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.errors import SinkError
from scorer.models import SessionInfo, TimelineEvent
from scorer.sinks._store_schema import MIGRATIONS
from scorer.sinks.store import RunFilter, ScoreStore
from tests.sinks.cards import make_card

GH = "ghp" + "_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"


def _v1_store(path: Path) -> None:
    """A store as version 1 wrote it, with one run."""
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    db.execute("INSERT INTO schema_version VALUES (1)")
    db.execute(
        "INSERT INTO runs (session_id, source, status, judge, model, prompt_version, prompt_hash,"
        " rubric_version, rubric_hash, package_version, created_at) VALUES ('old-1', 'claude-code',"
        " 'scored', 'llm', 'm', 'v1', 'h', 'r1', 'rh', '0.1.0', '2026-11-01T10:00:00+00:00')"
    )
    db.execute(
        "INSERT INTO scores (run_id, session_id, name, value, label, normalized, position)"
        " VALUES (1, 'old-1', 'overall_quality', 0.4, NULL, 0.4, 0)"
    )
    db.commit()
    db.close()


def test_v1_store_upgrades_in_place_and_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    _v1_store(path)
    with ScoreStore(path) as store:
        assert store.schema_version == len(MIGRATIONS) == 4
        (run,) = store.runs()
        assert run.card.session_id == "old-1" and run.card.overall == pytest.approx(0.4)
        assert run.card.session == SessionInfo()  # not kept before v2
        store.save(make_card("new-1", session=SessionInfo(project="p")))
        assert [r.card.session_id for r in store.runs(RunFilter(project="p"))] == ["new-1"]
    with ScoreStore(path) as store:  # reopening does not migrate again
        assert store.schema_version == len(MIGRATIONS) and len(store.runs()) == 2


def test_session_info_round_trips_and_filters(tmp_path: Path) -> None:
    info = SessionInfo(
        started_at=datetime(2026, 11, 18, 8, 30, tzinfo=UTC),
        project="spotter",
        branch="main",
        agent_model="claude-opus-4-5",
        n_events=42,
    )
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        store.save(make_card("a", session=info))
        store.save(make_card("b", session=info.model_copy(update={"project": "other"})))
        assert store.latest("a").session == info
        row = store._query("SELECT started_at, project, branch, agent_model FROM runs")[0]
        assert tuple(row) == ("2026-11-18T08:30:00+00:00", "spotter", "main", "claude-opus-4-5")
        since = RunFilter(since=datetime(2026, 11, 18, tzinfo=UTC))
        assert len(store.runs(since)) == 2
        assert store.runs(RunFilter(until=datetime(2026, 11, 18, tzinfo=UTC))) == []
        (summary,) = store.list_runs(session_id="a")
        assert summary.session.project == "spotter" and len(summary.scores) == 7


def test_latest_per_session_keeps_the_newest_run(tmp_path: Path) -> None:
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        store.save(make_card("a", created_at=datetime(2026, 11, 1, tzinfo=UTC)))
        store.save(make_card("a", judge="heuristic", model=None))
        assert len(store.runs()) == 2
        (run,) = store.runs(RunFilter(latest_per_session=True))
        assert run.card.judge == "heuristic"


def test_timeline_is_stored_redacted_and_compressed(tmp_path: Path) -> None:
    card = make_card("t")
    card.attach_timeline([TimelineEvent(1, 0, "#1 prompt: fix it"), TimelineEvent(2, 1, GH)])
    with ScoreStore(tmp_path / "s.sqlite3") as store:
        store.save(card)
        events = store.timeline("t")
        assert events[0] == TimelineEvent(1, 0, "#1 prompt: fix it")
        assert GH not in events[1].text and "[REDACTED" in events[1].text
        blob = store.timeline_blob("t")
        assert json.loads(gzip.decompress(blob))[0] == [1, 0, "#1 prompt: fix it"]
        assert store.timeline("missing") is None
    assert card.model_dump().get("timeline") is None  # never in the scorecard JSON


def test_newer_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    ScoreStore(path).close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE schema_version SET version = 7")
    with pytest.raises(SinkError, match="newer than this scorer"):
        ScoreStore(path)


def test_a_file_that_is_not_a_store_is_one_line_exit_1(clean_env: Path) -> None:
    clean_env.mkdir(parents=True)
    (clean_env / "scores.sqlite3").write_bytes(b"this is not sqlite" * 100)
    result = CliRunner().invoke(app, ["scores", "list"])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "cannot open score store" in lines[0]
    assert "Traceback" not in result.output


def test_a_v1_store_missing_its_tables_fails_cleanly(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
        db.execute("INSERT INTO schema_version VALUES (1)")
    with pytest.raises(SinkError, match="no such table: runs"):
        ScoreStore(path)
    with sqlite3.connect(path) as db:  # the failed upgrade changed nothing
        assert db.execute("SELECT version FROM schema_version").fetchone() == (1,)
