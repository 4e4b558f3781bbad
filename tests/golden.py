"""One loader for the golden tests: the sessions they pin, their sources, their files.

`tests/prepare/test_golden.py` pins prep output, `tests/jobs/test_golden_judge.py` pins
judging; both on the same sessions: the bundled demo, every Claude Code transcript in
`../shared/data/claude-code-projects` and every eighth terminal-bench stream (a task's
`label.json` instruction is its `--prompt`, as a user would pass it). A real-data session
skips with a reason when the folder is absent. Each test keeps its expectations in a
JSON file beside it, keyed by case; `SCORER_UPDATE_GOLDEN=1` rewrites the case instead
of comparing (say why in the commit).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from scorer.sources.base import SessionSource
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.stream_json import StreamJsonSource
from tests.conftest import CC_PROJECTS, REPO, SHARED_DATA, TERMINAL_BENCH

DEMO = "examples/demo-session.jsonl"
"""The bundled demo, relative to the repo (every other name is relative to the data)."""
UPDATE = "SCORER_UPDATE_GOLDEN"


def golden_sessions() -> list[str]:
    """Session names: the demo, then the real ones (an `(absent)` name per missing folder)."""
    names = [DEMO]
    if CC_PROJECTS.exists():
        names += [str(p.relative_to(SHARED_DATA)) for p in sorted(CC_PROJECTS.rglob("*.jsonl"))]
    else:
        names.append("claude-code-projects (absent)")
    if TERMINAL_BENCH.exists():
        streams = sorted(TERMINAL_BENCH.glob("*/session.jsonl"))
        names += [str(p.relative_to(SHARED_DATA)) for p in streams[::8]]
    else:
        names.append("terminal-bench (absent)")
    return names


def golden_source(name: str) -> tuple[SessionSource, str | None]:
    """A session's source and the task a user would pass as `--prompt` (terminal-bench);
    skips the test when the real data is absent."""
    if name == DEMO:
        return ClaudeCodeSource(REPO / DEMO), None
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    if name.startswith("terminal-bench/"):
        label = json.loads((path.parent / "label.json").read_text(encoding="utf-8"))
        return StreamJsonSource(path), label["instruction"]
    return ClaudeCodeSource(path), None


def check_golden(path: Path, case: str, got: Any) -> None:
    """Assert `got` equals the case's entry in the golden file at `path`; with
    `SCORER_UPDATE_GOLDEN` set, write it there instead (keys sorted, one-space indent)."""
    golden = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    if os.environ.get(UPDATE):
        golden[case] = got
        text = json.dumps(golden, indent=1, sort_keys=True, ensure_ascii=False)
        path.write_text(text + "\n", encoding="utf-8")
        return
    want = golden.get(case)
    assert want is not None, f"{case} has no golden entry: run with {UPDATE}=1"
    assert got == want
