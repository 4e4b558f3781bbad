"""A session whose judge fails after some calls still tells the user what those cost."""

from __future__ import annotations

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.settings import get_settings
from tests.conftest import REPO
from tests.jobs.test_backfill_inflight import FinalCallsFail

DEMO = REPO / "examples" / "demo-session.jsonl"


def test_score_session_names_the_cost_of_calls_made_before_the_failure(monkeypatch):
    with FinalCallsFail() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        monkeypatch.setenv("SCORER_CHUNK_BUDGET", "1500")  # chunked: notes calls, then a final
        get_settings.cache_clear()
        result = CliRunner().invoke(app, ["session", str(DEMO), "--judge", "llm"])
    assert result.exit_code != 0 and server.input_tokens > 0
    [line] = [x for x in result.stderr.splitlines() if x.startswith("error:")]
    assert "still failing after retries" in line
    cost = line.split("(judge calls made before this cost $")[1].rstrip(")")
    assert float(cost) > 0
