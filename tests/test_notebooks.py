"""The notebooks run top to bottom offline on the Terminal-Bench data (CI executes them),
and are committed with their outputs stripped."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, TERMINAL_BENCH, require

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

NOTEBOOKS = REPO / "notebooks"
NAMES = ["calibration", "exploration"]
KERNEL = "session-scorer-venv"
CELL_TIMEOUT = 120

sys.path.insert(0, str(NOTEBOOKS))
from strip_outputs import dirty_cells  # noqa: E402


@pytest.fixture
def venv_kernel(tmp_path, monkeypatch) -> str:
    """A kernelspec that runs *this* interpreter, found first on JUPYTER_PATH, so the
    notebooks never execute in some other Python a `python3` kernelspec points at."""
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(
        json.dumps({"argv": argv, "display_name": KERNEL, "language": "python"})
    )
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.delenv("SCORER_NOTEBOOK_HOME", raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebooks' scratch store and report
    return KERNEL


def execute(name: str, kernel: str, cwd: Path):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute()
    return nb


def tagged_output(nb, tag: str) -> str:
    cell = next(c for c in nb.cells if tag in c.get("metadata", {}).get("tags", []))
    return "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")


def all_text(nb) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(str(out.get("data", {}).get("text/markdown", "")))
    return "\n".join(parts)


def images(nb) -> int:
    return sum(
        "image/png" in out.get("data", {}) for cell in nb.cells for out in cell.get("outputs", [])
    )


# --- committed notebooks are clean ------------------------------------------------------


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_has_no_outputs(name):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert dirty_cells(nb) == [], f"run: python notebooks/strip_outputs.py notebooks/{name}.ipynb"
    assert sum(c.cell_type == "code" for c in nb.cells) >= 8


def test_dirty_cells_flags_outputs_and_counts():
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell("1", execution_count=3),
            nbformat.v4.new_code_cell("2", outputs=[nbformat.v4.new_output("stream", text="x")]),
            nbformat.v4.new_code_cell("3"),
            nbformat.v4.new_markdown_cell("m"),
        ]
    )
    assert dirty_cells(nb) == [0, 1]


# --- executed on the real data ----------------------------------------------------------


def test_calibration_notebook_runs_offline(venv_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("SCORER_TERMINAL_BENCH", str(require(TERMINAL_BENCH)))
    nb = execute("calibration", venv_kernel, tmp_path)

    summary = json.loads(tagged_output(nb, "summary"))
    goal = summary["stats"]["heuristic/goal_achievement"]
    assert summary["n_labels"] == 80
    assert summary["unmatched_labels"] == 1  # the task without a session stream
    assert goal["n"] == 79
    assert 0.0 <= goal["exact_agreement"] <= 1.0
    low, high = goal["weighted_kappa_ci"]
    assert low <= goal["weighted_kappa"] <= high
    assert not any(k.startswith("llm/") for k in summary["stats"])  # no key, no LLM judge

    text = all_text(nb)
    assert "LLM judge skipped" in text
    assert "Langfuse section skipped" in text
    assert "| session | task | judge | truth | diff | evidence | rationale |" in text
    assert images(nb) >= 4  # confusion, distribution, bias, overall-by-outcome
    # the notebook used its own scratch store, not the one the test environment set
    assert not (tmp_path / "scorer-home" / "scores.sqlite3").exists()


def test_exploration_notebook_runs_offline(venv_kernel, tmp_path, monkeypatch):
    monkeypatch.setenv("SCORER_TERMINAL_BENCH", str(require(TERMINAL_BENCH)))
    nb = execute("exploration", venv_kernel, tmp_path)

    summary = json.loads(tagged_output(nb, "summary"))
    assert summary["judge"] == "heuristic"
    assert summary["n_sessions"] == 79
    assert summary["n_with_signals"] >= 75
    assert summary["time_buckets"] >= 3  # the runs span ~8 hours: hourly buckets
    assert summary["by_tool"].get("Bash", 0) > 30
    overall = [w["overall"] for w in summary["worst"]]
    assert len(overall) == 5 and overall == sorted(overall)

    text = all_text(nb)
    assert "Langfuse sessions skipped" in text
    assert "**overall_quality by most-used tool**" in text
    assert images(nb) >= 3


# --- the helper module (pure parts, no kernel) -----------------------------------------


def test_use_scratch_home_is_fresh_unless_configured(tmp_path, monkeypatch):
    from scorer.calibrate.notebook import NOTEBOOK_HOME_ENV, use_scratch_home
    from scorer.settings import get_settings

    monkeypatch.delenv(NOTEBOOK_HOME_ENV, raising=False)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    first, second = use_scratch_home(), use_scratch_home()
    assert first != second and first.parent == tmp_path
    assert get_settings().store_path == second / "scores.sqlite3"
    monkeypatch.setenv(NOTEBOOK_HOME_ENV, str(tmp_path / "mine"))
    assert use_scratch_home() == tmp_path / "mine"
    assert get_settings().home == tmp_path / "mine"


def _rows():
    from datetime import UTC, datetime, timedelta

    from scorer.calibrate.notebook import session_rows
    from scorer.models import Event, EventKind, Session, SourceKind
    from tests.sinks.cards import make_card

    t0 = datetime(2025, 11, 9, 6, 0, tzinfo=UTC)
    cards = [
        make_card("a", judge="heuristic", model=None, values={"goal_achievement": "failed"}),
        make_card("b", judge="heuristic", model=None),
        make_card("c", judge="heuristic", model=None, values={"output_quality": 1}, created_at=t0),
        make_card("a", judge="llm"),  # another judge: not mixed into the heuristic rows
    ]
    call = Event(index=1, kind=EventKind.TOOL_CALL, tool_name="Bash", tool_use_id="t1")
    session = Session(
        session_id="a", source=SourceKind.STREAM_JSON, project="app", models=["m1", "m1-small"],
        events=[call, call.model_copy(update={"index": 2, "tool_use_id": "t2"})],
    )  # fmt: skip
    times = {"task-a": t0 + timedelta(hours=3), "task-b": t0}
    outcomes = {"a": {"task_id": "task-a", "label": "partial"}, "b": {"task_id": "task-b"}}
    return session_rows(
        cards, {"a": session}, judge="heuristic", times=times, outcomes=outcomes
    ), cards


def test_session_rows_join_cards_sessions_and_bench_times():
    rows, cards = _rows()
    assert [r.session_id for r in rows] == ["b", "c", "a"]  # by start time (c: card time)
    a = rows[2]
    assert (a.judge, a.project, a.agent_model, a.outcome) == ("heuristic", "app", "m1", "partial")
    assert a.tool_mix == {"Bash": 2} and a.dominant_tool == "Bash"
    c = rows[1]
    assert c.started_at == cards[2].created_at and c.project == "unknown"
    assert c.dominant_tool == "none" and c.outcome is None


def test_grouping_worst_and_explain():
    from scorer.calibrate.notebook import (
        explain,
        group_summary,
        group_values,
        time_bucket,
        tool_share,
        worst_sessions,
    )

    rows, _ = _rows()
    assert time_bucket(rows)(rows[0]) == "2025-11-09 06:00"
    groups = group_values(rows, lambda r: r.project)
    assert list(groups) == ["app", "unknown"] and len(groups["unknown"]) == 2
    summary = group_summary(groups)
    assert summary[0]["n"] == 1 and summary[0]["min"] == summary[0]["max"]
    assert tool_share(rows) == {"Bash": 1.0}
    worst = worst_sessions(rows, 2)
    assert [w.session_id for w in worst] == ["a", "c"]
    assert worst[0].overall < worst[1].overall < rows[0].overall
    text = explain(worst[0].card, dims=1)
    assert text.startswith("**a** (heuristic)")
    assert "`goal_achievement` = failed" in text and "#12 “3 passed”" in text


def test_time_bucket_widens_with_the_span():
    from datetime import UTC, datetime, timedelta

    from scorer.calibrate.notebook import time_bucket

    rows, _ = _rows()
    rows[2].started_at = rows[0].started_at + timedelta(days=10)
    assert time_bucket(rows)(rows[0]) == "2025-11-09"
    rows[2].started_at = datetime(2026, 3, 1, tzinfo=UTC)
    assert time_bucket(rows)(rows[0]) == "2025-W45"


def test_stat_rows_disagreements_and_markdown():
    from scorer.calibrate import calibrate
    from scorer.calibrate.notebook import (
        disagreement_rows,
        markdown_table,
        stat_rows,
        stats_dict,
    )
    from tests.calibrate.helpers import paired_data

    cards, labels = paired_data(
        "goal_achievement", [2, 2, 1, 0, 2, 0], [2, 0, 1, 0, 2, 2], evidence=[7]
    )
    result = calibrate(cards, labels, n_boot=50)
    a = result.agreements[0]
    row = stat_rows([a], fields=("n", "bias", "pearson"))[0]
    assert row["n"] == "6" and row["pearson"] == f"{a.pearson:.2f}"  # no CI for pearson
    assert row["bias"].startswith("0.00 [")  # +2 and -2 cancel out
    stats = stats_dict(a)
    assert stats["n"] == 6 and len(stats["bias_ci"]) == 2 and "pearson_ci" not in stats
    dis = disagreement_rows(a, {"s01": {"task_id": "t1"}})
    assert [(d["session"], d["task"], d["judge"], d["truth"]) for d in dis] == [
        ("s01", "t1", "complete", "failed"),
        ("s05", "", "failed", "complete"),
    ]
    assert dis[0]["evidence"] == "#7 “quote 7”"
    table = markdown_table([{"a": 0.5, "b": None, "c": "x|y"}])
    assert table.splitlines() == ["| a | b | c |", "|---|---|---|", "| 0.50 | — | x\\|y |"]
    assert markdown_table([]) == "_(no rows)_"


def test_event_excerpts_cite_existing_events_only():
    from scorer.calibrate.notebook import event_excerpts
    from scorer.models import Event, EventKind, Session, SourceKind

    session = Session(
        session_id="s",
        source=SourceKind.STREAM_JSON,
        events=[
            Event(index=1, kind=EventKind.TOOL_CALL, tool_name="Bash", tool_input={"c": "ls"}),
            Event(index=2, kind=EventKind.ASSISTANT, text="done\n  " + "x" * 50),
        ],
    )
    lines = event_excerpts(session, [2, 1, 9], width=11)
    assert lines == [
        "#2 assistant: done xxxxxx…",
        '#1 tool_call Bash: {"c": "ls"}',
        "#9: (no such event)",
    ]


def test_strip_outputs_check_and_fix(tmp_path):
    from strip_outputs import main

    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("1", execution_count=1, metadata={"tags": ["keep"]})]
    )
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, path)
    assert main(["--check", str(path)]) == 1
    assert main([str(path)]) == 0
    fixed = nbformat.read(path, as_version=4)
    assert dirty_cells(fixed) == [] and fixed.cells[0].metadata["tags"] == ["keep"]
    assert main(["--check", str(path)]) == 0
