"""`score-calibrate`: load ground truth, make sure our scores exist, compute agreement.

Ground truth specs:
    terminal-bench[:PATH]   execution-verified outcomes (label.json files): PATH is one
                            backend's folder or the folder holding several (default:
                            every backend under ../shared/data/terminal-bench)
    langfuse                human annotation scores (v3 scores, source=ANNOTATION)
    FILE                    CSV or JSONL of (session_id, dimension, value, annotator)
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Literal

from scorer.calibrate import (
    CalibrationResult,
    Label,
    calibrate,
    load_file,
    load_langfuse_annotations,
    load_terminal_bench,
)
from scorer.errors import ConfigError
from scorer.models import Scorecard
from scorer.resources import data_dir
from scorer.settings import get_settings

JudgeFilter = Literal["heuristic", "llm", "all"]


def default_terminal_bench() -> Path:
    """`SCORER_TERMINAL_BENCH`, else `../shared/data/terminal-bench` beside the repo/cwd.

    The default is the folder holding every backend (one per agent model), so the
    labels cover all of them; a path to one backend's folder loads that backend only.
    """
    configured = get_settings().terminal_bench
    if configured:
        return configured
    tail = Path("shared/data/terminal-bench")
    for root in (data_dir("score_configs").parent.parent, Path.cwd().parent, Path.cwd()):
        if (root / tail).is_dir():
            return root / tail
    raise ConfigError(
        "terminal-bench data not found: pass terminal-bench:PATH or set SCORER_TERMINAL_BENCH"
    )


def load_ground_truth(spec: str, *, since: datetime | None = None) -> list[Label]:
    """Labels from a ground-truth spec (see module docstring)."""
    if spec == "terminal-bench" or spec.startswith("terminal-bench:"):
        path = Path(spec.split(":", 1)[1]) if ":" in spec else default_terminal_bench()
        if not path.is_dir():
            raise ConfigError(f"terminal-bench folder not found: {path}")
        return load_terminal_bench(path)
    if spec == "langfuse":
        from scorer.langfuse_client import make_client

        return load_langfuse_annotations(make_client(), since=since)
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"ground truth {spec!r} is not langfuse, terminal-bench[:PATH] or a file")
    return load_file(path)


def score_missing(
    labels: list[Label], judge: Literal["heuristic", "llm"], *, model: str | None = None
) -> int:
    """Score labelled sessions we have a transcript for but no current scorecard from `judge`
    (one at a time, no cap; `calibrate_fill.fill` has the options).

    Returns:
        How many sessions were judged now (scored or unscored).
    """
    from scorer.jobs.calibrate_fill import FillOptions, fill

    done = fill(labels, FillOptions(judge=judge, model=model))
    return done.scored + done.unscored


def run_calibration(
    labels: list[Label],
    *,
    judge: JudgeFilter = "all",
    model: str | None = None,
    n_boot: int = 500,
    since: datetime | None = None,
) -> CalibrationResult:
    """Agreement of every stored judge group with the labels (optionally filtered)."""
    from scorer.sinks.store import ScoreStore

    with ScoreStore() as store:
        cards = store.scorecards(judge=None if judge == "all" else judge, model=model)
    cards = [c for c in _calibration_first(cards) if since is None or c.created_at >= since]
    return calibrate(_only_labelled(cards, labels), labels, n_boot=n_boot)


def _calibration_first(cards: list[Scorecard]) -> list[Scorecard]:
    """Every card, less production cards of sessions that have a calibration card of the
    same judge, model, rubric and prompt version (its copy, or the run calibration made)."""

    def key(c: Scorecard) -> tuple[str, ...]:
        return (c.session_id, c.judge, c.model or "", c.rubric_version, c.prompt_version)

    calibrated = {key(c) for c in cards if c.collection == "calibration"}
    return [c for c in cards if c.collection == "calibration" or key(c) not in calibrated]


def _only_labelled(cards: list[Scorecard], labels: list[Label]) -> list[Scorecard]:
    wanted = {lab.session_id for lab in labels}
    return [c for c in cards if c.session_id in wanted or set(c.meta.values()) & wanted]
