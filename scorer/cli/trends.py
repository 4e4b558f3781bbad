"""`scorer trends`: per-period means with counts and confidence intervals, and the lowest
sessions per period (the weekly monitoring view, in the terminal)."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated

import typer
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from scorer.cli._common import err, handle_errors, out, print_json
from scorer.cli._filters import (
    AllRuns,
    CollectionName,
    CollectionOpt,
    Judge,
    Model,
    Project,
    RubricVersion,
    Search,
    Since,
    Source,
    Until,
    run_filter,
)
from scorer.cli.tables import cells_width, cut, room_left, short_ids
from scorer.results.rows import SHORT_NAMES
from scorer.results.trends import TREND_SCORES, DimensionStat, Trends, compute_trends
from scorer.sinks.store import ScoreStore


class By(StrEnum):
    week = "week"
    day = "day"


class ScaleName(StrEnum):
    normalized = "normalized"
    raw = "raw"


def _cell(stat: DimensionStat | None) -> str:
    if stat is None:
        return "-"
    if stat.low is None or stat.high is None:
        return f"[bold]{stat.mean:.2f}[/]"
    return f"[bold]{stat.mean:.2f}[/]\n[dim]{stat.low:.2f}–{stat.high:.2f}[/]"


def trends_tables(trends: Trends, width: int = 200, *, among: Iterable[str] = ()) -> Group:
    """Means tables (one row per period) and the lowest-sessions table (pure).

    All seven means fit one table from about 100 columns; below that they are split
    over as many tables as it takes, so no interval is cut (80 columns: 5 + 2). Ids in
    the lowest-sessions table are unique prefixes (among `among` too: the store's ids)
    when the full ids leave the titles too little room.
    """
    labels = [p.label for p in trends.periods]
    counts = [str(p.n_sessions) for p in trends.periods]
    fixed = [cells_width(trends.by, *labels), cells_width("n", *counts)]
    per_table = max(1, (width - sum(fixed) - 3 * len(fixed) - 1) // (_SCORE_WIDTH + 3))
    names = list(TREND_SCORES)
    parts = [names[i : i + per_table] for i in range(0, len(names), per_table)]
    return Group(
        *(_means(trends, part, first=i == 0) for i, part in enumerate(parts)),
        _lowest(trends, width, among),
    )


_SCORE_WIDTH = 9  # `0.64–0.71`


def _means(trends: Trends, names: list[str], *, first: bool) -> Table:
    level = f"{trends.confidence:.0%}"
    title = f"mean per {trends.by} ({trends.scale} scale) and {level} t interval"
    means = Table(title=title if first else None, header_style="bold")
    means.add_column(trends.by, no_wrap=True)
    means.add_column("n", justify="right", no_wrap=True)
    for name in names:
        means.add_column(
            SHORT_NAMES.get(name, name), justify="right", min_width=_SCORE_WIDTH, no_wrap=True
        )
    for period in trends.periods:
        cells = [_cell(period.stats.get(n)) for n in names]
        means.add_row(period.label, str(period.n_sessions), *cells)
    return means


_MIN_TITLE = 24
"""Below this much room for titles, the lowest-sessions table shows id prefixes."""
_STACK_BELOW = 10
"""Below this much room for titles even beside prefixes, a title goes under its id."""


def _lowest(trends: Trends, width: int, among: Iterable[str]) -> Table:
    """The lowest sessions, led by their titles; ids whole or as unique prefixes, never
    cut; the title column takes what is left and shortens a long title with `…` (under
    the id, in the same cell, when the ids leave it too little room)."""
    rows = [(p.label, low) for p in trends.periods for low in p.lowest]
    ids = {low.session_id: low.session_id for _, low in rows}
    fixed = [
        cells_width(trends.by, *(label for label, _ in rows)),
        cells_width("overall"),
        cells_width("goal", *(low.goal or "-" for _, low in rows)),
    ]
    if room_left(width, [*fixed, cells_width("session", *ids)], floor=0) < _MIN_TITLE:
        ids = short_ids(ids, among=among)
    room = room_left(width, [*fixed, cells_width("session", *ids.values())], floor=0)
    stacked = room < _STACK_BELOW
    lowest = Table(title=f"lowest overall per {trends.by}", header_style="bold")
    lowest.add_column(trends.by, no_wrap=True)
    lowest.add_column("overall", justify="right", no_wrap=True)
    if stacked:
        room = room_left(width, fixed, floor=cells_width(*ids.values()))
    else:
        lowest.add_column("title", no_wrap=True, max_width=room)
    lowest.add_column("goal", no_wrap=True)
    lowest.add_column("session / title" if stacked else "session", no_wrap=True)
    for label, low in rows:
        title = cut(low.title or "-", room)
        cells: list[RenderableType]
        if stacked:
            cells = [
                label,
                f"{low.overall:.2f}",
                low.goal or "-",
                Text(f"{ids[low.session_id]}\n") + title,
            ]
        else:
            cells = [label, f"{low.overall:.2f}", title, low.goal or "-", ids[low.session_id]]
        lowest.add_row(*cells)
    return lowest


@handle_errors
def trends_command(
    by: Annotated[By, typer.Option(help="Period: ISO week (Monday start) or day, UTC.")] = By.week,
    project: Project = None,
    since: Since = None,
    until: Until = None,
    judge: Judge = None,
    model: Model = None,
    rubric_version: RubricVersion = None,
    source: Source = None,
    search: Search = None,
    collection: CollectionOpt = CollectionName.production,
    all_runs: AllRuns = False,
    lowest: Annotated[int, typer.Option(min=0, help="Lowest sessions listed per period.")] = 3,
    scale: Annotated[
        ScaleName, typer.Option(help="normalized: every score on 0..1; raw: levels/values.")
    ] = ScaleName.normalized,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Per-period means of the seven scores with counts and confidence intervals, and the
    lowest-scoring sessions of each period. Sessions are filed by their start time."""
    where = run_filter(
        project=project,
        since=since,
        until=until,
        judge=judge,
        model=model,
        rubric_version=rubric_version,
        all_runs=all_runs,
        status="scored",
        source=source,
        search=search,
        collection=collection,
    )
    with ScoreStore() as store:
        runs = store.runs(where)
        known = store.session_ids()
    trends = compute_trends(runs, by=by.value, lowest=lowest, scale=scale.value)
    if as_json:
        print_json(trends.model_dump(mode="json"))
        return
    if not trends.periods:
        err.print("no scored sessions match (see `scorer scores list`)")
        return
    out.print(trends_tables(trends, out.width, among=known))
