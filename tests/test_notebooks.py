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
