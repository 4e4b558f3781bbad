"""The labelled runs the validity harness measures: Terminal-Bench runs with a stream.

Every backend (agent model) ran the same tasks, so a run is a (backend, task) pair. A
run's id is opaque (`tb-` + a hash of its backend and task id), so a packet's file name
says nothing about the task or the agent beyond what the session itself shows. The
reference backend's runs keep the ids they had before there was a second backend
(a hash of the task id alone), so earlier verdict folders still join.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from scorer.calibrate.ground_truth import load_terminal_bench
from scorer.calibrate.validity.split import Side, Split
from scorer.errors import ConfigError

if TYPE_CHECKING:
    from scorer.prepare import Prepared

OUTCOMES = ("failed", "partial", "complete")
"""The three outcome classes, in order (resolved = complete, some tests passed = partial)."""


class BenchRun(BaseModel):
    """One labelled run: where its session is and, kept apart from packets, its outcome."""

    run_id: str
    task_id: str
    backend: str
    """The data folder of the agent model that ran it (`claude_code_coder`, ...)."""
    side: Side
    outcome: str
    """complete (resolved), partial (some tests passed) or failed (none passed)."""
    session_path: Path
    instruction: str
    tests_passed: int = 0
    tests_total: int = 0

    def prepared(self) -> Prepared:
        """The session, loaded and prepared as `score-session PATH --prompt TASK` does."""
        from scorer.calibrate.validity.packets import load_prepared

        return load_prepared(str(self.session_path), self.instruction)


def run_id(task_id: str, backend: str | None = None) -> str:
    """The opaque id packets and verdicts are named by.

    Args:
        task_id: The task.
        backend: The backend, or None for the split's reference backend (whose ids
            predate the second backend and stay as they were).
    """
    key = task_id if backend is None else f"{backend}/{task_id}"
    return "tb-" + hashlib.sha256(f"session-scorer/validity-run:{key}".encode()).hexdigest()[:10]


def outcomes(root: Path) -> dict[str, dict[str, str]]:
    """backend → task id → outcome class, for every labelled run under `root` (one
    backend's folder or the folder holding several; streamless runs included)."""
    out: dict[str, dict[str, str]] = defaultdict(dict)
    for lab in load_terminal_bench(root):
        out[str(lab.meta["backend"])][str(lab.meta["task_id"])] = str(lab.label)
    return dict(out)


def load_runs(root: Path, split: Split) -> tuple[list[BenchRun], list[str]]:
    """The runs under `root` that have a stream and are in `split`.

    Returns:
        The runs (backend, then task id order) and notes on runs left out (no stream,
        not in the split).

    Raises:
        ConfigError: The split records no runs per backend (an older split file).
    """
    if not split.runs:
        raise ConfigError(
            "the split lists no runs per backend: rewrite it with `validity.py split --write`"
        )
    runs: list[BenchRun] = []
    notes: list[str] = []
    for lab in load_terminal_bench(root):
        task_id, backend = str(lab.meta["task_id"]), str(lab.meta["backend"])
        side, path = split.run_side(backend, task_id), lab.meta.get("session_path")
        if side is None:
            notes.append(f"{backend}/{task_id}: not in the split")
        elif not path:
            notes.append(f"{backend}/{task_id} ({side}): no session stream recorded")
        else:
            runs.append(
                BenchRun(
                    run_id=run_id(task_id, None if backend == split.reference else backend),
                    task_id=task_id,
                    backend=backend,
                    side=side,
                    outcome=str(lab.label),
                    session_path=Path(path),
                    instruction=str(lab.meta.get("instruction") or ""),
                    tests_passed=int(lab.meta.get("tests_passed") or 0),
                    tests_total=int(lab.meta.get("tests_total") or 0),
                )
            )
    return sorted(runs, key=lambda r: (r.backend, r.task_id)), notes
