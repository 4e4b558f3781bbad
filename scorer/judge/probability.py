"""`goal_probability`: the chance that the task's own acceptance checks pass (pure).

The LLM judge states, per requirement, a status, a core flag and a confidence; the
heuristic judge's rules leave a label, a rule and that rule's accuracy. Code turns those,
plus the outcome signals every session has, into one probability with a small logistic
model fitted on the dev split of the Terminal-Bench runs only, and shipped as data beside
the rubric (`score_configs/goal_probability.json`: its version, the dev run ids it was
fitted on, the coefficients, the goal thresholds and the uncertain band).

    features(card, signals)  → a few numbers (`LLM_FEATURES`, `HEURISTIC_FEATURES`)
    probability(model, x)    → σ(intercept + coef · standardised x)
    goal_label(p, ...)       → goal_achievement by the fitted thresholds: complete (or the
                               judge's `exceeded`) at p ≥ `complete`; failed below `failed`
                               or when no core requirement is done; partial otherwise

`benchmarks/validity.py fit` writes the file; `tests/judge/test_probability.py` fails if
it names any test-side run.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from scorer.errors import ConfigError
from scorer.resources import data_dir

if TYPE_CHECKING:
    from scorer.judge.rubric import Rubric
    from scorer.models import RequirementCheck, Scorecard
    from scorer.prepare.signals import Signals

MODEL_FILE = "goal_probability.json"
STATUS_DEFAULT = {"met": 0.9, "likely_met": 0.6, "unmet": 0.05, "not_attempted": 0.02}
"""A requirement's confidence when the card has none (judged before confidences existed)."""
_EPS = 0.02
GoalClass = Literal["failed", "partial", "complete"]


class Logistic(BaseModel):
    """A fitted logistic regression over standardised features."""

    model_config = ConfigDict(extra="forbid")

    features: list[str]
    """Names in `LLM_FEATURES` / `HEURISTIC_FEATURES`, in the order of `coef`."""
    mean: list[float]
    scale: list[float]
    coef: list[float]
    intercept: float

    def predict(self, x: Mapping[str, float]) -> float:
        """P(resolved) for the feature values `x`."""
        z = self.intercept
        for name, m, s, c in zip(self.features, self.mean, self.scale, self.coef, strict=True):
            z += c * (x[name] - m) / (s or 1.0)
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))


class GoalRule(BaseModel):
    """From the probability to goal_achievement (thresholds fitted on dev)."""

    model_config = ConfigDict(extra="forbid")

    complete: float = Field(ge=0, le=1)
    """p at or above: complete (exceeded when the judge said so)."""
    failed: float = Field(ge=0, le=1)
    """p below: failed."""


class JudgeModel(BaseModel):
    """One judge's probability model, goal rule and uncertain band."""

    model_config = ConfigDict(extra="forbid")

    model: Logistic
    rule: GoalRule
    band: tuple[float, float] | None = None
    """First verdicts with p in [low, high] get second opinions (LLM judge only)."""
    in_band_share: float = 0.0
    """Share of dev runs whose first verdict fell in the band (for estimates)."""
    relabel: bool = True
    """goal_achievement follows from the probability (`goal_label`); False: the judge's
    own class stands and the probability is only attached (set by the fit when the
    probability's classes were not better on dev than the judge's own)."""


class GoalModels(BaseModel):
    """The shipped file: both judges' models, what they were fitted on, and how well."""

    model_config = ConfigDict(extra="forbid")

    version: str
    fitted_on: list[str]
    """Dev run ids (`benchmarks/validity_split.json`): never a test-side run."""
    fitted_with: dict[str, str] = Field(default_factory=dict)
    """Prompt, rubric and heuristic versions of the verdicts it was fitted on."""
    llm: JudgeModel
    heuristic: JudgeModel
    dev: dict[str, Any] = Field(default_factory=dict)
    """Figures on dev (cross-validated), for the record."""


@lru_cache(maxsize=4)
def load_models(path: Path | None = None) -> GoalModels:
    """The shipped models (`score_configs/goal_probability.json`).

    Raises:
        ConfigError: The file is missing or invalid.
    """
    path = path or data_dir("score_configs") / MODEL_FILE
    try:
        return GoalModels.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"{path} is not a valid goal-probability model: {exc}") from exc


def shipped_goal_models() -> GoalModels | None:
    """The shipped models, or None in a checkout that has no fitted file yet."""
    path = data_dir("score_configs") / MODEL_FILE
    return load_models(path) if path.is_file() else None


# --- features ----------------------------------------------------------------------


def _confidence(check: RequirementCheck) -> float:
    value = check.confidence if check.confidence is not None else STATUS_DEFAULT.get(check.status)
    return min(1 - _EPS, max(_EPS, value if value is not None else 0.5))


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def checklist_features(checks: Sequence[RequirementCheck]) -> dict[str, float]:
    """What the LLM judge's checklist says, as numbers (an empty one reads as unsure)."""
    if not checks:
        return {"core_conf_min": 0.0, "core_conf_mean": 0.0, "conf_mean": 0.0,
                "share_met": 0.0, "share_done": 0.0, "core_open": 1.0}  # fmt: skip
    core = [c for c in checks if c.core] or list(checks)
    conf_core = [_logit(_confidence(c)) for c in core]
    return {
        "core_conf_min": min(conf_core),
        "core_conf_mean": sum(conf_core) / len(conf_core),
        "conf_mean": sum(_logit(_confidence(c)) for c in checks) / len(checks),
        "share_met": sum(c.status == "met" for c in checks) / len(checks),
        "share_done": sum(c.status in ("met", "likely_met") for c in checks) / len(checks),
        "core_open": float(any(c.status in ("unmet", "not_attempted") for c in core)),
    }


def signal_features(signals: Signals) -> dict[str, float]:
    """What the session shows about its outcome, as numbers."""
    claims = {True: 1.0, None: 0.0, False: -1.0}[signals.claims_success]
    after = signals.checks_after_edit
    return {
        "claims_success": claims,
        "cut_off": float(signals.cut_off),
        "check_failed_after_edit": float(any(c.status == "failed" for c in after)),
        "checked_after_edit": float(any(c.status == "passed" for c in after)),
        "caveats": float(bool(signals.final_caveats)),
        "repeated_failures": float(bool(signals.repeated_failures)),
        "artefact_broken": float(
            any(a.status in ("removed", "missing", "failed") for a in signals.artefacts)
        ),
    }


_HEURISTIC_GOAL = {"failed": 0.0, "partial": 1.0, "complete": 2.0, "exceeded": 2.0}


def heuristic_features(card: Scorecard) -> dict[str, float]:
    """What the heuristic judge's goal rule decided, and how sure that rule is."""
    goal = card.scores.get("goal_achievement")
    confidence = float(card.meta.get("goal_confidence") or 0.5)
    rules_said = card.meta.get("judge_goal") or (goal.label if goal else None)
    label = _HEURISTIC_GOAL.get(str(rules_said), 1.0)
    signed = confidence if label == 2.0 else 1 - confidence if label == 0.0 else 0.5
    return {"h_goal": label, "h_signed_conf": signed}


def features(card: Scorecard, signals: Signals) -> dict[str, float]:
    """Every feature either model may use, for this card and its session's signals."""
    x = signal_features(signals)
    if card.judge == "heuristic":
        x.update(heuristic_features(card))
    else:
        x.update(checklist_features(card.requirements))
    return x


# --- the verdict -------------------------------------------------------------------------


def goal_label(
    p: float, rule: GoalRule, checks: Sequence[RequirementCheck], judged: str | None
) -> str:
    """goal_achievement from the probability and the checklist (module doc)."""
    if p >= rule.complete:
        return "exceeded" if judged == "exceeded" else "complete"
    core = [c for c in checks if c.core] or list(checks)
    nothing_done = bool(core) and not any(c.status in ("met", "likely_met") for c in core)
    return "failed" if p < rule.failed or nothing_done else "partial"


def in_band(p: float, model: JudgeModel) -> bool:
    """Whether a first verdict is uncertain enough for second opinions."""
    return model.band is not None and model.band[0] <= p <= model.band[1]


def apply_probability(
    card: Scorecard, p: float, judge_model: JudgeModel, rubric: Rubric, *, version: str
) -> Scorecard:
    """`card` with `goal_probability` set and goal_achievement following from it.

    The judge's own label stays in `meta.judge_goal` (and the contradiction check with its
    checklist, made when the card was built, stays too); the overall is recomputed.
    """
    from scorer.judge.rubric import with_overall

    goal = card.scores.get("goal_achievement")
    if goal is None or card.status != "scored":
        return card
    label = goal_label(p, judge_model.rule, card.requirements, goal.label)
    if not judge_model.relabel:
        label = str(goal.label)
    meta = {**card.meta, "goal_probability_model": version}
    scores = dict(card.scores)
    if label != goal.label:
        meta["judge_goal"] = goal.label
        value = float(rubric.get("goal_achievement").category(label).value)
        note = f"[{label}: goal probability {p:.2f}; the judge said {goal.label}] "
        scores["goal_achievement"] = goal.model_copy(
            update={
                "value": value,
                "label": label,
                "normalized": rubric.normalize("goal_achievement", value),
                "rationale": note + goal.rationale,
            }
        )
    update: dict[str, Any] = {"goal_probability": round(p, 4), "meta": meta}
    if label != goal.label:  # the overall follows the new goal
        update["scores"] = with_overall(scores, rubric)
    return card.model_copy(update=update)
