"""`score-session <langfuse session id>` end to end: read via v2 observations, score,
write eight session-level scores (the seven and goal_probability) back, idempotently (respx FakeLangfuse)."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.judge.rubric import default_rubric
from scorer.settings import get_settings
from tests.conftest import BIG_SESSION, require
from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse
from tests.langfuse.plugin_fixture import convert_transcript

runner = CliRunner()


@pytest.fixture
def langfuse_env(clean_env, monkeypatch):
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_HOST", HOST)  # the older name is honoured too
    get_settings.cache_clear()
    return clean_env


def test_langfuse_session_is_scored_and_written_back_once(langfuse_env):
    observations = convert_transcript(require(BIG_SESSION))
    sid = observations[0]["sessionId"]
    with FakeLangfuse(observations) as fake:
        # not found locally + Langfuse configured → the Langfuse source, pushed by default
        first = runner.invoke(app, ["session", sid, "--judge", "heuristic", "--json"])
        assert first.exit_code == 0, first.stderr
        data = json.loads(first.stdout)
        assert data["source"] == "langfuse" and data["session_id"] == sid
        assert fake.calls["observations"] <= math.ceil(len(observations) / 1000) + 1
        assert len(fake.score_batches) == 1
        batch = fake.score_batches[0]
        assert {i["name"] for i in batch} == {s.name for s in default_rubric().all_configs}
        prob = next(i for i in batch if i["name"] == "goal_probability")
        assert prob["value"] == data["goal_probability"] and prob["dataType"] == "NUMERIC"
        assert all(i["configId"] and i["sessionId"] == sid and not i.get("traceId") for i in batch)
        goal = next(i for i in batch if i["name"] == "goal_achievement")
        assert goal["value"] in {"failed", "partial", "complete", "exceeded"}
        assert f"/sessions/{sid}" in first.stderr  # the deep link

        again = runner.invoke(app, ["session", sid, "--judge", "heuristic", "--json"])
        assert again.exit_code == 0, again.stderr
        assert len(fake.score_batches) == 2
        assert [i["id"] for i in fake.score_batches[1]] == [i["id"] for i in batch]
        # same id AND same timestamp: Langfuse updates in place instead of adding a score
        assert [i["timestamp"] for i in fake.score_batches[1]] == [i["timestamp"] for i in batch]
        assert fake.session_score_ids()[sid] == {i["id"] for i in batch}


def test_unknown_langfuse_session_is_one_line(langfuse_env):
    with FakeLangfuse([]):
        result = runner.invoke(app, ["session", "no-such-session", "--source", "langfuse"])
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "no observations for session no-such-session" in lines[0]
