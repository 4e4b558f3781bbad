"""Start-up cost: what each entry point imports, checked in fresh interpreters.

The speed targets themselves live in `benchmarks/bench_cli.py` (`--help` ≤ 0.3 s);
these tests pin the import structure that makes them possible: the heuristic path never
imports the Anthropic SDK, `--help` loads none of the heavy modules, and the cl100k
encoding is built once per process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.jobs.helpers import make_projects

HEAVY = ("anthropic", "tiktoken", "langfuse", "scipy", "sklearn", "jinja2", "scorer.models")


def run_then_list_modules(code: str, *argv: str) -> tuple[dict, set[str]]:
    """Run a CLI `main` in a fresh interpreter; its JSON stdout and the modules it loaded."""
    script = f"""
import json, sys
sys.argv = ["prog", *{list(argv)!r}]
{code}
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
print("\\n" + json.dumps(sorted(sys.modules)))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    *body, modules = proc.stdout.strip().splitlines()
    payload = json.loads("\n".join(body)) if body and body[0].startswith("{") else {}
    return payload, set(json.loads(modules))


def transcript(tmp_path: Path) -> Path:
    ids = make_projects(tmp_path / "projects", 1)
    return tmp_path / "projects" / "-home-dev-proj" / f"{ids[0]}.jsonl"


def test_heuristic_score_session_never_imports_anthropic(tmp_path):
    path = str(transcript(tmp_path))
    code = "from scorer.cli.session import main"
    card, modules = run_then_list_modules(
        code, path, "--judge", "heuristic", "--no-store", "--json"
    )
    assert card["status"] == "scored" and card["judge"] == "heuristic"
    assert "anthropic" not in modules and "httpx2" not in modules
    plan, modules = run_then_list_modules(code, path, "--dry-run", "--json")
    assert plan["chunks"] and "anthropic" not in modules
    assert "pyte" not in modules  # the terminal emulator is for asciinema casts only


def test_heuristic_backfill_never_imports_anthropic(tmp_path):
    make_projects(tmp_path / "projects", 2)
    summary, modules = run_then_list_modules(
        "from scorer.cli.backfill import main",
        *("--projects-root", str(tmp_path / "projects"), "--judge", "heuristic"),
        *("--json", "--no-progress", "--from", "2000-01-01"),
    )
    assert summary["scored"] == 2
    assert "anthropic" not in modules


def test_help_loads_no_heavy_module():
    _, modules = run_then_list_modules("from scorer.cli.session import main", "--help")
    assert not modules & set(HEAVY), sorted(modules & set(HEAVY))


def test_package_exports_still_resolve_lazily():
    import scorer
    from scorer import Scorecard, __version__
    from scorer.models import Scorecard as Direct

    assert Scorecard is Direct and isinstance(__version__, str) and __version__
    assert {"Scorecard", "__version__"} <= set(dir(scorer))


def test_encoding_is_built_once_per_process(monkeypatch):
    from scorer.prepare import tokens

    calls: list[str] = []
    real = tokens._encoding_params

    def counting(name, constructor):
        calls.append(name)
        return real(name, constructor)

    monkeypatch.setattr(tokens, "_encoding_params", counting)
    tokens.forget_encoding()
    try:
        counters = [tokens.TokenCounter(f) for f in (1.0, 1.25, 1.5)]
        assert counters[0].count("hello world") == 2
        assert all(c._enc is counters[0]._enc for c in counters)
        assert len(calls) == 1
    finally:
        tokens.forget_encoding()


def test_llm_backfill_with_nothing_to_judge_never_imports_anthropic(tmp_path, monkeypatch):
    """The LLM judge (and the SDK's 0.65 s import) is built when a session is judged."""
    (tmp_path / "projects").mkdir()
    monkeypatch.setenv("SCORER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # never called
    summary, modules = run_then_list_modules(
        "from scorer.cli.backfill import main",
        *("--projects-root", str(tmp_path / "projects"), "--judge", "llm"),
        *("--json", "--no-progress", "--from", "2000-01-01"),
    )
    assert summary["selected"] == 0
    assert "anthropic" not in modules and "scorer.judge.anthropic" not in modules


def test_llm_backfill_without_a_key_fails_before_discovery(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from scorer.cli.main import app
    from scorer.settings import get_settings

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    get_settings.cache_clear()
    missing = tmp_path / "no-such-root"  # discovery would fail on it: it never runs
    result = CliRunner().invoke(
        app, ["backfill", "--projects-root", str(missing), "--judge", "llm", "--json"]
    )
    assert result.exit_code != 0
    assert "ANTHROPIC_API_KEY is not set: export it or use --judge heuristic" in result.stderr


NEVER_AT_START = ("scipy", "langfuse", "anthropic", "matplotlib", "pandas", "sklearn")
"""What `scorer --version` and `scorer scores list` must not import (each costs 0.2–2 s)."""


def _loaded_by_scorer(*argv: str, env: dict[str, str] | None = None) -> set[str]:
    """The top-level packages a fresh `scorer …` process loaded (through the entry point)."""
    script = f"""
import json, sys
sys.argv = ["scorer", *{list(argv)!r}]
from scorer.cli.entry import main
try:
    main()
except SystemExit as exc:
    assert not exc.code, exc.code
sys.stderr.write("\\n" + json.dumps(sorted({{m.split(".")[0] for m in sys.modules}})))
"""
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return set(json.loads(proc.stderr.strip().splitlines()[-1]))


@pytest.mark.parametrize("argv", [["--version"], ["-q", "--version"]], ids=["fast", "typer"])
def test_scorer_version_imports_no_heavy_package(argv):
    """Both ways: answered by the entry point, and through the umbrella app (lazy)."""
    loaded = _loaded_by_scorer(*argv)
    assert "scorer" in loaded  # the check is real
    assert sorted(loaded & set(NEVER_AT_START)) == []


def test_scores_list_imports_no_heavy_package(tmp_path):
    import os

    env = {**os.environ, "SCORER_HOME": str(tmp_path / "home")}
    loaded = _loaded_by_scorer("scores", "list", env=env)
    assert sorted(loaded & set(NEVER_AT_START)) == []
