"""The golden tests' one loader (tests/golden.py): sessions, sources, the file check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scorer.sources.stream_json import StreamJsonSource
from tests.conftest import REPO
from tests.golden import DEMO, check_golden, golden_sessions, golden_source

GOLDEN_FILES = (
    REPO / "tests" / "prepare" / "golden_prepare.json",
    REPO / "tests" / "jobs" / "golden_judge.json",
)


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.name)
def test_regenerating_a_golden_file_keeps_its_bytes(path: Path) -> None:
    """Both tests write through `check_golden`: its format is each file's own, byte for
    byte, so regenerating an unchanged case rewrites nothing."""
    text = path.read_text(encoding="utf-8")
    again = json.dumps(json.loads(text), indent=1, sort_keys=True, ensure_ascii=False)
    assert again + "\n" == text


def test_check_golden_compares_then_updates(tmp_path, monkeypatch) -> None:
    path = tmp_path / "golden.json"
    monkeypatch.delenv("SCORER_UPDATE_GOLDEN", raising=False)
    with pytest.raises(AssertionError, match="no golden entry: run with SCORER_UPDATE_GOLDEN=1"):
        check_golden(path, "case", {"a": 1})
    monkeypatch.setenv("SCORER_UPDATE_GOLDEN", "1")
    check_golden(path, "case", {"é": 1})
    check_golden(path, "other", [2])
    assert (
        path.read_text(encoding="utf-8")
        == '{\n "case": {\n  "é": 1\n },\n "other": [\n  2\n ]\n}\n'
    )
    monkeypatch.delenv("SCORER_UPDATE_GOLDEN")
    check_golden(path, "case", {"é": 1})
    with pytest.raises(AssertionError):
        check_golden(path, "case", {"é": 2})


def test_the_sessions_are_the_demo_and_the_real_ones(cc_projects, terminal_bench) -> None:
    names = golden_sessions()
    assert names[0] == DEMO
    assert "claude-code-projects/-home-USER-projects-spotter/short.jsonl" in names
    bench = [n for n in names if n.startswith("terminal-bench/")]
    assert len(bench) == len(sorted(terminal_bench.glob("*/session.jsonl"))[::8]) > 5
    source, task = golden_source(bench[0])
    assert isinstance(source, StreamJsonSource) and task and len(task) > 20
    assert golden_source(DEMO)[1] is None


def test_an_absent_data_folder_skips_with_its_path() -> None:
    with pytest.raises(pytest.skip.Exception, match=r"real data not available: .*absent"):
        golden_source("claude-code-projects (absent)")
