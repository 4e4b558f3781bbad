"""The harness's report: each judge's agreement with outcomes, per split and per backend.

Judges reported: `llm` (the verdicts' goal_achievement), `llm checklist` (the goal the
verdict's own requirement checklist implies, by `judge.checklist.goal_from_checklist`)
and `heuristic` (the heuristic card written with the packets). Outcomes come from the
labels, read here only: packets and the manifest never hold them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scorer.calibrate.validity.figures import Agreement, agreement, three_class
from scorer.calibrate.validity.runs import OUTCOMES, BenchRun
from scorer.calibrate.validity.verdicts import goal_label
from scorer.calibrate.validity.workspace import Manifest
from scorer.judge.rubric import Rubric

GOALS = {
    "llm": (0.90, 0.80),
    "heuristic": (0.75, 0.60),
}
"""Issue 22's targets on the untuned (test) split: resolved-vs-not, 3-class exact."""
JUDGES = ("llm", "llm checklist", "heuristic")


@dataclass
class Row:
    """One run with its outcome and every judge's label (None when it has none)."""

    run: str
    task_id: str
    side: str
    backend: str
    outcome: str
    labels: dict[str, str | None]
    dims: dict[str, dict[str, float]]
    """judge → dimension → value (numeric scale; categorical as its category value)."""
    conflict: str | None = None
    missing: str | None = None
    rule: str | None = None
    """The heuristic rule that decided goal_achievement (`meta.goal_rule`)."""


def _dims_of_reply(reply: dict[str, Any], rubric: Rubric) -> dict[str, float]:
    out = {}
    for cfg in rubric.dimensions:
        value = (reply.get(cfg.name) or {}).get("value")
        if value is None:
            continue
        out[cfg.name] = float(
            cfg.category(value).value if cfg.data_type == "CATEGORICAL" else value
        )
    return out


def collect(
    folder: Path, manifest: Manifest, runs: Iterable[BenchRun], rubric: Rubric
) -> list[Row]:
    """Join the manifest's runs with their outcomes, verdicts and heuristic cards."""
    from scorer.judge.checklist import conflict_with_checklist, goal_from_reply

    by_id = {r.run_id: r for r in runs}
    rows = []
    for entry in manifest.runs:
        run = by_id.get(entry.run)
        if run is None:
            continue
        reply, why = goal_label(folder, entry)
        card = json.loads((Path(folder) / "heuristic" / f"{entry.run}.json").read_text())
        labels: dict[str, str | None] = {
            "heuristic": card["scores"]["goal_achievement"]["label"],
            "llm": None,
            "llm checklist": None,
        }
        dims = {"heuristic": {k: v["value"] for k, v in card["scores"].items()}}
        conflict = None
        if reply is not None:
            labels["llm"] = reply["goal_achievement"]["value"]
            labels["llm checklist"] = goal_from_reply(reply)
            conflict = conflict_with_checklist(reply)
            dims["llm"] = _dims_of_reply(reply, rubric)
        rows.append(
            Row(
                entry.run,
                entry.task_id,
                entry.side,
                entry.agent_backend,
                run.outcome,
                labels,
                dims,
                conflict,
                None if reply else why,
                card.get("meta", {}).get("goal_rule"),
            )
        )
    return rows


def _agreement(rows: list[Row], judge: str, n_boot: int) -> Agreement | None:
    pairs = [(r.outcome, r.labels[judge]) for r in rows if r.labels.get(judge)]
    if not pairs:
        return None
    return agreement([t for t, _ in pairs], [str(p) for _, p in pairs], n_boot=n_boot)


def _table(rows: list[Row], n_boot: int, goal_side: bool) -> list[str]:
    lines = [f"  {'judge':<14} {'n':>3}  {'resolved-vs-not bal.acc':<26} {'3-class exact':<24}"]
    for judge in JUDGES:
        a = _agreement(rows, judge, n_boot)
        if a is None:
            continue
        goal = GOALS.get(judge)
        target = f"  goal ≥ {goal[0]:.2f} / ≥ {goal[1]:.2f}" if goal and goal_side else ""
        lines.append(
            f"  {judge:<14} {a.n:>3}  {a.resolved.text():<26} {a.exact.text():<24}{target}"
        )
    return lines


def _confusions(rows: list[Row], n_boot: int) -> list[str]:
    lines = ["  confusion (rows: outcome; columns: judged failed / partial / complete):"]
    for judge in JUDGES:
        a = _agreement(rows, judge, n_boot=0)
        if a is None:
            continue
        cells = "  ".join(
            f"{name[:4]} {' '.join(f'{v:>2}' for v in row)}"
            for name, row in zip(OUTCOMES, a.confusion, strict=True)
        )
        lines.append(f"    {judge:<14} {cells}")
    return lines


def render(rows: list[Row], *, n_boot: int, backends: bool = True) -> str:
    """The report as plain text (one section per split, then all runs)."""
    out = [
        "Intervals: resolved-vs-not = percentile bootstrap over runs "
        f"({n_boot} resamples, seed 0); 3-class exact = Wilson score interval. "
        "`exceeded` counts as complete.",
    ]
    for side in ("dev", "test", "all"):
        part = [r for r in rows if side == "all" or r.side == side]
        if not part:
            continue
        counts = {o: sum(r.outcome == o for r in part) for o in OUTCOMES}
        judged = sum(r.labels["llm"] is not None for r in part)
        out += ["", f"== {side}: {len(part)} runs ({', '.join(f'{v} {k}' for k, v in counts.items())}); "
                f"LLM verdicts for {judged} =="]  # fmt: skip
        out += _table(part, n_boot, goal_side=side == "test")
        out += _confusions(part, n_boot)
        conflicts = [r for r in part if r.conflict]
        if judged:
            out.append(f"  LLM goal contradicts its own checklist: {len(conflicts)} of {judged}")
        if backends:
            out += _by_backend(part, n_boot)
    return "\n".join(out) + "\n"


def _by_backend(rows: list[Row], n_boot: int) -> list[str]:
    groups: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        groups[r.backend].append(r)
    lines = [f"  per agent backend ({len(groups)}):"]
    for backend, part in sorted(groups.items()):
        lines.append(f"   {backend} ({len(part)} runs)")
        lines += ["  " + line for line in _table(part, n_boot, goal_side=False)[1:]]
    return lines


def rule_accuracy(rows: list[Row], side: str = "dev") -> str:
    """How often each heuristic goal rule was right on one split: `RULE_ACCURACY`'s source."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r.side == side and r.rule and r.labels["heuristic"]:
            counts[r.rule][0] += three_class(r.labels["heuristic"]) == r.outcome
            counts[r.rule][1] += 1
    cells = ", ".join(f"{rule} {right}/{n}" for rule, (right, n) in sorted(counts.items()))
    return f"heuristic goal rules right on {side} (right/fired): {cells or 'none'}\n"


def dimension_shift(before: list[Row], after: list[Row], judge: str) -> str:
    """Per-dimension mean before and after over the runs both folders hold for `judge`."""
    old = {r.run: r.dims.get(judge) for r in before if r.dims.get(judge)}
    new = {r.run: r.dims.get(judge) for r in after if r.dims.get(judge)}
    shared = sorted(set(old) & set(new))
    if not shared:
        return f"{judge}: no run judged in both folders\n"
    names = list(dict.fromkeys(k for run in shared for k in (new[run] or {})))
    lines = [f"{judge}: per-dimension mean over {len(shared)} runs judged in both (before → after)"]
    for name in names:
        a = [old[run][name] for run in shared if name in (old[run] or {})]  # type: ignore[index]
        b = [new[run][name] for run in shared if name in (new[run] or {})]  # type: ignore[index]
        if a and b:
            lines.append(f"  {name:<20} {sum(a) / len(a):6.3f} → {sum(b) / len(b):6.3f}")
    return "\n".join(lines) + "\n"


def outcome_of(label: str | None) -> str | None:
    return three_class(label) if label else None
