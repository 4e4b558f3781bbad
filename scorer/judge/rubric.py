"""The seven scores as validated data, loaded from `score_configs/*.toml`.

The same files are what `scorer configs sync` pushes to Langfuse as score configs, with
one more: `goal_probability.toml`, a score computed in code from the judge's checklist
(`derived = true`). It is no rubric dimension: it has no weight, the judge never gives
it, and it stays out of `Rubric.scores` and the rubric's hash (`Rubric.derived`).
"""

from __future__ import annotations

import hashlib
import math
import tomllib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from scorer.errors import ConfigError
from scorer.models import DimensionScore
from scorer.resources import data_dir

OVERALL = "overall_quality"
V = TypeVar("V")


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")

    label: str
    value: int
    anchor: str


class Anchor(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: int
    anchor: str


class ScoreConfig(BaseModel):
    """One score: a judged dimension or the computed overall."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_ .()-]{1,35}$")
    data_type: Literal["NUMERIC", "CATEGORICAL"]
    weight: float = 0.0
    """Weight in the overall; 0 for the overall itself."""
    description: str
    categories: list[Category] = Field(default_factory=list)
    anchors: list[Anchor] = Field(default_factory=list)
    computed: bool = False
    """True for `overall_quality`: never asked of the judge."""
    derived: bool = False
    """True for a score computed in code beside the rubric (`goal_probability`): no
    weight, not in the overall, never asked of the judge; its value is the scorecard
    field of the same name, pushed to Langfuse when the card has it."""
    min_value: float | None = None
    max_value: float | None = None

    @model_validator(mode="after")
    def _check_shape(self) -> ScoreConfig:
        if self.data_type == "CATEGORICAL" and not self.categories:
            raise ValueError(f"{self.name}: CATEGORICAL needs categories")
        if self.data_type == "NUMERIC" and self.categories:
            raise ValueError(f"{self.name}: NUMERIC must not have categories")
        if self.derived and (self.weight or self.computed or self.data_type != "NUMERIC"):
            raise ValueError(f"{self.name}: a derived score is NUMERIC, without weight")
        if self.derived and (self.min_value is None or self.max_value is None):
            raise ValueError(f"{self.name}: a derived score needs min_value and max_value")
        return self

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.categories]

    def category(self, label: str) -> Category:
        for c in self.categories:
            if c.label == label:
                return c
        raise ValueError(f"{self.name}: unknown category {label!r} (expected {self.labels})")


class Rubric(BaseModel):
    """The rubric: a version, the numeric scale and the seven score configs."""

    model_config = ConfigDict(extra="forbid")

    version: str
    numeric_min: int
    numeric_max: int
    description: str
    scores: list[ScoreConfig]
    derived: list[ScoreConfig] = Field(default_factory=list)
    """Scores computed in code beside the rubric (`goal_probability`): Langfuse score
    configs like the seven, but no dimension, no weight, not in the overall or `hash`."""
    hash: str = ""
    """sha256 (first 16 hex) of the config files' content; recorded with every score."""

    @model_validator(mode="after")
    def _check(self) -> Rubric:
        names = [s.name for s in self.all_configs]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate score names in {names}")
        if OVERALL not in names:
            raise ValueError(f"missing {OVERALL}")
        total = sum(s.weight for s in self.dimensions)
        if not math.isclose(total, 1.0, abs_tol=1e-9):
            raise ValueError(f"dimension weights sum to {total:.4f}, not 1")
        for s in self.dimensions:
            if s.data_type == "NUMERIC":
                s.min_value, s.max_value = float(self.numeric_min), float(self.numeric_max)
        return self

    @property
    def all_configs(self) -> list[ScoreConfig]:
        """Every score config Langfuse holds: the seven scores, then the derived ones."""
        return [*self.scores, *self.derived]

    @property
    def dimensions(self) -> list[ScoreConfig]:
        """The six judged dimensions (everything but the computed overall)."""
        return [s for s in self.scores if not s.computed]

    def ordered(self, scores: Mapping[str, V]) -> dict[str, V]:
        """`scores` re-keyed in rubric order (the order of `scores`); unknown names last.

        Both judges, the terminal tables and the JSON output use this order, so the
        dimensions always read the same way whichever judge produced them.
        """
        rank = {s.name: i for i, s in enumerate(self.scores)}
        return dict(sorted(scores.items(), key=lambda kv: rank.get(kv[0], len(rank))))

    def get(self, name: str) -> ScoreConfig:
        for s in self.scores:
            if s.name == name:
                return s
        raise KeyError(name)

    def normalize(self, name: str, value: float) -> float:
        """Map a dimension value to 0..1 (see `_rubric.toml`)."""
        cfg = self.get(name)
        if cfg.data_type == "CATEGORICAL":
            top = max(c.value for c in cfg.categories)
            return value / top
        return (value - self.numeric_min) / (self.numeric_max - self.numeric_min)

    def overall(self, normalized: dict[str, float]) -> float:
        """Weighted overall on 0..1 from normalised dimension values (all six required)."""
        missing = [d.name for d in self.dimensions if d.name not in normalized]
        if missing:
            raise ValueError(f"cannot compute overall, missing {missing}")
        return round(sum(d.weight * normalized[d.name] for d in self.dimensions), 4)


def load_rubric(directory: Path | None = None) -> Rubric:
    """Load and validate `score_configs/` (weights must sum to 1)."""
    directory = directory or data_dir("score_configs")
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise ConfigError(f"no score configs found in {directory}")
    digest = hashlib.sha256()
    try:
        head: dict = {}
        scores: list[ScoreConfig] = []
        derived: list[ScoreConfig] = []
        for f in files:
            raw = f.read_bytes()
            data = tomllib.loads(raw.decode())
            if f.name == "_rubric.toml":
                head = data
            elif data.get("derived"):
                derived.append(ScoreConfig.model_validate(data))
                continue  # not what the judge is asked: the rubric's hash stays
            else:
                scores.append(ScoreConfig.model_validate(data))
            digest.update(f.name.encode() + b"\0" + raw)
        # Rubric order: the judged dimensions by weight (heaviest first, ties in file
        # order), then the computed overall. Sorting does not change the hash.
        scores.sort(key=lambda cfg: (cfg.computed, -cfg.weight))
        return Rubric(**head, scores=scores, derived=derived, hash=digest.hexdigest()[:16])
    except (ValidationError, ValueError, tomllib.TOMLDecodeError, TypeError) as e:
        first = str(e).splitlines()
        raise ConfigError(f"invalid score configs in {directory}: {' '.join(first[:3])}") from e


@lru_cache(maxsize=1)
def default_rubric() -> Rubric:
    return load_rubric()


def with_overall(scores: dict[str, DimensionScore], rubric: Rubric) -> dict[str, DimensionScore]:
    """The six dimension scores plus the overall computed from them, in rubric order."""
    scores = {n: s for n, s in scores.items() if n != OVERALL}
    normalized = {n: s.normalized for n, s in scores.items()}
    overall = rubric.overall(normalized)
    formula = " + ".join(f"{d.weight:g}×{normalized[d.name]:.3f}" for d in rubric.dimensions)
    scores[OVERALL] = DimensionScore(
        name=OVERALL, value=overall, normalized=overall, rationale=f"computed: {formula}"
    )
    return rubric.ordered(scores)
