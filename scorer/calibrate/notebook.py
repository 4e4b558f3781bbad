"""Helpers for `notebooks/calibration.ipynb` and `notebooks/exploration.ipynb`.

The notebooks stay short and readable because the joining and tabulating happens here:
one `SessionRow` per scored session (scores + session signals + Terminal-Bench times),
grouping, and Markdown tables (no pandas). Everything is pure except `use_scratch_home`,
`bench_times` and `load_sessions`, which touch the environment or the disk.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from scorer.calibrate.stats import BOOTSTRAPPED, DimensionAgreement, latest_scorecards
from scorer.errors import ScorerError
from scorer.models import Scorecard, Session
from scorer.prepare.signals import compute_signals
from scorer.settings import get_settings

NOTEBOOK_HOME_ENV = "SCORER_NOTEBOOK_HOME"
"""Point the notebooks at an existing store (e.g. your real `SCORER_HOME`); unset = scratch."""
OVERALL = "overall_quality"
_STAT_COLUMNS = ("n", *BOOTSTRAPPED, "pearson")


# --- environment (I/O) ---------------------------------------------------------------


def use_scratch_home(prefix: str = "scorer-notebook-") -> Path:
    """Set `SCORER_HOME` for this process: `$SCORER_NOTEBOOK_HOME` if set, else a new temp dir.

    So running a notebook never writes to the user's score store unless asked to.
    """
    get_settings.cache_clear()  # read SCORER_NOTEBOOK_HOME as the environment is now
    configured = get_settings().notebook_home
    home = configured.expanduser() if configured else Path(tempfile.mkdtemp(prefix=prefix))
    home.mkdir(parents=True, exist_ok=True)
    os.environ["SCORER_HOME"] = str(home)
    get_settings.cache_clear()
    return home


def bench_times(root: Path) -> dict[str, datetime]:
    """`agent_started_at` of every Terminal-Bench run under `root` (one backend's folder
    or the folder holding several), by session id (a task is run once per backend)."""
    from scorer.calibrate.ground_truth import load_terminal_bench

    return {
        lab.session_id: datetime.fromisoformat(started)
        for lab in load_terminal_bench(root)
        if (started := lab.meta.get("agent_started_at"))
    }


def load_sessions(cards: Iterable[Scorecard]) -> tuple[dict[str, Session], dict[str, str]]:
    """Re-read each card's session from `meta["origin"]` (a transcript path).

    Returns:
        `(sessions by session id, why a session could not be loaded)`.
    """
    from scorer.sources import resolve

    sessions: dict[str, Session] = {}
    missing: dict[str, str] = {}
    for card in cards:
        origin = card.meta.get("origin")
        if card.session_id in sessions or card.session_id in missing:
            continue
        if not origin or not Path(origin).is_file():
            missing[card.session_id] = "no local transcript"
            continue
        try:
            sessions[card.session_id] = resolve(str(origin)).load()
        except ScorerError as e:
            missing[card.session_id] = str(e)
    return sessions, missing


# --- one row per scored session (pure) -------------------------------------------------


@dataclass
class SessionRow:
    """What the exploration notebook knows about one scored session."""

    session_id: str
    judge: str
    judge_model: str | None
    started_at: datetime | None
    project: str
    agent_model: str
    """The main model (the first the session used; subagent/small models come later)."""
    tool_mix: dict[str, int]
    tool_calls: int
    tool_errors: int
    scores: dict[str, float]
    labels: dict[str, str | None]
    card: Scorecard
    task_id: str | None = None
    outcome: str | None = None
    """Ground-truth goal label (Terminal-Bench), when known."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def overall(self) -> float | None:
        return self.scores.get(OVERALL)

    @property
    def dominant_tool(self) -> str:
        return dominant_tool(self.tool_mix)


def dominant_tool(calls_per_tool: dict[str, int]) -> str:
    """The most used tool (ties by name), or `none` for a session without tool calls."""
    if not calls_per_tool:
        return "none"
    return min(calls_per_tool.items(), key=lambda kv: (-kv[1], kv[0]))[0]


def pick_judge(cards: Sequence[Scorecard]) -> str | None:
    """The judge to explore: `llm` when any LLM scorecard exists, else `heuristic`."""
    kinds = {c.judge for c in cards if c.status == "scored"}
    return "llm" if "llm" in kinds else ("heuristic" if kinds else None)


def session_rows(
    cards: Sequence[Scorecard],
    sessions: dict[str, Session],
    *,
    judge: str | None = None,
    times: dict[str, datetime] | None = None,
    outcomes: dict[str, dict[str, Any]] | None = None,
) -> list[SessionRow]:
    """Join the latest scorecard of each session with its session facts.

    Args:
        cards: stored scorecards (only the latest scored one per session and judge is used).
        sessions: loaded sessions by id; cards without one keep empty signals.
        judge: keep only this judge kind (default: `pick_judge(cards)`).
        times: start times by session id (or task id; Terminal-Bench `agent_started_at`,
            see `bench_times`); falls back to the session's own `started_at`, then the
            card's `created_at`.
        outcomes: ground truth by session id: `{"task_id": ..., "label": ...}`.
    """
    judge = judge or pick_judge(cards)
    times, outcomes = times or {}, outcomes or {}
    rows = []
    for card in latest_scorecards(c for c in cards if c.judge == judge):
        session = sessions.get(card.session_id)
        signals = compute_signals(session) if session else None
        truth = outcomes.get(card.session_id, {})
        task_id = truth.get("task_id")
        started = times.get(card.session_id) or (times.get(task_id) if task_id else None)
        started = started or (session.started_at if session else None) or card.created_at
        rows.append(
            SessionRow(
                session_id=card.session_id,
                judge=card.judge,
                judge_model=card.model,
                started_at=started,
                project=(session.project if session else None) or "unknown",
                agent_model=session.models[0] if session and session.models else "unknown",
                tool_mix=dict(signals.calls_per_tool) if signals else {},
                tool_calls=signals.tool_calls if signals else 0,
                tool_errors=signals.tool_errors if signals else 0,
                scores={name: s.value for name, s in card.scores.items()},
                labels={name: s.label for name, s in card.scores.items()},
                card=card,
                task_id=task_id,
                outcome=truth.get("label"),
            )
        )
    return sorted(rows, key=lambda r: (r.started_at or r.card.created_at, r.session_id))


def outcomes_from_labels(labels: Iterable[Any], dimension: str = "goal_achievement") -> dict:
    """`{session_id: {"task_id", "label"}}` from ground-truth `Label`s of one dimension."""
    return {
        lab.session_id: {"task_id": lab.meta.get("task_id"), "label": lab.label}
        for lab in labels
        if lab.dimension == dimension
    }


# --- grouping and tables (pure) --------------------------------------------------------


def time_bucket(rows: Sequence[SessionRow]) -> Callable[[SessionRow], str]:
    """A key function bucketing start times by hour, day or ISO week, whichever gives
    a handful of buckets for the rows' time span."""
    times = [r.started_at for r in rows if r.started_at]
    span = (max(times) - min(times)).total_seconds() if times else 0
    if span <= 2 * 86_400:
        fmt = "%Y-%m-%d %H:00"
    elif span <= 60 * 86_400:
        fmt = "%Y-%m-%d"
    else:
        fmt = "%G-W%V"
    return lambda r: r.started_at.strftime(fmt) if r.started_at else "unknown"


def group_values(
    rows: Iterable[SessionRow], key: Callable[[SessionRow], str], dimension: str = OVERALL
) -> dict[str, list[float]]:
    """`dimension` values grouped by `key(row)`, groups in sorted order."""
    groups: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        if dimension in row.scores:
            groups[key(row)].append(row.scores[dimension])
    return dict(sorted(groups.items()))


def group_summary(groups: dict[str, list[float]]) -> list[dict[str, Any]]:
    """n, mean, median, min and max of each group."""
    return [
        {
            "group": name,
            "n": len(values),
            "mean": statistics.fmean(values),
            "median": statistics.median(values),
            "min": min(values),
            "max": max(values),
        }
        for name, values in groups.items()
        if values
    ]


def tool_share(rows: Iterable[SessionRow]) -> dict[str, float]:
    """Each tool's share of all tool calls, largest first."""
    total: Counter[str] = Counter()
    for row in rows:
        total.update(row.tool_mix)
    n = sum(total.values())
    return {tool: count / n for tool, count in total.most_common()} if n else {}


def worst_sessions(
    rows: Iterable[SessionRow], n: int = 5, dimension: str = OVERALL
) -> list[SessionRow]:
    """The `n` lowest-scoring rows on `dimension` (ties by session id)."""
    scored = [r for r in rows if dimension in r.scores]
    return sorted(scored, key=lambda r: (r.scores[dimension], r.session_id))[:n]


def explain(card: Scorecard, *, dims: int = 3, refs: int = 4) -> str:
    """Markdown saying why a session scored low: summary, the lowest dimensions with
    rationale and evidence refs, and the judge's listed failures."""
    lines = [f"**{card.session_id}** ({card.judge}) — {card.summary or 'no summary'}"]
    ranked = sorted(
        (s for name, s in card.scores.items() if name != OVERALL), key=lambda s: s.normalized
    )
    for score in ranked[:dims]:
        cited = ", ".join(
            f"#{e.event}" + (f" “{e.quote[:60]}”" if e.quote else "") for e in score.evidence[:refs]
        )
        value = score.label or f"{score.value:g}"
        lines.append(
            f"- `{score.name}` = {value}: {score.rationale or '—'}"
            + (f" (evidence: {cited})" if cited else "")
        )
    lines += [f"- failure: {f}" for f in card.failures]
    return "\n".join(lines)


def stats_dict(a: DimensionAgreement) -> dict[str, Any]:
    """The main statistics of one agreement with their 95% intervals, JSON-friendly."""
    out: dict[str, Any] = {"dimension": a.dimension, "judge": a.judge, "model": a.model}
    for name in _STAT_COLUMNS:
        out[name] = getattr(a, name)
        ci = a.ci.get(name)
        if ci is not None:
            out[f"{name}_ci"] = [ci.low, ci.high]
    return out


def disagreement_rows(a: DimensionAgreement, outcomes: dict | None = None) -> list[dict]:
    """The largest disagreements of one agreement, with their evidence refs."""
    outcomes = outcomes or {}
    names = dict(zip(a.labels, a.label_names, strict=True))
    rows = []
    for p in a.disagreements:
        refs = ", ".join(
            f"#{e.event}" + (f" “{e.quote[:50]}”" if e.quote else "") for e in p.evidence
        )
        rows.append(
            {
                "session": p.session_id[:8],
                "task": outcomes.get(p.session_id, {}).get("task_id") or "",
                "judge": p.judge_label or names.get(p.judge_value, f"{p.judge_value:g}"),
                "truth": p.human_label or names.get(p.human_value, f"{p.human_value:g}"),
                "diff": p.diff,
                "evidence": refs or "—",
                "rationale": p.rationale[:160],
            }
        )
    return rows


def markdown_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    """A Markdown table of dict rows (floats to 2 decimals, `None` as an em dash)."""
    if not rows:
        return "_(no rows)_"
    columns = list(columns or rows[0])

    def cell(value: Any) -> str:
        if value is None:
            return "—"
        if isinstance(value, float):
            return f"{value:.2f}"
        if isinstance(value, list | tuple):
            return "[" + ", ".join(cell(v) for v in value) + "]"
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines)


def stat_rows(
    agreements: Iterable[DimensionAgreement],
    fields: Sequence[str] = ("n", "exact_agreement", "weighted_kappa", "spearman", "mae", "bias"),
) -> list[dict[str, str]]:
    """One display row per agreement: each statistic as `value [low, high]`."""

    def show(a: DimensionAgreement, name: str) -> str:
        value = getattr(a, name)
        if value is None:
            return "—"
        text = str(value) if isinstance(value, int) else f"{value:.2f}"
        ci = a.ci.get(name)
        if ci is not None and ci.low is not None and ci.high is not None:
            text += f" [{ci.low:.2f}, {ci.high:.2f}]"
        return text

    return [
        {"judge": f"{a.judge}/{a.model or '-'}", "dimension": a.dimension}
        | {name: show(a, name) for name in fields}
        for a in agreements
    ]


def event_excerpts(session: Session, indices: Iterable[int], width: int = 300) -> list[str]:
    """`#n kind tool: text…` for each cited event number that exists in the session."""
    by_index = {event.index: event for _, event in session.iter_events()}
    lines = []
    for index in indices:
        event = by_index.get(index)
        if event is None:
            lines.append(f"#{index}: (no such event)")
            continue
        head = f"#{index} {event.kind.value}" + (f" {event.tool_name}" if event.tool_name else "")
        text = event.text or json.dumps(event.tool_input or {}, ensure_ascii=False)
        text = " ".join(text.split())
        lines.append(f"{head}: {text[:width]}" + ("…" if len(text) > width else ""))
    return lines


def show(fig: Any) -> None:
    """Display a matplotlib figure as a PNG and close it.

    Works under any backend, including a non-interactive one (Agg) where the notebook
    would not render figures by itself.
    """
    import io

    import matplotlib.pyplot as plt
    from IPython.display import Image, display

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    display(Image(data=buf.getvalue(), format="png"))
