"""Live-session acceptance: a real shell in a private tmux server runs an agent-like script
over a real git repo; `scorer session --source tmux` scores it end to end (heuristic
offline, LLM through a loopback fake Messages API), then `scorer resume-prompt` and
`scorer assess` write their files. Every tmux server here is private (`-L scorer-test-*`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import libtmux
import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.jobs.resume import HISTORY_CAP, save_evaluation
from scorer.jobs.score import prepare
from scorer.judge.rubric import default_rubric
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.settings import get_settings
from tests.conftest import FIXTURES
from tests.fakes.anthropic import FakeAnthropic, message_response, serve, valid_scoring_payload
from tests.live.test_live_tmux import wait_for
from tests.sinks.cards import make_card

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")
AGENT = FIXTURES / "live" / "agent_run.sh"
SEVEN = {s.name for s in default_rubric().scores}
TASK = "Add subtract() to calc.py with tests; keep the suite green."
runner = CliRunner()


def git(repo: Path, *args: str) -> str:
    cmd = ["git", "-c", "user.name=T", "-c", "user.email=t@e.com", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# calc\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "initial")
    return root


def run_agent(srv: libtmux.Server, name: str, repo: Path) -> None:
    session = srv.new_session(
        name, window_command="env PS1='$ ' bash --norc --noprofile", x=120, y=40,
        start_directory=str(repo),
    )  # fmt: skip
    session.active_window.active_pane.send_keys(f"bash {AGENT}")
    wait_for(srv, name, "AGENT-DONE")


def scorer(*args: str):
    return runner.invoke(app, list(args), catch_exceptions=False)


def score_tmux(srv: libtmux.Server, name: str, repo: Path, base: str, *extra: str):
    return scorer(
        "session", name, "--source", "tmux", "--tmux-socket", srv.socket_name,
        "--repo", str(repo), "--base", base, "--prompt", TASK, "--json", *extra,
    )  # fmt: skip


def one_error_line(result) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return lines[0]


def test_live_session_end_to_end(server, repo, clean_env, monkeypatch):
    base = git(repo, "rev-parse", "HEAD").strip()
    run_agent(server, "agent", repo)
    assert git(repo, "rev-list", "--count", f"{base}..HEAD").strip() == "2"

    # 1. heuristic judge, offline
    result = score_tmux(server, "agent", repo, base, "--judge", "heuristic")
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    assert card["session_id"].startswith("tmux:agent:") and card["source"] == "tmux"
    assert card["judge"] == "heuristic" and set(card["scores"]) == SEVEN
    assert card["scores"]["goal_achievement"]["label"] == "complete"  # the last test run is green
    assert card["recommendation"] == "complete"

    scorer_dir = repo / ".scorer"
    evaluation = json.loads((scorer_dir / "evaluation.json").read_text())
    for key in ("evaluated_at", "session_id", "status", "overall", "scores", "git", "phase",
                "progress_percent", "terminal_signals", "resources", "scorecard"):  # fmt: skip
        assert key in evaluation, key
    assert evaluation["git"]["commits"] == 2 and evaluation["git"]["base"] == base
    assert {f["path"] for f in evaluation["git"]["files"]} == {"calc.py", "test_calc.py"}
    tests = evaluation["terminal_signals"]["tests"]
    assert (tests["passed"], tests["failed"], tests["ok"]) == (3, 0, True)
    assert evaluation["phase"] == "complete" and evaluation["progress_percent"] >= 90
    assert evaluation["overall"] == pytest.approx(card["scores"]["overall_quality"]["value"])
    history = (scorer_dir / "history.jsonl").read_text().splitlines()
    assert len(history) == 1 and json.loads(history[0])["overall"] == evaluation["overall"]

    # 2. LLM judge, mocked at HTTP through ANTHROPIC_BASE_URL
    fake = FakeAnthropic([message_response(valid_scoring_payload(events=(3, 5)))])
    with serve(fake) as url:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
        get_settings.cache_clear()
        llm = score_tmux(server, "agent", repo, base)
    assert llm.exit_code == 0, llm.stderr
    assert json.loads(llm.stdout)["judge"] == "llm"
    sent = json.dumps(fake.message_bodies)
    assert "1 failed, 2 passed" in sent and "3 passed in 0.04s" in sent
    assert "2 commits changing 2 files" in sent and TASK in sent
    assert "\\u001b[" not in sent and "\x1b[" not in sent  # ANSI cleaned before the judge
    assert "collecting [#####################] 100%" in sent
    assert "collecting [#      ]" not in sent  # \r redraws collapsed
    history = (scorer_dir / "history.jsonl").read_text().splitlines()
    assert [json.loads(h)["scorecard"]["judge"] for h in history] == ["heuristic", "llm"]

    # 3. resume prompt and assessment
    resumed = scorer("resume-prompt", str(repo), "--max-chars", "700", "--no-print")
    assert resumed.exit_code == 0, resumed.stderr
    prompt = (scorer_dir / "next-prompt.md").read_text()
    assert len(prompt) <= 700 and prompt.startswith("# Resume")
    assert "## Next steps" in prompt and "calc.py" in prompt
    full = scorer("resume-prompt", str(repo))
    assert full.exit_code == 0 and "## How to verify" in full.stdout
    assert len((scorer_dir / "next-prompt.md").read_text()) <= 3000

    assessed = scorer("assess", str(repo), "--json")
    assert assessed.exit_code == 0, assessed.stderr
    assessment = json.loads((scorer_dir / "assessment.json").read_text())
    assert json.loads(assessed.stdout) == assessment
    for key in ("assessed_at", "repo", "summary", "phase", "progress_percent", "pending",
                "blockers", "file_changes", "test_status", "recommendation", "git_status"):  # fmt: skip
        assert key in assessment, key
    assert assessment["git_status"] == "ok" and assessment["test_status"]["passed"] == 3
    assert assessment["file_changes"] == {"source": 1, "test": 1}
    # the scorer's own files are not the agent's work
    assert assessment["untracked"] == [] and assessment["uncommitted"] == []
    assert not any("uncommitted" in step for step in assessment["pending"])

    # 4. escalation: exit 4, the evaluation is still saved
    escalated = score_tmux(server, "agent", repo, base, "--judge", "heuristic",
                           "--escalate-below", "0.99")  # fmt: skip
    assert escalated.exit_code == 4
    assert json.loads(escalated.stdout)["scores"]["overall_quality"]["value"] < 0.99
    assert "ESCALATE" in escalated.stderr
    assert len((scorer_dir / "history.jsonl").read_text().splitlines()) == 3

    # 5. the session ends: scored from the cache, and it says so
    server.kill()
    cached = score_tmux(server, "agent", repo, base, "--judge", "heuristic")
    assert cached.exit_code == 0, cached.stderr
    assert "scored its last cached capture" in cached.stderr
    assert json.loads(cached.stdout)["scores"]["goal_achievement"]["label"] == "complete"


def test_session_killed_before_capture_without_cache_is_one_line(server, repo, clean_env):
    session = server.new_session("doomed", window_command="bash --norc --noprofile")
    session.kill()
    result = score_tmux(server, "doomed", repo, "HEAD", "--judge", "heuristic")
    assert result.exit_code == 1
    line = one_error_line(result)
    assert "tmux session 'doomed' not found" in line and "no cached capture" in line
    assert not (repo / ".scorer").exists()


def test_bad_base_ref_is_one_line(server, repo, clean_env):
    run_agent(server, "agent", repo)
    result = score_tmux(server, "agent", repo, "no-such-ref", "--judge", "heuristic")
    assert result.exit_code == 1
    assert "not a known ref" in one_error_line(result)


def _tiny_prepared():
    session = Session(
        session_id="tmux:cap",
        source=SourceKind.TMUX,
        events=[
            Event(index=1, kind=EventKind.TERMINAL, text="$ pytest\n== 2 passed in 0.1s =="),
        ],
        extra={"phase": "late", "progress_percent": 70},
    )
    return prepare(session)


def test_history_is_capped_newest_last(tmp_path):
    prepared = _tiny_prepared()
    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    total = HISTORY_CAP + 7
    for i in range(total):
        save_evaluation(repo, prepared, make_card("tmux:cap", summary=f"run {i}"))
    lines = (repo / ".scorer" / "history.jsonl").read_text().splitlines()
    assert len(lines) == HISTORY_CAP == 100
    summaries = [json.loads(line)["summary"] for line in lines]
    assert summaries[0] == f"run {total - HISTORY_CAP}" and summaries[-1] == f"run {total - 1}"
    latest = json.loads((repo / ".scorer" / "evaluation.json").read_text())
    assert latest["summary"] == f"run {total - 1}"
    assert not list((repo / ".scorer").glob("*.tmp"))  # atomic writes left no temp files


def test_resume_and_assess_on_bad_evaluation_are_one_line(repo, clean_env):
    (repo / ".scorer").mkdir()
    (repo / ".scorer" / "evaluation.json").write_text("[1, 2]")
    for command in ("resume-prompt", "assess"):
        result = scorer(command, str(repo))
        assert result.exit_code == 1
        assert "evaluation.json" in one_error_line(result)
    missing = scorer("assess", str(repo / "nope"))
    assert missing.exit_code == 1 and "not a directory" in one_error_line(missing)


def test_assess_with_git_but_no_evaluation(repo, clean_env):
    result = scorer("assess", str(repo), "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["git_status"] == "ok" and data["test_status"] is None
    assert data["phase"] == "early"
    assert "Run the test suite; no test result was seen." in data["pending"]
