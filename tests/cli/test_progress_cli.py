"""Progress on long commands: score-session's stage spinner (a real pty) and backfill's
not-started sessions under `--max-cost` (bar, summary, exit 5)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.backfill import main as backfill_main  # noqa: F401  (entry point exists)
from scorer.cli.main import app
from scorer.jobs.run_state import SessionResult
from scorer.settings import get_settings
from scorer.stages import Stage, report_stage, watch_stages
from tests.conftest import REPO
from tests.fakes.anthropic import FakeJudgeServer
from tests.jobs.helpers import make_projects

DEMO = REPO / "examples" / "demo-session.jsonl"
BIN = Path(sys.executable).parent


def entry_point(name: str) -> list[str]:
    script = BIN / name
    if not script.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return [str(script)]


def run_in_pty(cmd: list[str], env: dict[str, str], timeout: float = 120) -> tuple[int, str]:
    """Run `cmd` with stdout and stderr on a real pseudo-terminal; return (code, output)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # the child closed the pty
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    os.close(master)
    return proc.wait(timeout=10), b"".join(chunks).decode("utf-8", "replace")


def child_env(server: FakeJudgeServer) -> dict[str, str]:
    env = dict(os.environ)
    env.update(ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url, COLUMNS="120")
    env.pop("TTY_COMPATIBLE", None)
    env.pop("FORCE_COLOR", None)
    return env


def test_stage_reports_reach_only_the_installed_listener():
    seen: list[str] = []
    report_stage("fetch")  # nobody listens: nothing happens
    with watch_stages(lambda s: seen.append(str(s))):
        report_stage("prepare")
        report_stage("chunk", 1, 3)
        with watch_stages(None):  # None keeps the listener
            report_stage("final")
    report_stage("store")
    assert seen == ["prepare", "chunk 1/3", "final"]
    assert str(Stage("chunk", 2, 5)) == "chunk 2/5"


def test_score_session_reports_every_stage_of_a_chunked_llm_run(monkeypatch):
    from scorer.jobs.score import score_session
    from scorer.sources import resolve

    seen: list[str] = []
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        card = score_session(
            resolve(str(DEMO)), judge="llm", budget=1500, on_stage=lambda s: seen.append(str(s))
        ).card
    assert card.status == "scored" and card.n_chunks == 2
    assert seen[:3] == ["fetch", "prepare", "judge"]
    assert "chunk 0/2" in seen and "chunk 2/2" in seen
    assert seen[-2:] == ["final", "store"]


def test_spinner_shows_stages_on_a_terminal_only():
    with FakeJudgeServer(latency=0.4) as server:
        env = child_env(server)
        cmd = [*entry_point("score-session"), str(DEMO), "--budget", "1500", "--no-store"]
        code, tty_out = run_in_pty(cmd, env)
        piped = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
        code_json, tty_json = run_in_pty([*cmd, "--json"], env)
    assert code == 0, tty_out
    for text in ("scoring ", "chunk notes 0/2", "final scoring call"):
        assert text in tty_out, tty_out
    assert piped.returncode == 0, piped.stderr
    assert "chunk notes" not in piped.stderr + piped.stdout
    assert "final scoring call" not in piped.stderr
    assert code_json == 0 and "chunk notes" not in tty_json and '"scores"' in tty_json


def test_backfill_bar_counts_not_started_apart(capsys, monkeypatch):
    from scorer.cli.progress import BackfillBar

    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich draws as on a terminal
    monkeypatch.setenv("COLUMNS", "120")
    with BackfillBar(24, dry_run=False) as bar:
        for i in range(10):
            bar.advance(SessionResult(session_id=f"s{i}", outcome="scored", cost_usd=0.01))
        for i in range(14):
            bar.advance(
                SessionResult(session_id=f"n{i}", outcome="not_started", reason="cost cap reached")
            )
    drawn = capsys.readouterr().err
    last = drawn[drawn.rindex("scoring") :]  # the final redraw of the bar
    assert "10/24" in last and "14 not started (cost cap)" in last and "$0.1000" in last


def test_backfill_bar_shows_the_binding_limit_and_an_eta_at_its_pace(capsys, monkeypatch):
    from scorer.cli.progress import BackfillBar
    from scorer.jobs.account_limits import PacingStatus

    monkeypatch.setenv("TTY_COMPATIBLE", "1")
    monkeypatch.setenv("COLUMNS", "160")
    # 10 sessions charged 400k input tokens at 450k a minute: 30 more take 40k x 30 / 450k min
    status = PacingStatus("input-tokens", 0.92, 450_000, {"input-tokens": 400_000})
    with BackfillBar(40, dry_run=False) as bar:
        bar.watch_pacing(lambda: status)
        for i in range(10):
            bar.advance(SessionResult(session_id=f"s{i}", outcome="scored", cost_usd=0.01))
    last = capsys.readouterr().err
    last = last[last.rindex("scoring") :]
    assert "input tokens 92% of 450k/min" in last
    assert "0:02:40" in last  # 30 x 40,000 / 450,000 minutes


def test_the_eta_follows_rich_while_no_limit_binds():
    from scorer.jobs.account_limits import PacingStatus

    calm = PacingStatus("requests", 0.3, 50, {"requests": 10})
    assert calm.eta(10, 30) is None
    assert PacingStatus("requests", 0.9, 50, {"requests": 10}).eta(0, 30) is None


def test_backfill_cost_cap_exits_5_and_says_how_many_were_not_started(tmp_path, monkeypatch):
    root = tmp_path / "projects"
    make_projects(root, 8)
    with FakeJudgeServer() as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
        get_settings.cache_clear()
        args = ["backfill", "--projects-root", str(root), "--concurrency", "1"]
        res = CliRunner().invoke(app, [*args, "--max-cost", "0.000001"])
        assert res.exit_code == 5, res.output
        assert "not started (cost cap)" in res.stderr
        assert "raise it and run the same command" in res.stderr
        done = CliRunner().invoke(app, args)  # the resume finishes: exit 0
    assert done.exit_code == 0, done.output
    assert "0 not started" in done.stderr


def test_backfill_bar_on_a_terminal_shows_not_started_sessions(tmp_path):
    root = tmp_path / "projects"
    make_projects(root, 6)
    with FakeJudgeServer() as server:
        cmd = [*entry_point("score-backfill"), "--projects-root", str(root), "--judge", "llm"]
        code, shown = run_in_pty(
            [*cmd, "--concurrency", "1", "--max-cost", "0.000001"], child_env(server)
        )
    assert code == 5, shown
    assert "0/6" in shown and "6 not started (cost cap)" in shown  # none counted as done
    assert "6 sessions not started:" in shown


def test_the_spinner_shows_the_stage_before_a_long_path():
    from scorer.cli.progress import spinner_text
    from scorer.stages import Stage

    label = "scoring /home/dev/.claude/projects/-home-dev-src-some-long-project/" + "a" * 60
    text = spinner_text(label, Stage("chunk", done=1, total=4))
    assert text.startswith("chunk notes 1/4… scoring /home/dev/")
