"""benchmarks/rescore_shared.py: which sessions it rescores and the before/after table."""

from __future__ import annotations

import importlib.util
import sys

from tests.conftest import REPO, SHARED_DATA, require


def _script():
    sys.path.insert(0, str(REPO / "benchmarks"))  # the script imports its sibling _common
    try:
        spec = importlib.util.spec_from_file_location(
            "rescore_shared", REPO / "benchmarks" / "rescore_shared.py"
        )
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(REPO / "benchmarks"))


def _result(version: str, cards: dict[str, tuple[str, dict]]) -> dict:
    return {"heuristic_version": version,
            "cards": {k: {"group": g, "values": v} for k, (g, v) in cards.items()}}  # fmt: skip


def test_compare_gives_means_per_group_changes_and_goal_moves():
    before = _result("h-1", {
        "a": ("claude-code", {"goal_achievement": 0.0, "tool_efficiency": 3.0}),
        "b": ("terminal-bench", {"goal_achievement": 2.0, "tool_efficiency": 5.0}),
        "gone": ("terminal-bench", {"goal_achievement": 3.0, "tool_efficiency": 1.0}),
    })  # fmt: skip
    after = _result("h-2", {
        "a": ("claude-code", {"goal_achievement": 1.0, "tool_efficiency": 3.0}),
        "b": ("terminal-bench", {"goal_achievement": 1.0, "tool_efficiency": 5.0}),
    })  # fmt: skip
    table = _script().compare(before, after)
    assert table.startswith("h-1 → h-2, 2 sessions (claude-code 1, terminal-bench 1)")
    assert "| goal_achievement | 0.00 → 1.00 | 2.00 → 1.00 | 1.00 → 1.00 | 2 |" in table
    assert "| tool_efficiency | 3.00 → 3.00 | 5.00 → 5.00 | 4.00 → 4.00 | 0 |" in table
    assert table.rstrip().endswith(
        "goal_achievement moves: complete → partial 1, failed → partial 1"
    )


def test_shared_sessions_are_main_transcripts_panes_casts_and_terminal_bench_streams():
    data = require(SHARED_DATA)
    found = _script().shared_sessions(data)
    groups = [g for g, _, _ in found]
    assert {g: groups.count(g) for g in set(groups)} == {
        "claude-code": 5, "tmux-pane": 3, "asciinema": 3, "terminal-bench": 79,
    }  # fmt: skip
    assert not any("subagents" in p.parts or p.name.startswith("agent-") for _, p, _ in found)
    assert all(task for g, _, task in found if g == "terminal-bench")
