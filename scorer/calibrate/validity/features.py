"""What a goal-probability model is fitted on: one row per dev run with a verdict.

Dev only, never test: the rows are the training data of the model `probability_of`
will apply, and a fitted model that saw a test run would make the test figures
meaningless. Each row has the run (opaque id, task and family, for grouped
cross-validation), its backend, its outcome class and resolved 0/1, and the verdict's
goal label and checklist (status, core, evidence count, and the confidence when the
verdict states one), plus the heuristic card's goal and any second opinions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scorer.calibrate.validity.runs import BenchRun
from scorer.calibrate.validity.split import family
from scorer.calibrate.validity.verdicts import FIRST, goal_label, second_opinions
from scorer.calibrate.validity.workspace import Manifest, RunEntry


def checklist(reply: dict[str, Any]) -> list[dict[str, Any]]:
    """The verdict's requirements as model inputs (no free text)."""
    items = []
    for req in reply.get("requirements") or []:
        item = {
            "status": req.get("status"),
            "core": bool(req.get("core", True)),
            "n_evidence": len(req.get("evidence") or []),
        }
        if "confidence" in req:
            item["confidence"] = req["confidence"]
        items.append(item)
    return items


def _verdict(reply: dict[str, Any]) -> dict[str, Any]:
    from scorer.judge.checklist import goal_from_reply

    return {
        "goal": reply["goal_achievement"]["value"],
        "checklist_goal": goal_from_reply(reply),
        "checklist": checklist(reply),
    }


def _heuristic(folder: Path, run: str) -> dict[str, Any]:
    card = json.loads((Path(folder) / "heuristic" / f"{run}.json").read_text(encoding="utf-8"))
    meta = card.get("meta", {})
    return {
        "goal": card["scores"]["goal_achievement"]["label"],
        "rule": meta.get("goal_rule"),
        "rule_confidence": meta.get("goal_confidence"),
        "goal_probability": card.get("goal_probability"),
    }


def _row(folder: Path, entry: RunEntry, run: BenchRun, reply: dict[str, Any]) -> dict[str, Any]:
    seconds = []
    for opinion in second_opinions(folder, entry.run):
        other, _ = goal_label(folder, entry, opinion)
        if other is not None:
            seconds.append({"opinion": opinion, **_verdict(other)})
    return {
        "run": run.run_id,
        "task_id": run.task_id,
        "family": family(run.task_id),
        "backend": run.backend,
        "outcome": run.outcome,
        "resolved": int(run.outcome == "complete"),
        "n_chunks": entry.n_chunks,
        **_verdict(reply),
        "heuristic": _heuristic(folder, entry.run),
        "second_opinions": seconds,
    }


def feature_rows(
    folder: Path, manifest: Manifest, runs: list[BenchRun], *, opinion: str = FIRST
) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows of every dev run with a verdict (`opinion`: which verdict is the row's).

    Returns:
        The rows (manifest order) and the dev runs left out (no verdict).
    """
    dev = {r.run_id: r for r in runs if r.side == "dev"}
    rows, left = [], []
    for entry in manifest.runs:
        run = dev.get(entry.run)
        if run is None or entry.side != "dev":  # test runs never get here
            continue
        reply, why = goal_label(folder, entry, opinion)
        if reply is None:
            left.append(f"{entry.run}: {why}")
            continue
        rows.append(_row(folder, entry, run, reply))
    return rows, left


def dump_rows(rows: list[dict[str, Any]]) -> str:
    """JSON Lines: one row per line."""
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n" for row in rows)
