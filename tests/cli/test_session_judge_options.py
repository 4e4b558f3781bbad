"""`score-session` with the LLM judge's options, API outages, and the SDK-free heuristic path."""

from __future__ import annotations

import json
import subprocess
import sys

from scorer.judge import retry
from tests.cli.test_session_cli import DEMO, run
from tests.conftest import REPO
from tests.fakes.anthropic import (
    FakeAnthropic,
    error_response,
    message_response,
    refusal_response,
    serve,
    valid_scoring_payload,
)


def _llm(monkeypatch, url: str) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)


def test_effort_and_fallback_flags_reach_the_requests(monkeypatch):
    answer = message_response(valid_scoring_payload(), model="claude-opus-4-6")
    fake = FakeAnthropic([refusal_response("cyber"), answer])
    with serve(fake) as url:
        _llm(monkeypatch, url)
        result = run(str(DEMO), "--json", "--effort", "low", "--fallback-model", "claude-opus-4-6")
    assert result.exit_code == 0, result.output
    first, second = fake.message_bodies
    assert first["output_config"]["effort"] == "low" and first["max_tokens"] == 8_000 + 2_000
    assert second["model"] == "claude-opus-4-6"
    data = json.loads(result.stdout)
    assert data["answered_by"] == "claude-opus-4-6" and data["effort"] == "low"
    assert data["refusals"][0]["category"] == "cyber"


def test_refused_on_the_fallback_too_exits_3_with_reason_refused(monkeypatch):
    fake = FakeAnthropic([refusal_response("cyber"), refusal_response("cyber")])
    with serve(fake) as url:
        _llm(monkeypatch, url)
        result = run(str(DEMO), "--json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert data["unscored_code"] == "refused" and data["unscored_reason"].startswith("refused")


def test_api_outage_after_retries_is_exit_1_one_line_and_nothing_stored(monkeypatch, clean_env):
    fake = FakeAnthropic([error_response(529, message="Overloaded")] * retry.MAX_ATTEMPTS)
    with serve(fake) as url:
        _llm(monkeypatch, url)
        result = run(str(DEMO))
    assert result.exit_code == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: judge API still failing after retries (529")
    assert last.endswith("Overloaded") and "Traceback" not in result.output + result.stderr
    assert "unscored" not in result.stderr
    assert not (clean_env / "scores.sqlite3").exists()


def test_bad_effort_is_a_usage_error():
    result = run(str(DEMO), "--effort", "extreme")
    assert result.exit_code == 2 and "Traceback" not in result.output


def test_heuristic_score_session_never_imports_the_anthropic_sdk(tmp_path):
    code = (
        "import sys\n"
        "from scorer.cli.session import main\n"
        f"sys.argv = ['score-session', {str(DEMO)!r}, '--judge', 'heuristic', '--no-store']\n"
        "try:\n    main()\nexcept SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "assert 'anthropic' not in sys.modules, 'anthropic was imported'\n"
        "print('SDK-FREE')\n"
    )
    env = {"PATH": "/usr/bin:/bin", "SCORER_HOME": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "SDK-FREE" in done.stdout
