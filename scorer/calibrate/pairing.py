"""Pairing judge scorecards with ground-truth labels: one `Pair` per session and dimension.

The join is on session id, or on a Langfuse trace/session id the scorecard carries;
several annotators on one session collapse to their low median.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, Field

from scorer.calibrate.ground_truth import Label
from scorer.models import EvidenceRef, Scorecard

GOAL = "goal_achievement"
_JOIN_META_KEYS = ("trace_id", "langfuse_trace_id", "langfuse_session_id")
"""Scorecard.meta keys that also identify the session (Langfuse-sourced scorecards)."""


class Pair(BaseModel):
    """One session's judge value next to its ground truth, for one dimension."""

    session_id: str
    dimension: str
    judge: str
    model: str | None = None
    prompt_version: str
    judge_value: float
    judge_label: str | None = None
    judge_probability: float | None = None
    """goal_achievement only: the card's `goal_probability` (None when it has none)."""
    human_value: float
    """Consensus of the annotators: the low median of their values."""
    human_label: str | None = None
    human_values: list[float]
    annotators: list[str]
    rationale: str = ""
    evidence: list[EvidenceRef] = Field(default_factory=list)
    langfuse_url: str | None = None
    task: str | None = None
    """A readable task name from the labels (`task_id`, `task`, `title` columns), if any."""
    link: str | None = None
    """Where to look at the session: its Langfuse URL, else a URL or path from the labels
    or the scorecard's origin."""

    @property
    def diff(self) -> float:
        """Judge minus human."""
        return self.judge_value - self.human_value


def latest_scorecards(scorecards: Iterable[Scorecard]) -> list[Scorecard]:
    """The newest scored card per (session, judge, model, prompt version)."""
    latest: dict[tuple, Scorecard] = {}
    for card in scorecards:
        if card.status != "scored":
            continue
        key = (card.session_id, card.judge, card.model, card.prompt_version)
        if key not in latest or card.created_at > latest[key].created_at:
            latest[key] = card
    return list(latest.values())


def join_keys(card: Scorecard) -> list[str]:
    """Ids a label may use for this card: its session id, then Langfuse trace/session ids."""
    keys = [card.session_id]
    keys += [str(card.meta[k]) for k in _JOIN_META_KEYS if card.meta.get(k)]
    return keys


_TASK_KEYS = ("task_id", "task", "task_name", "title")
_LINK_KEYS = ("url", "link", "session_path", "path")


def _first_meta(labels: list[Label], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        for lab in labels:
            value = lab.meta.get(key)
            if isinstance(value, str) and value.strip():
                return value.strip()
    return None


def _origin_link(card: Scorecard) -> str | None:
    """The scorecard's origin when it is a URL or an existing file (tmux targets are not)."""
    origin = card.meta.get("origin")
    if not isinstance(origin, str):
        return None
    if origin.startswith(("http://", "https://")):
        return origin
    return origin if origin.startswith("/") and Path(origin).is_file() else None


def pair(scorecards: Iterable[Scorecard], labels: Iterable[Label], dimension: str) -> list[Pair]:
    """Join the latest scorecards with the labels of `dimension` on session id (or subject).

    Several annotators on one session collapse to their low median (an actual label,
    so it stays on the label set); each annotator counts once (their last label wins).
    Sorted by judge, model, prompt version and session.
    """
    humans = labels_by_session(labels, dimension)
    pairs = []
    for card in latest_scorecards(scorecards):
        score = card.scores.get(dimension)
        key = next((k for k in join_keys(card) if k in humans), None)
        if score is None or key is None:
            continue
        group = humans[key]
        consensus = statistics.median_low([lab.value for lab in group])
        pairs.append(
            Pair(
                session_id=card.session_id,
                dimension=dimension,
                judge=card.judge,
                model=card.model,
                prompt_version=card.prompt_version,
                judge_value=score.value,
                judge_label=score.label,
                judge_probability=card.goal_probability if dimension == GOAL else None,
                human_value=consensus,
                human_label=next(lab.label for lab in group if lab.value == consensus),
                human_values=[lab.value for lab in group],
                annotators=[lab.annotator for lab in group],
                rationale=score.rationale,
                evidence=score.evidence,
                langfuse_url=card.meta.get("langfuse_url"),
                task=_first_meta(group, _TASK_KEYS),
                link=card.meta.get("langfuse_url")
                or _first_meta(group, _LINK_KEYS)
                or _origin_link(card),
            )
        )
    return sorted(pairs, key=lambda p: (*group_key(p), p.session_id))


def labels_by_session(labels: Iterable[Label], dimension: str) -> dict[str, list[Label]]:
    by_rater: dict[str, dict[str, Label]] = defaultdict(dict)
    for lab in labels:
        if lab.dimension == dimension:
            by_rater[lab.session_id][lab.annotator] = lab
    return {sid: list(raters.values()) for sid, raters in by_rater.items()}


def group_key(p: Pair) -> tuple[str, str, str]:
    return p.judge, p.model or "", p.prompt_version
