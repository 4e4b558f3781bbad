"""A fixed dev/test split of labelled runs, stratified by outcome, grouped by task family.

Rules for the tasks (pure and deterministic; `SPLIT_METHOD` names this version), applied
to the outcomes of one *reference* backend (the agent model whose runs were split first):

1. A task's *family* is its id before the first `.` (`crack-7z-hash.hard` →
   `crack-7z-hash`): variants of one task go to the same side, so nothing tuned on
   `X.easy` is measured on `X.hard`.
2. Families are visited in the order of `sha256(SALT + family)`.
3. Each family goes to the side whose outcome classes (complete / partial / failed) are
   furthest below half of their totals, counted over the family's own classes; a tie
   goes to `dev`. So every class ends up split about 50/50.

And for the runs: every backend (agent model) ran the same tasks, so

4. each backend's run of a task goes to its task's side (to its family's side for a task
   the reference lacks; a task of a family not in the split is left out: placing it
   would move the sides). Both runs of a task are always on one side, and adding a
   backend never moves a task.

The split is committed as data (task ids per side, and per backend the runs on each
side) and the harness checks that it still follows these rules, so it cannot drift
quietly.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from scorer.errors import ConfigError

Side = Literal["dev", "test"]
SIDES: tuple[Side, Side] = ("dev", "test")
SALT = "session-scorer/validity-split/v1:"
SPLIT_METHOD = "family-grouped, outcome-stratified greedy over sha256(salt + family), v1"


class Split(BaseModel):
    """The committed split: which task ids are `dev` (may be tuned on) and `test` (never),
    and which backends' runs of them each side holds."""

    model_config = ConfigDict(extra="forbid")

    method: str
    """How the tasks were split (`SPLIT_METHOD`)."""
    reference: str = ""
    """The backend whose outcomes placed the tasks (rules 1-3)."""
    dev: list[str]
    """Task ids one may read and tune prompts, signals and rules on."""
    test: list[str]
    """Task ids never read while designing anything; reported, never tuned on."""
    runs: dict[str, dict[Side, list[str]]] = Field(default_factory=dict)
    """Backend → side → the task ids of that backend's runs on that side (rule 4)."""

    def side(self, task_id: str) -> Side | None:
        """Which side a task is on, or None when the split does not list it."""
        if task_id in self.dev:
            return "dev"
        if task_id in self.test:
            return "test"
        return None

    def run_side(self, backend: str, task_id: str) -> Side | None:
        """Which side a backend's run of a task is on, or None when the split omits it."""
        placed = self.runs.get(backend, {})
        return next((side for side in SIDES if task_id in placed.get(side, ())), None)


def family(task_id: str) -> str:
    """The task family: variants (`.easy`, `.hard`) share it."""
    return task_id.split(".", 1)[0]


def _order(name: str) -> str:
    return hashlib.sha256((SALT + name).encode()).hexdigest()


def make_split(outcomes: Mapping[str, str]) -> Split:
    """Split task ids by the rules of the module docstring.

    Args:
        outcomes: task id → outcome class (`complete`, `partial`, `failed`).
    """
    families: dict[str, list[str]] = defaultdict(list)
    for task_id in sorted(outcomes):
        families[family(task_id)].append(task_id)
    totals = Counter(outcomes.values())
    taken: dict[Side, Counter[str]] = {side: Counter() for side in SIDES}
    chosen: dict[Side, list[str]] = {side: [] for side in SIDES}
    for name in sorted(families, key=_order):
        members = families[name]

        def deficit(side: Side, members: list[str] = members) -> float:
            return sum(totals[outcomes[t]] / 2 - taken[side][outcomes[t]] for t in members)

        side: Side = "dev" if deficit("dev") >= deficit("test") else "test"
        chosen[side] += members
        taken[side].update(outcomes[t] for t in members)
    return Split(method=SPLIT_METHOD, dev=sorted(chosen["dev"]), test=sorted(chosen["test"]))


def place_runs(split: Split, backends: Mapping[str, Iterable[str]]) -> Split:
    """`split` with each backend's runs on their task's side (rule 4).

    Args:
        split: The task split (its `dev` and `test` are kept as they are).
        backends: backend → the task ids it has a labelled run of.
    """
    by_family = {family(t): side for side in SIDES for t in getattr(split, side)}
    runs: dict[str, dict[Side, list[str]]] = {}
    for backend, task_ids in sorted(backends.items()):
        placed: dict[Side, list[str]] = {side: [] for side in SIDES}
        for task_id in sorted(task_ids):
            side = split.side(task_id) or by_family.get(family(task_id))
            if side is not None:
                placed[side].append(task_id)
        runs[backend] = placed
    return split.model_copy(update={"runs": runs})


def build_split(outcomes: Mapping[str, Mapping[str, str]], reference: str) -> Split:
    """The split the rules give: tasks by the reference backend's outcomes, then the runs.

    Args:
        outcomes: backend → task id → outcome class.
        reference: The backend whose outcomes place the tasks.

    Raises:
        ConfigError: The reference backend is not among `outcomes`.
    """
    if reference not in outcomes:
        found = ", ".join(sorted(outcomes)) or "none"
        raise ConfigError(
            f"the split's reference backend {reference!r} is not in the data ({found})"
        )
    tasks = make_split(outcomes[reference]).model_copy(update={"reference": reference})
    return place_runs(tasks, {b: list(o) for b, o in outcomes.items()})


def load_split(path: Path) -> Split:
    """Read a committed split file.

    Raises:
        ConfigError: The file is missing, not JSON, or not a split.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        split = Split.model_validate(data)
    except (OSError, ValueError) as e:
        raise ConfigError(f"cannot read the split {path}: {e}") from e
    both = set(split.dev) & set(split.test)
    if both:
        raise ConfigError(f"split {path}: on both sides: {sorted(both)}")
    for backend, placed in split.runs.items():
        apart = [
            t for side in SIDES for t in placed.get(side, ()) if split.side(t) not in (None, side)
        ]
        if apart:
            raise ConfigError(
                f"split {path}: {backend} runs not on their task's side: {sorted(apart)}"
            )
    return split


def dump_split(split: Split) -> str:
    """The split file's text (stable: sorted ids, one per line)."""
    return json.dumps(split.model_dump(), indent=1) + "\n"
