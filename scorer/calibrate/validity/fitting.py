"""Fit the goal-probability models on the dev runs' verdicts (`validity.py fit`).

    dev runs with a first verdict
      → the card the product makes of each verdict (`AnthropicJudge.make_card`) and the
        heuristic rules' own card, with the session's outcome signals
      → `judge.probability.features` → `calibrate.fit` (grouped CV, logistic, rule, band)
      → `score_configs/goal_probability.json`

Test runs never reach this module: `dev_rows` takes the dev side only and refuses a
manifest entry whose split says test.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from scorer.calibrate.fit import Fitted, Row, balanced_accuracy, fit, fit_band, fit_rule
from scorer.calibrate.validity.probability import product_card
from scorer.calibrate.validity.runs import BenchRun
from scorer.calibrate.validity.split import family
from scorer.calibrate.validity.verdicts import FIRST, goal_label
from scorer.calibrate.validity.workspace import Manifest
from scorer.errors import ConfigError
from scorer.judge.probability import GoalModels, JudgeModel, features

LLM_CANDIDATES: tuple[tuple[str, ...], ...] = (
    ("core_conf_mean",),
    ("core_conf_min",),
    ("core_conf_min", "share_met"),
    ("core_conf_mean", "core_conf_min", "share_met", "core_open"),
    ("core_conf_mean", "core_conf_min", "share_met", "core_open", "claims_success", "cut_off",
     "check_failed_after_edit"),
)  # fmt: skip
"""Feature sets tried for the LLM judge (chosen by grouped-CV log loss on dev)."""
HEURISTIC_CANDIDATES: tuple[tuple[str, ...], ...] = (
    ("h_signed_conf",),
    ("h_goal", "h_signed_conf"),
    ("h_goal", "h_signed_conf", "claims_success", "cut_off", "check_failed_after_edit",
     "checked_after_edit", "caveats"),
    ("h_goal", "h_signed_conf", "claims_success", "cut_off", "check_failed_after_edit",
     "checked_after_edit", "caveats", "repeated_failures", "artefact_broken"),
)  # fmt: skip
MAX_BAND_SHARE = 0.25
"""At most this share of runs gets second opinions: two extra calls over a cached prefix
each, so the mean cost per session stays near 1.3x."""


@dataclass
class DevData:
    """The dev rows of both judges, and what was left out."""

    llm: list[Row]
    heuristic: list[Row]
    nothing_done: list[bool]
    """Per LLM row: no core requirement met or likely met (the rule's failed case)."""
    left_out: list[str]


def _nothing_done(card: Any) -> bool:
    core = [c for c in card.requirements if c.core] or list(card.requirements)
    return bool(core) and not any(c.status in ("met", "likely_met") for c in core)


def dev_rows(folder: Path, manifest: Manifest, runs: Iterable[BenchRun]) -> DevData:
    """Both judges' rows for every dev run with a first verdict.

    Raises:
        ConfigError: A run the manifest puts on the test side was handed in as dev.
    """
    from scorer.judge.heuristic import HeuristicJudge

    by_id = {r.run_id: r for r in runs if r.side == "dev"}
    data = DevData([], [], [], [])
    heuristic = HeuristicJudge(probability=False)
    for entry in manifest.runs:
        run = by_id.get(entry.run)
        if run is None:
            continue
        if entry.side != "dev":
            raise ConfigError(f"{entry.run} is on the {entry.side} side: never fitted on")
        reply, why = goal_label(folder, entry, FIRST)
        prepared = run.prepared()
        name, group = f"{run.backend}/{run.task_id}", family(run.task_id)
        resolved = int(run.outcome == "complete")
        raw = heuristic.judge(prepared)
        data.heuristic.append(
            Row(name, features(raw, prepared.signals), resolved, run.outcome, group)
        )
        if reply is None:
            data.left_out.append(f"{name}: {why}")
            continue
        card = product_card(reply, prepared)
        data.llm.append(Row(name, features(card, prepared.signals), resolved, run.outcome, group))
        data.nothing_done.append(_nothing_done(card))
    return data


def _summary(fitted: Fitted, rows: Sequence[Row], exact: float, rule: Any) -> dict[str, Any]:
    from sklearn.metrics import roc_auc_score

    y = [r.resolved for r in rows]
    return {
        "runs": len(rows),
        "resolved": sum(y),
        "features": fitted.model.features,
        "C": fitted.c,
        "cv_log_loss": round(fitted.log_loss, 4),
        "cv_auroc": round(float(roc_auc_score(y, fitted.oof)), 4) if 0 < sum(y) < len(y) else None,
        "cv_three_class_exact": round(exact, 4),
        "cv_resolved_balanced_accuracy": round(
            balanced_accuracy(y, [p >= rule.complete for p in fitted.oof]), 4
        ),
    }


def _rules_exact(rows: Sequence[Row]) -> float:
    """3-class agreement of the heuristic rules' own labels (`h_goal`) on the rows."""
    names = {0.0: "failed", 1.0: "partial", 2.0: "complete"}
    return sum(names[r.x["h_goal"]] == r.outcome for r in rows) / max(1, len(rows))


def fit_models(data: DevData, *, versions: dict[str, str], version: str) -> GoalModels:
    """Both judges' models, rules and (LLM) band, from the dev rows."""
    llm, _ = fit(data.llm, LLM_CANDIDATES)
    llm_rule, llm_exact = fit_rule(llm.oof, data.llm, data.nothing_done)
    band, share = fit_band(
        llm.oof, [r.resolved for r in data.llm], llm_rule.complete, MAX_BAND_SHARE
    )
    heur, _ = fit(data.heuristic, HEURISTIC_CANDIDATES)
    heur_rule, heur_exact = fit_rule(heur.oof, data.heuristic, [False] * len(data.heuristic))
    rules_exact = _rules_exact(data.heuristic)
    return GoalModels(
        version=version,
        fitted_on=sorted({r.run for r in data.llm} | {r.run for r in data.heuristic}),
        fitted_with={**versions, "fitted_at": datetime.now(UTC).strftime("%Y-%m-%d")},
        llm=JudgeModel(model=llm.model, rule=llm_rule, band=band, in_band_share=share),
        heuristic=JudgeModel(model=heur.model, rule=heur_rule, relabel=heur_exact > rules_exact),
        dev={
            "llm": _summary(llm, data.llm, llm_exact, llm_rule),
            "heuristic": {
                **_summary(heur, data.heuristic, heur_exact, heur_rule),
                "rules_three_class_exact": round(rules_exact, 4),
            },
            "left_out": data.left_out,
        },
    )
