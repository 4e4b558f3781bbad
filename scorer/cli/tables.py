"""Tables that stay readable at 80 columns (piped output, CI logs).

Rich squeezes a table that is too wide by cutting cells to `he…`. These tables never
cut ids, dates or numbers: below `NARROW` columns, or when the wide layout does not fit
the console, they stack instead (two lines per cell, or one table per group, each
holding half the columns). Pure: they build renderables, never print.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from scorer.calibrate.stats import CalibrationResult, DimensionAgreement
    from scorer.jobs.run_state import SessionResult
    from scorer.sinks.store import RunSummary

NARROW = 100
"""Below this many columns the tables use their stacked layout."""

ID_PREFIX = 8


def short_ids(ids: Iterable[str], min_len: int = ID_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix of at least `min_len` characters that no other id shares.

    Ids barely longer than the prefix are kept whole; `scorer scores show` takes any
    unique prefix, so a shortened id can be typed back.
    """
    unique = sorted(set(ids))
    short: dict[str, str] = {}
    for i, sid in enumerate(unique):
        neighbours = unique[max(0, i - 1) : i] + unique[i + 1 : i + 2]
        common = max((_common_prefix(sid, n) for n in neighbours), default=0)
        size = max(min_len, common + 1)
        short[sid] = sid if size + 2 >= len(sid) else sid[:size]
    return short


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def runs_table(runs: list[RunSummary], console: Console | None = None, title: str = "") -> Table:
    """One row per stored run, led by the session's title: full ids in one wide table when
    it fits `console` (None: always), else two lines per cell with unique id prefixes.
    Ids, dates and numbers are never wrapped; only a long title or model is shortened."""
    wide = _wide_runs(runs, title)
    if console is None or _fits(wide, console):
        return wide
    ids = short_ids(r.session_id for r in runs)
    paid = any(r.judge != "heuristic" for r in runs)
    # The other columns are short and never cut: the title column gets what is left.
    others = [9, 8, *([9] if paid else []), 10]
    room = max(20, console.width - sum(others) - 3 * (len(others) + 1) - 1)
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("title\nsession · project · agent model", max_width=room, no_wrap=True)
    table.add_column("overall\njudge", justify="right", no_wrap=True, min_width=others[0])
    table.add_column("goal\nrec.", no_wrap=True, min_width=others[1])
    if paid:
        table.add_column("cost", justify="right", no_wrap=True, min_width=others[2])
    table.add_column("started\n(UTC)", no_wrap=True, min_width=others[-1])
    for r in runs:
        when = r.session.started_at
        where = f"{ids[r.session_id]} · {r.session.project or '-'} · {agent_model(r)}"
        cells: list[RenderableType] = [
            _cut(r.title or "-", room) + Text("\n") + _cut(where, room, style="dim"),
            _overall_text(r) + Text(f"\n{r.judge}", style="dim"),
            f"{r.goal or '-'}\n[dim]{r.recommendation or '-'}[/]",
        ]
        if paid:
            cells.append(_cost(r))
        cells.append(f"{when:%Y-%m-%d}\n{when:%H:%M}" if when else "-")
        table.add_row(*cells)
    return table


def _wide_runs(runs: list[RunSummary], title: str) -> Table:
    table = Table(title=title, header_style="bold")
    table.add_column("title", max_width=48, overflow="ellipsis", no_wrap=True)
    table.add_column("session", no_wrap=True)
    table.add_column("project", no_wrap=True)
    table.add_column("agent model", max_width=24, overflow="ellipsis", no_wrap=True)
    for col in ("judge", "overall", "goal", "recommendation"):
        table.add_column(col, justify="right" if col == "overall" else "left", no_wrap=True)
    table.add_column("cost", justify="right", no_wrap=True)
    table.add_column("started (UTC)", no_wrap=True)
    for r in runs:
        when = r.session.started_at
        table.add_row(
            r.title or "-",
            r.session_id,
            r.session.project or "-",
            agent_model(r),
            r.judge + (f" {r.model}" if r.model else ""),
            _overall(r),
            r.goal or "-",
            r.recommendation or "-",
            _cost(r),
            f"{when:%Y-%m-%d %H:%M}" if when else "-",
        )
    return table


def _cut(text: str, width: int, style: str = "") -> Text:
    """One line of at most `width` cells, cut with `…`."""
    line = Text(text, style=style)
    line.truncate(width, overflow="ellipsis")
    return line


def agent_model(r: RunSummary) -> str:
    """The agent's main model, with `+N` when it used more."""
    models = r.session.agent_models or ([r.session.agent_model] if r.session.agent_model else [])
    if not models:
        return "-"
    return _model(models[0]) + (f" +{len(models) - 1}" if len(models) > 1 else "")


def _cost(r: RunSummary) -> str:
    """The judge's cost; `-` for the heuristic judge, which calls no model."""
    return "-" if r.judge == "heuristic" else f"${r.cost_usd:.4f}"


_OUTCOME_ORDER = ("failed", "incomplete", "unscored", "not_started", "busy", "estimated")
_OUTCOME_STYLE = {
    "failed": "red",
    "incomplete": "yellow",
    "unscored": "yellow",
    "busy": "yellow",
    "scored": "green",
}
_OUTCOME_TEXT = {"not_started": "not started", "estimated": "to judge"}


def results_table(results: list[SessionResult], width: int, limit: int = 30) -> Group:
    """The backfill's results, one row per session: what went wrong first, then the
    lowest overall first; at most `limit` rows, the rest counted below."""

    def rank(r: SessionResult) -> tuple[int, float, str]:
        first = _OUTCOME_ORDER.index(r.outcome) if r.outcome in _OUTCOME_ORDER else 9
        return first, r.overall if r.overall is not None else 2.0, r.title or r.session_id

    ordered = sorted(results, key=rank)
    ids = short_ids(r.session_id for r in results)
    others = [11, 7, 8, 9]
    room = max(20, width - sum(others) - 3 * (len(others) + 1) - 1)
    table = Table(title="results", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("outcome", no_wrap=True, min_width=others[0])
    table.add_column("overall", justify="right", no_wrap=True, min_width=others[1])
    table.add_column("goal", no_wrap=True, min_width=others[2])
    table.add_column("cost", justify="right", no_wrap=True, min_width=others[3])
    table.add_column("session", max_width=room, no_wrap=True)
    for r in ordered[:limit]:
        name = f"{r.title}  [{ids[r.session_id]}]" if r.title else r.session_id
        why = f" — {r.reason}" if r.reason and r.outcome not in ("scored", "estimated") else ""
        table.add_row(
            Text(_OUTCOME_TEXT.get(r.outcome, r.outcome), style=_OUTCOME_STYLE.get(r.outcome, "")),
            "-" if r.overall is None else f"{r.overall:.2f}",
            r.goal or "-",
            f"${r.cost_usd:.4f}" if r.cost_usd else "-",
            _cut(name + why, room),
        )
    rest = len(ordered) - limit
    more = [Text(f"… and {rest} more (scorer scores list)", style="dim")] if rest > 0 else []
    return Group(table, *more)


def _fits(table: Table, console: Console) -> bool:
    unbounded = console.options.update_width(10_000)  # else the measure is capped at width
    return console.width >= NARROW and console.measure(table, options=unbounded).maximum <= (
        console.width
    )


def _overall(r: RunSummary) -> str:
    return f"{r.overall:.2f}" if r.overall is not None else f"[red]{r.status}[/]"


def _overall_text(r: RunSummary) -> Text:
    return Text(f"{r.overall:.2f}") if r.overall is not None else Text(r.status, style="red")


def _model(model: str | None) -> str:
    """`sonnet-5-5` for `claude-sonnet-5-5`: the vendor prefix says nothing here."""
    return (model or "-").removeprefix("claude-")


def calibration_view(result: CalibrationResult, console: Console) -> RenderableType:
    """The calibration table: one wide table when it fits `console`, else per judge group
    two tables of six statistics each (fits 80 columns), the group as their title."""
    from scorer.calibrate import render_table

    wide = render_table(result)
    if _fits(wide, console):
        return wide
    from scorer.calibrate.report import STATS

    halves = [STATS[:6], STATS[6:]]
    groups: dict[str, list[DimensionAgreement]] = {}
    for a in result.agreements:
        groups.setdefault(_group(a), []).append(a)
    parts: list[RenderableType] = [f"[bold]Calibration (rubric {result.rubric_version})[/]"]
    for name, rows in groups.items():
        for stats in halves:
            parts.append(_stat_table(name, rows, stats))
    return Group(*parts)


def _group(a: DimensionAgreement) -> str:
    from scorer.calibrate.report import group_name

    return group_name(a)


def _stat_table(name: str, rows: list[DimensionAgreement], stats: list[tuple[str, str]]) -> Table:
    from scorer.calibrate.report import format_stat

    table = Table(title=name, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("dimension", no_wrap=True)
    for header, _ in stats:
        table.add_column(header.replace(" ", "\n"), justify="right", no_wrap=True)
    for a in rows:
        table.add_row(a.dimension, *(format_stat(getattr(a, field)) for _, field in stats))
    return table
