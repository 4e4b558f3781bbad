"""The labelled runs the validity harness measures: Terminal-Bench tasks with a stream.

A run's id is opaque (`tb-` + a hash of its task id), so a packet's file name says
nothing about the task beyond what the session itself shows.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from pydantic import BaseModel

from scorer.calibrate.ground_truth import load_terminal_bench
from scorer.calibrate.validity.split import Side, Split

OUTCOMES = ("failed", "partial", "complete")
"""The three outcome classes, in order (resolved = complete, some tests passed = partial)."""


class BenchRun(BaseModel):
    """One labelled run: where its session is and, kept apart from packets, its outcome."""

    run_id: str
    task_id: str
    side: Side
    outcome: str
    """complete (resolved), partial (some tests passed) or failed (none passed)."""
    session_path: Path
    instruction: str
    tests_passed: int = 0
    tests_total: int = 0


def run_id(task_id: str) -> str:
    """The opaque id packets and verdicts are named by."""
    return (
        "tb-" + hashlib.sha256(f"session-scorer/validity-run:{task_id}".encode()).hexdigest()[:10]
    )


def outcomes(root: Path) -> dict[str, str]:
    """task id → outcome class for every labelled task under `root` (streamless included)."""
    return {str(lab.meta["task_id"]): str(lab.label) for lab in load_terminal_bench(root)}


def load_runs(root: Path, split: Split) -> tuple[list[BenchRun], list[str]]:
    """The runs under `root` that have a stream and are in `split`.

    Returns:
        The runs (task id order) and notes on tasks left out (no stream, not in the split).
    """
    runs: list[BenchRun] = []
    notes: list[str] = []
    for lab in load_terminal_bench(root):
        task_id, path = str(lab.meta["task_id"]), lab.meta.get("session_path")
        side = split.side(task_id)
        if side is None:
            notes.append(f"{task_id}: not in the split")
        elif not path:
            notes.append(f"{task_id} ({side}): no session stream recorded")
        else:
            runs.append(
                BenchRun(
                    run_id=run_id(task_id),
                    task_id=task_id,
                    side=side,
                    outcome=str(lab.label),
                    session_path=Path(path),
                    instruction=str(lab.meta.get("instruction") or ""),
                    tests_passed=int(lab.meta.get("tests_passed") or 0),
                    tests_total=int(lab.meta.get("tests_total") or 0),
                )
            )
    return sorted(runs, key=lambda r: r.task_id), notes
