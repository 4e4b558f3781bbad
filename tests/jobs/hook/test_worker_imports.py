"""What the hook's detached worker loads (issue 32 item 7): only what its judge needs. Its
time is the time from a session's end to its stored card, and importing the Anthropic SDK
alone costs about 3 s of CPU, so the LLM judge goes over plain HTTP, and neither judge
loads typer, rich or the analysis libraries. The figures (p50 from exit to stored score)
are `benchmarks/bench_hook_score.py`'s."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scorer.sinks.store import ScoreStore
from tests.conftest import require
from tests.fakes.anthropic import FakeJudgeServer
from tests.jobs.hook.helpers import REAL, hook_env, log_text, real, stored_runs

TOOL_HEAVY = next(r for r in REAL if r.endswith("/tool_heavy.jsonl"))
NOT_NEEDED = ("anthropic", "httpx2", "httpx", "typer", "rich", "scipy", "sklearn", "numpy",
              "pandas", "matplotlib", "langfuse", "jinja2", "pyte", "git", "libtmux")  # fmt: skip


def run_worker(env: dict[str, str], argv: list[str]) -> set[str]:
    """`python -m scorer.cli.hook_worker ARGV` as `detach` starts it; the modules it loaded."""
    script = (
        "import json, sys\n"
        "from scorer.cli.hook_worker import main\n"
        f"main({argv!r})\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr[-2000:]
    return set(json.loads(done.stdout))


@pytest.mark.parametrize("judge", ["heuristic", "llm"])
def test_the_worker_loads_only_what_its_judge_needs(judge, tmp_path, cc_projects):
    home = tmp_path / "home"
    argv = ["--event", "SessionEnd", "--session-id", "w-1",
            "--transcript", str(require(real(TOOL_HEAVY)))]  # fmt: skip
    with FakeJudgeServer() as api:
        env = hook_env(home, SCORER_HOOK_JUDGE=judge, ANTHROPIC_API_KEY="sk-ant-test",
                       ANTHROPIC_BASE_URL=api.url)  # fmt: skip
        modules = run_worker(env, argv)
    assert stored_runs(home) == {"w-1": 1}, log_text(home)
    with ScoreStore(home / "scores.sqlite3") as store:
        card = store.latest("w-1")
    assert card.judge == judge and card.status == "scored"
    if judge == "llm":
        assert card.backend == "api" and api.calls == 1
    assert sorted(modules & set(NOT_NEEDED)) == []


def test_the_hook_starts_the_light_worker():
    from scorer.jobs.hook.detach import worker_argv

    assert worker_argv(["--event", "SessionEnd"])[1:] == [
        "-m", "scorer.cli.hook_worker", "--event", "SessionEnd",
    ]  # fmt: skip


def test_the_worker_reads_back_what_a_request_writes_and_logs_anything_else(tmp_path):
    from pathlib import Path

    from scorer.cli.hook_worker import parse
    from scorer.jobs.hook.request import HookRequest

    request = HookRequest("s1", Path("/t/s1.jsonl"), "SessionEnd", "/workspace", "other")
    assert parse(request.to_argv()) == request
    assert parse(["--transcript", "/t/x.jsonl"]) == HookRequest(None, Path("/t/x.jsonl"))
    home = tmp_path / "home"
    done = subprocess.run(
        [sys.executable, "-m", "scorer.cli.hook_worker", "--nope", "x"],
        env=hook_env(home), capture_output=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    log = log_text(home)
    assert "unknown worker options: --nope" in log and "Traceback" not in log
