"""Ctrl-C ends a backfill or a calibration with one line: what was stored, what was spent,
how to resume; the bar shows what was done, `-q` hides every bar, and `--dry-run`
without a key says why its figures are what they are (issue 33 item 7).

Before: after Ctrl-C the screen stayed at `13/79` though 37 were stored, and nothing said
what was saved or spent; `-q` did not hide score-calibrate's bar.
"""

from __future__ import annotations

import os
import pty
import re
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli.test_interrupt import ctrl_c_as_in_a_terminal
from tests.conftest import REPO, TERMINAL_BENCH, require
from tests.fakes.anthropic import FakeJudgeServer
from tests.jobs.helpers import make_projects

BIN = Path(sys.executable).parent
DEMO = REPO / "examples" / "demo-session.jsonl"
N = 8


def script(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(path)


def env_for(home: Path, server: FakeJudgeServer | None = None) -> dict[str, str]:
    """The child's environment: its own store, the tests' tokenizer cache (a fresh one
    costs seconds per process), a key and the fake's URL when given a server."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "SCORER_"))}
    env.update(SCORER_HOME=str(home), SCORER_PREP_PROCESSES="0", COLUMNS="100")
    env.update(SCORER_CACHE_DIR=os.environ["SCORER_CACHE_DIR"])
    env.pop("TTY_COMPATIBLE", None)
    if server is not None:
        env.update(ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=server.url)
    return env


def cards(db: Path, collection: str = "production") -> int:
    try:
        with sqlite3.connect(db, timeout=5) as conn:
            row = conn.execute(
                "SELECT COUNT(*) FROM runs WHERE collection = ?", (collection,)
            ).fetchone()
            return int(row[0])
    except sqlite3.OperationalError:  # not created yet
        return 0


class Terminal:
    """A command on a real pseudo-terminal, its output collected as it comes."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=slave,
            stderr=slave,
            env=env,
            cwd=REPO,
            preexec_fn=ctrl_c_as_in_a_terminal,
        )
        os.close(slave)
        self.chunks: list[bytes] = []

    def pump(self, seconds: float = 0.2) -> None:
        ready, _, _ = select.select([self.master], [], [], seconds)
        if ready:
            try:
                data = os.read(self.master, 65536)
            except OSError:  # the child closed the pty
                return
            self.chunks.append(data)

    def until(self, condition, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.proc.poll() is None, self.text
            assert time.monotonic() < deadline, self.text
            self.pump(0.05)

    def finish(self, timeout: float = 120) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump()
            if self.proc.poll() is not None:
                for _ in range(20):  # what is still buffered in the pty
                    self.pump(0.05)
                break
        os.close(self.master)
        return self.proc.wait(timeout=10)

    @property
    def text(self) -> str:
        return b"".join(self.chunks).decode("utf-8", "replace")


def plain(text: str) -> str:
    """Terminal output without escape sequences."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text).replace("\r", "\n")


def test_ctrl_c_during_a_backfill_says_what_was_stored_and_spent(tmp_path):
    root, home = tmp_path / "projects", tmp_path / "home"
    make_projects(root, N)
    db = home / "scores.sqlite3"
    cmd = [script("score-backfill"), "--projects-root", str(root), "--judge", "llm"]
    with FakeJudgeServer(latency=0.6) as server:
        term = Terminal([*cmd, "--concurrency", "2"], env_for(home, server))
        term.until(lambda: cards(db) >= 3)
        term.proc.send_signal(signal.SIGINT)
        code = term.finish()
        stored = cards(db)
        shown = plain(term.text)
        assert code == 130, shown
        assert 3 <= stored < N, shown
        line = next(s for s in shown.splitlines() if s.startswith("interrupted: "))
        assert line.startswith(f"interrupted: {stored} of {N} sessions stored this run, ")
        assert f"{N - stored} left; $" in line and "run the same command again to resume" in line
        assert float(line.split("$")[1].split()[0]) > 0
        bars = re.findall(r"scoring\s+\S*\s+(\d+)/8", shown)
        assert bars and int(bars[-1]) == stored  # the bar ends at what was stored
        assert "Traceback" not in shown
        again = subprocess.run(
            [*cmd, "--json", "--no-progress"], env=env_for(home, server), capture_output=True
        )
    assert again.returncode == 0 and cards(db) == N


def test_ctrl_c_during_a_calibration_says_what_was_stored_and_spent(tmp_path):
    bench = tmp_path / "bench"
    root = require(TERMINAL_BENCH)
    tasks = sorted(p for p in root.iterdir() if (p / "session.jsonl").is_file())[:6]
    for task in tasks:
        (bench / task.name).mkdir(parents=True)
        for name in ("label.json", "session.jsonl"):
            shutil.copy(task / name, bench / task.name / name)
    home = tmp_path / "home"
    db = home / "scores.sqlite3"
    cmd = [script("score-calibrate"), "--ground-truth", f"terminal-bench:{bench}"]
    cmd += ["--judge", "llm", "--n-boot", "0", "--out", str(tmp_path / "r"), "--concurrency", "1"]
    with FakeJudgeServer(latency=0.8) as server:
        term = Terminal(cmd, env_for(home, server))
        term.until(lambda: cards(db, "calibration") >= 2)
        term.proc.send_signal(signal.SIGINT)
        code = term.finish()
        calls = server.calls
    shown = plain(term.text)
    stored = cards(db, "calibration")
    assert code == 130, shown
    assert stored < len(tasks) and calls <= stored + 1  # nothing new started after Ctrl-C
    line = next(s for s in shown.splitlines() if s.startswith("interrupted: "))
    assert line.startswith(f"interrupted: {stored} of 6 labelled sessions judged and stored")
    assert "no report was written" in line and "run the same command again to resume" in line
    assert not (tmp_path / "r").exists()


def test_quiet_hides_the_calibration_bar(tmp_path):
    bench = tmp_path / "bench"
    shutil.copytree(require(TERMINAL_BENCH / "hello-world"), bench / "hello-world")
    cmd = [script("score-calibrate"), "--ground-truth", f"terminal-bench:{bench}"]
    cmd += ["--judge", "heuristic", "--n-boot", "0"]
    loud = Terminal([*cmd, "--out", str(tmp_path / "a")], env_for(tmp_path / "h1"))
    assert loud.finish() == 0, loud.text
    assert "heuristic judge" in loud.text and "━" in loud.text  # the bar, on a terminal
    quiet = Terminal([*cmd, "--out", str(tmp_path / "b"), "-q"], env_for(tmp_path / "h2"))
    assert quiet.finish() == 0, quiet.text
    assert "━" not in quiet.text and "heuristic judge" not in quiet.text


def test_a_keyless_dry_run_says_why_there_is_no_estimate(tmp_path):
    env = env_for(tmp_path / "home")
    session = subprocess.run(
        [script("score-session"), str(DEMO), "--dry-run"], env=env, capture_output=True, text=True
    )
    assert session.returncode == 0, session.stderr
    assert (
        "no cost estimate: ANTHROPIC_API_KEY is not set, so this would run the offline "
        "heuristic judge, which makes no API calls ($0); --judge llm --dry-run prices the LLM "
        "judge"
    ) in " ".join(session.stdout.split())  # wrapped to the terminal's width
    llm = subprocess.run(
        [script("score-session"), str(DEMO), "--dry-run", "--judge", "llm"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert "not by Claude's count_tokens" in llm.stdout, llm.stderr
    root = tmp_path / "projects"
    make_projects(root, 1)
    backfill = subprocess.run(
        [script("score-backfill"), "--projects-root", str(root), "--dry-run", "--no-progress"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert backfill.returncode == 0, backfill.stderr
    assert (
        "this run's heuristic judge (ANTHROPIC_API_KEY is not set) makes no API calls ($0); "
        "the figures are what --judge llm would cost"
    ) in backfill.stderr
