"""The harness's report: each judge's agreement with outcomes, per split, per backend and
pooled over backends.

Judges reported: `llm` (the verdicts' goal_achievement), `llm checklist` (the goal the
verdict's own requirement checklist implies, by `judge.checklist.goal_from_checklist`)
and `heuristic` (the heuristic card written with the packets). Each gets the label
figures (resolved-vs-not, 3-class exact, confusion) and the goal probability's (AUROC
beside the class's AUROC, Brier score, ECE, reliability bins; `n/a` where no run has a
probability: `probability.probability_of` for a verdict, the card's own for the
heuristic). Outcomes come from the labels, read here only: packets and the manifest
never hold them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer.calibrate.probability import ProbabilityFigures
from scorer.calibrate.validity.figures import Agreement, agreement, three_class
from scorer.calibrate.validity.probability import product_verdict
from scorer.calibrate.validity.runs import OUTCOMES, BenchRun
from scorer.calibrate.validity.verdicts import FIRST, goal_label, second_opinions
from scorer.calibrate.validity.workspace import Manifest, RunEntry
from scorer.judge.rubric import Rubric

GOALS = {
    "llm": (0.90, 0.80),
    "heuristic": (0.75, 0.60),
}
"""Issue 22's targets on the untuned (test) split: resolved-vs-not, 3-class exact."""
JUDGES = ("llm", "llm raw", "llm checklist", "heuristic")
"""`llm`: the product's card (its goal follows from the fitted probability); `llm raw`: the
verdict's own goal label; `llm checklist`: the goal its checklist implies."""
COMBINED = "combined"
"""The opinion that reads the first verdict plus its second opinions when it is unsure."""
POOLED = "all backends"


@dataclass
class Row:
    """One run with its outcome and every judge's label (None when it has none)."""

    run: str
    task_id: str
    side: str
    backend: str
    """The data folder of the agent model that ran it (`BenchRun.backend`)."""
    outcome: str
    labels: dict[str, str | None]
    dims: dict[str, dict[str, float]]
    """judge → dimension → value (numeric scale; categorical as its category value)."""
    conflict: str | None = None
    missing: str | None = None
    rule: str | None = None
    """The heuristic rule that decided goal_achievement (`meta.goal_rule`)."""
    probability: dict[str, float | None] = field(default_factory=dict)
    """judge → its goal probability for this run (None: it has none)."""
    seconds: int = 0
    """How many second opinions the run's scoring packet has."""


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
    folder: Path,
    manifest: Manifest,
    runs: Iterable[BenchRun],
    rubric: Rubric,
    *,
    opinion: str = FIRST,
) -> list[Row]:
    """Join the manifest's runs with their outcomes, verdicts and heuristic cards.

    Args:
        opinion: Which verdict of each packet the LLM judge's figures read: `first`
            (`<run>.json`) or a second opinion (`second-<k>`).
    """
    by_id = {r.run_id: r for r in runs}
    return [
        _row(folder, entry, by_id[entry.run], rubric, opinion)
        for entry in manifest.runs
        if entry.run in by_id
    ]


def _row(folder: Path, entry: RunEntry, run: BenchRun, rubric: Rubric, opinion: str) -> Row:
    from scorer.judge.checklist import conflict_with_checklist, goal_from_reply

    reply, why = goal_label(folder, entry, FIRST if opinion == COMBINED else opinion)
    card = json.loads((Path(folder) / "heuristic" / f"{entry.run}.json").read_text())
    row = Row(
        entry.run,
        entry.task_id,
        entry.side,
        run.backend,
        run.outcome,
        {"heuristic": card["scores"]["goal_achievement"]["label"], "llm": None,
         "llm checklist": None},
        {"heuristic": {k: v["value"] for k, v in card["scores"].items()}},
        missing=None if reply else why,
        rule=card.get("meta", {}).get("goal_rule"),
        probability={"heuristic": card.get("goal_probability")},
        seconds=len(second_opinions(folder, entry.run)),
    )  # fmt: skip
    if reply is not None:
        p, label = product_verdict(reply, run, _seconds(folder, entry, opinion))
        row.labels["llm"] = label
        row.labels["llm raw"] = reply["goal_achievement"]["value"]
        row.labels["llm checklist"] = goal_from_reply(reply)
        row.conflict = conflict_with_checklist(reply)
        row.dims["llm"] = _dims_of_reply(reply, rubric)
        row.probability["llm"] = p
    return row


def _seconds(folder: Path, entry: RunEntry, opinion: str) -> list[dict[str, Any]] | None:
    """The second opinions' replies, when the combined reading is asked for."""
    if opinion != COMBINED:
        return None
    replies = [goal_label(folder, entry, o)[0] for o in second_opinions(folder, entry.run)]
    return [r for r in replies if r is not None]


def _agreement(rows: list[Row], judge: str, n_boot: int) -> Agreement | None:
    judged = [r for r in rows if r.labels.get(judge)]
    if not judged:
        return None
    return agreement(
        [r.outcome for r in judged],
        [str(r.labels[judge]) for r in judged],
        [r.probability.get(judge) for r in judged],
        n_boot=n_boot,
    )


def _table(agreements: dict[str, Agreement], goal_side: bool) -> list[str]:
    lines = [f"  {'judge':<14} {'n':>3}  {'resolved-vs-not bal.acc':<26} {'3-class exact':<24}"]
    for judge, a in agreements.items():
        goal = GOALS.get(judge)
        target = f"  goal ≥ {goal[0]:.2f} / ≥ {goal[1]:.2f}" if goal and goal_side else ""
        lines.append(
            f"  {judge:<14} {a.n:>3}  {a.resolved.text():<26} {a.exact.text():<24}{target}"
        )
    return lines


def _ci(value: float | None, ci: tuple[float, float] | None, missing: str) -> str:
    if value is None:
        return missing
    return f"{value:.2f}" + (f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def _probability_table(agreements: dict[str, Agreement]) -> list[str]:
    lines = [f"  {'judge':<14} {'with p':>6}  {'AUROC p':<18} {'AUROC class':<18} "
             f"{'Brier':<6} {'ECE':<6}"]  # fmt: skip
    for judge, a in agreements.items():
        f = a.probability or ProbabilityFigures(n=a.n)
        na = "n/a" if f.n_probability == 0 else "—"
        lines.append(
            f"  {judge:<14} {f.n_probability:>6}  {_ci(f.auroc, f.auroc_ci, na):<18} "
            f"{_ci(f.auroc_class, f.auroc_class_ci, '—'):<18} "
            f"{_ci(f.brier, None, na):<6} {_ci(f.ece, None, na):<6}"
        )
    return lines


def _confusions(agreements: dict[str, Agreement]) -> list[str]:
    lines = ["  confusion (rows: outcome; columns: judged failed / partial / complete):"]
    for judge, a in agreements.items():
        cells = "  ".join(
            f"{name[:4]} {' '.join(f'{v:>2}' for v in row)}"
            for name, row in zip(OUTCOMES, a.confusion, strict=True)
        )
        lines.append(f"    {judge:<14} {cells}")
    return lines


def _reliability(agreements: dict[str, Agreement]) -> list[str]:
    lines = []
    for judge, a in agreements.items():
        if a.probability and a.probability.bins:
            cells = "; ".join(
                f"({b.low:.1f}, {b.high:.1f}] n={b.n} p={b.mean_probability:.2f} "
                f"resolved {b.resolved_share:.2f}"
                for b in a.probability.bins
            )
            lines.append(f"  reliability {judge}: {cells}")
    return lines


def _block(rows: list[Row], n_boot: int, goal_side: bool) -> list[str]:
    """Every figure of one group of runs."""
    agreements = {j: a for j in JUDGES if (a := _agreement(rows, j, n_boot)) is not None}
    if not agreements:
        return ["  no judge labels"]
    out = _table(agreements, goal_side) + _probability_table(agreements)
    out += _confusions(agreements) + _reliability(agreements)
    judged = sum(r.labels["llm"] is not None for r in rows)
    if judged:
        conflicts = sum(bool(r.conflict) for r in rows)
        out.append(f"  LLM goal contradicts its own checklist: {conflicts} of {judged}")
    return out


def groups(rows: list[Row]) -> list[tuple[str, list[Row]]]:
    """(name, rows): all backends pooled first, then each backend (when there are two+)."""
    by_backend: dict[str, list[Row]] = defaultdict(list)
    for r in rows:
        by_backend[r.backend].append(r)
    if len(by_backend) < 2:
        return [(next(iter(by_backend), POOLED), rows)]
    return [(POOLED, rows), *sorted(by_backend.items())]


def _counts(rows: list[Row]) -> str:
    counts = ", ".join(f"{sum(r.outcome == o for r in rows)} {o}" for o in OUTCOMES)
    judged = sum(r.labels["llm"] is not None for r in rows)
    return f"{len(rows)} runs ({counts}); LLM verdicts for {judged}"


def render(rows: list[Row], *, n_boot: int, opinion: str = FIRST) -> str:
    """The report as plain text: per split (dev, test, all), all backends pooled and
    then each backend."""
    out = [
        "Intervals: resolved-vs-not and AUROC = percentile bootstrap over runs "
        f"({n_boot} resamples, seed 0); 3-class exact = Wilson score interval. "
        "`exceeded` counts as complete. ECE: 10 equal-width bins. n/a: no run has a "
        f"probability. LLM verdict read: {opinion}.",
    ]
    seconds = sum(r.seconds > 0 for r in rows)
    if seconds:
        out.append(f"Second opinions held for {seconds} of {len(rows)} runs.")
    for side in ("dev", "test", "all"):
        part = [r for r in rows if side == "all" or r.side == side]
        if not part:
            continue
        out += ["", f"== {side}: {_counts(part)} =="]
        for name, members in groups(part):
            out += [f" [{name}: {_counts(members)}]"]
            out += _block(members, n_boot, goal_side=side == "test")
    return "\n".join(out) + "\n"


def reliability_plots(rows: list[Row], folder: Path) -> list[Path]:
    """Write a reliability diagram (PNG) per split, backend group and judge with
    probabilities into `folder`; returns the files (none without matplotlib)."""
    from scorer._fs import write_atomic
    from scorer.calibrate.plots import figure_class, plot_reliability

    figure, written = figure_class(), []
    for side in ("dev", "test", "all"):
        part = [r for r in rows if side == "all" or r.side == side]
        for name, members in groups(part) if part and figure else []:
            for judge in JUDGES:
                a = _agreement(members, judge, n_boot=0)
                if a is None or a.probability is None or not a.probability.bins:
                    continue
                path = Path(folder) / f"reliability-{side}-{name}-{judge}.png".replace(" ", "_")
                title = f"{judge}, {side}, {name} (n={a.probability.n_probability})"
                write_atomic(path, plot_reliability(figure, a.probability.bins, title))
                written.append(path)
    return written


def rule_accuracy(rows: list[Row], side: str = "dev") -> str:
    """How often each heuristic goal rule was right on one split, pooled and per backend:
    `RULE_ACCURACY`'s source."""
    lines = []
    for name, members in groups([r for r in rows if r.side == side]):
        counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in members:
            if r.rule and r.labels["heuristic"]:
                counts[r.rule][0] += three_class(r.labels["heuristic"]) == r.outcome
                counts[r.rule][1] += 1
        cells = ", ".join(f"{rule} {right}/{n}" for rule, (right, n) in sorted(counts.items()))
        lines.append(
            f"heuristic goal rules right on {side}, {name} (right/fired): {cells or 'none'}"
        )
    return "\n".join(lines or [f"heuristic goal rules right on {side}: none"]) + "\n"


def dimension_shift(before: list[Row], after: list[Row], judge: str) -> str:
    """Per-dimension mean before and after over the runs both folders hold for `judge`,
    pooled and per backend."""
    old = {r.run: r.dims[judge] for r in before if r.dims.get(judge)}
    lines = []
    for name, members in groups(after):
        new = {r.run: r.dims[judge] for r in members if r.dims.get(judge)}
        lines += _shift(old, new, judge, name)
    return "\n".join(lines) + "\n"


def _shift(
    old: dict[str, dict[str, float]], new: dict[str, dict[str, float]], judge: str, name: str
) -> list[str]:
    shared = sorted(set(old) & set(new))
    if not shared:
        return [f"{judge}, {name}: no run judged in both folders"]
    names = list(dict.fromkeys(k for run in shared for k in new[run]))
    lines = [f"{judge}, {name}: per-dimension mean over {len(shared)} runs judged in both "
             "(before → after)"]  # fmt: skip
    for dim in names:
        a = [old[run][dim] for run in shared if dim in old[run]]
        b = [new[run][dim] for run in shared if dim in new[run]]
        if a and b:
            lines.append(f"  {dim:<20} {sum(a) / len(a):6.3f} → {sum(b) / len(b):6.3f}")
    return lines


def outcome_of(label: str | None) -> str | None:
    return three_class(label) if label else None
