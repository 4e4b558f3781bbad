"""Tables that stay readable at 80 columns (piped output, CI logs).

Rich squeezes a table that is too wide by cutting cells to `he…`. These tables never
cut ids, dates or numbers: below `NARROW` columns, or when the wide layout does not fit
the console, they stack instead (two lines per cell, or one table per group, each
holding half the columns). Pure: they build renderables, never print.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from rich import box
from rich.cells import cell_len
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


def short_ids(
    ids: Iterable[str], min_len: int = ID_PREFIX, *, among: Iterable[str] = ()
) -> dict[str, str]:
    """Each id's shortest prefix of at least `min_len` characters that no other id shares,
    of `ids` or of `among` (the store's ids: `scorer scores show` takes a prefix only
    when one stored session starts with it).

    Ids barely longer than the prefix are kept whole (a whole id is always taken back).
    """
    shown = set(ids)
    known = sorted(shown.union(among))
    short: dict[str, str] = {}
    for sid in shown:
        i = bisect.bisect_left(known, sid)
        neighbours = known[max(0, i - 1) : i] + known[i + 1 : i + 2]  # sorted: the closest
        common = max((_common_prefix(sid, n) for n in neighbours), default=0)
        size = max(min_len, common + 1)
        short[sid] = sid if size + 2 >= len(sid) else sid[:size]
    return short


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def cells_width(*cells: str) -> int:
    """The widest line of these cells, in terminal cells."""
    return max((cell_len(line) for cell in cells for line in cell.split("\n")), default=0)


def pack(parts: list[str], width: int, sep: str = " · ") -> str:
    """`parts` joined by `sep`, a new line wherever the next part would pass `width`:
    a part (an id, a date and time, a number with its unit) is never split."""
    lines: list[str] = []
    for part in parts:
        if lines and cell_len(lines[-1] + sep + part) <= width:
            lines[-1] += sep + part
        else:
            lines.append(part)
    return "\n".join(lines)


def room_left(width: int, fixed: Sequence[int], floor: int = 12) -> int:
    """The width left for a table's one shortened column beside columns of these widths
    (padding 1 each side, one border between and at each edge), at least `floor`."""
    return max(floor, width - sum(fixed) - 3 * len(fixed) - 4)


def runs_table(
    runs: list[RunSummary],
    console: Console | None = None,
    title: str = "",
    *,
    among: Iterable[str] = (),
) -> Table:
    """One row per stored run, led by the session's title: full ids in one wide table when
    it fits `console` (None: always), else two lines per cell with unique id prefixes
    (unique among `among` too: the store's ids). Ids, dates and numbers are never cut or
    wrapped; only a long title, project or model is shortened."""
    wide = _wide_runs(runs, title)
    if console is None or _fits(wide, console):
        return wide
    ids = short_ids((r.session_id for r in runs), among=among)
    paid = any(r.judge != "heuristic" for r in runs)
    # The other columns are short and never cut: the title column gets what is left.
    judges = cells_width("judge", *(r.judge for r in runs))
    goals = {r.run_id: _goal_p(r) for r in runs}
    others = [max(9, judges), max(8, cells_width(*goals.values())), *([9] if paid else []), 10]
    room = max(room_left(console.width, others, floor=20), cells_width(*ids.values()))
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("title\nsession · project · agent model", max_width=room, no_wrap=True)
    table.add_column("overall\njudge", justify="right", no_wrap=True, min_width=others[0])
    table.add_column("goal · p\nrec.", no_wrap=True, min_width=others[1])
    if paid:
        table.add_column("cost", justify="right", no_wrap=True, min_width=others[2])
    table.add_column("started\n(UTC)", no_wrap=True, min_width=others[-1])
    for r in runs:
        when = r.session.started_at
        sid = ids[r.session_id]  # whole: only the project and model may be shortened
        where = cut(f" · {r.session.project or '-'} · {agent_model(r)}", room - cell_len(sid))
        cells: list[RenderableType] = [
            cut(r.title or "-", room) + Text("\n") + Text(sid, style="dim") + where,
            _overall_text(r) + Text(f"\n{r.judge}", style="dim"),
            f"{goals[r.run_id]}\n[dim]{r.recommendation or '-'}[/]",
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
    for col in ("judge", "overall", "goal", "p(goal)", "recommendation"):
        right = col in ("overall", "p(goal)")
        table.add_column(col, justify="right" if right else "left", no_wrap=True)
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
            _probability(r.goal_probability),
            r.recommendation or "-",
            _cost(r),
            f"{when:%Y-%m-%d %H:%M}" if when else "-",
        )
    return table


def cut(text: str, width: int, style: str = "") -> Text:
    """One line of at most `width` cells, cut with `…` (for titles, never ids)."""
    line = Text(text, style=style)
    line.truncate(width, overflow="ellipsis")
    return line


def agent_model(r: RunSummary) -> str:
    """The agent's main model, with `+N` when it used more."""
    models = r.session.agent_models or ([r.session.agent_model] if r.session.agent_model else [])
    if not models:
        return "-"
    return _model(models[0]) + (f" +{len(models) - 1}" if len(models) > 1 else "")


def _probability(p: float | None) -> str:
    """The goal probability as `0.73`; `-` on a card judged before it existed."""
    return "-" if p is None else f"{p:.2f}"


def _goal_p(r: RunSummary) -> str:
    """`complete 0.91`: the goal label and its probability, for the stacked layout."""
    p = r.goal_probability
    return f"{r.goal or '-'}" + ("" if p is None else f" {p:.2f}")


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


def results_table(
    results: list[SessionResult], width: int, limit: int = 30, *, among: Iterable[str] = ()
) -> Group:
    """The backfill's results, one row per session: what went wrong first, then the
    lowest overall first; at most `limit` rows, the rest counted below. A session is its
    title (shortened if it must be) and its id's unique prefix (among `among` too: the
    store's ids), whole; a failure's reason is under it, shortened."""

    def rank(r: SessionResult) -> tuple[int, float, str]:
        first = _OUTCOME_ORDER.index(r.outcome) if r.outcome in _OUTCOME_ORDER else 9
        return first, r.overall if r.overall is not None else 2.0, r.title or r.session_id

    ordered = sorted(results, key=rank)
    ids = short_ids((r.session_id for r in results), among=among)
    costs = [f"${r.cost_usd:.4f}" if r.cost_usd else "-" for r in ordered[:limit]]
    others = [11, 7, 8, cells_width("cost", *costs)]
    room = max(room_left(width, others, floor=20), cells_width(*ids.values()))
    table = Table(title="results", header_style="bold", box=box.SIMPLE_HEAD)
    table.add_column("outcome", no_wrap=True, min_width=others[0])
    table.add_column("overall", justify="right", no_wrap=True, min_width=others[1])
    table.add_column("goal", no_wrap=True, min_width=others[2])
    table.add_column("cost", justify="right", no_wrap=True, min_width=others[3])
    table.add_column("session", no_wrap=True, width=room)
    for r, cost in zip(ordered[:limit], costs, strict=False):
        why = r.reason if r.reason and r.outcome not in ("scored", "estimated") else ""
        table.add_row(
            Text(_OUTCOME_TEXT.get(r.outcome, r.outcome), style=_OUTCOME_STYLE.get(r.outcome, "")),
            "-" if r.overall is None else f"{r.overall:.2f}",
            r.goal or "-",
            cost,
            _session_cell(r.title, ids[r.session_id], why, room),
        )
    rest = len(ordered) - limit
    more = [Text(f"… and {rest} more (scorer scores list)", style="dim")] if rest > 0 else []
    return Group(table, *more)


def _session_cell(title: str | None, sid: str, why: str, room: int) -> Text:
    """`title  [prefix]` in `room` cells, the prefix whole (the title on a line of its own
    when both do not fit), then the first `room` cells of the reason."""
    tag = Text(f"[{sid}]")
    if not title:
        cell = Text(sid)
    elif room - cell_len(title) >= tag.cell_len + 2 or room - tag.cell_len - 2 >= 12:
        cell = cut(title, room - tag.cell_len - 2) + Text("  ") + tag
    else:
        cell = cut(title, room) + Text("\n") + tag
    if why:  # in full under the table (`render_summary` lists every failure)
        cell.append_text(Text("\n") + cut(" ".join(why.split()), room, style="dim"))
    return cell


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
    """The calibration tables: one wide table when it fits `console`, else per judge group
    two tables of six statistics each (fits 80 columns), the group as their title; then
    the goal probability's table (AUROC, Brier, ECE) the same way."""
    from scorer.calibrate.report import render_probability_table, render_table

    wide, prob = render_table(result), render_probability_table(result)
    if _fits(wide, console) and (prob is None or _fits(prob, console)):
        return wide if prob is None else Group(wide, prob)
    from scorer.calibrate.report import STATS, probability_rows

    halves = [STATS[:6], STATS[6:]]
    groups: dict[str, list[DimensionAgreement]] = {}
    for a in result.agreements:
        groups.setdefault(_group(a), []).append(a)
    parts: list[RenderableType] = [f"[bold]Calibration (rubric {result.rubric_version})[/]"]
    for name, rows in groups.items():
        for stats in halves:
            parts.append(_stat_table(name, rows, stats))
    for row in probability_rows(result):
        parts.append(_probability_table(row))
    return Group(*parts)


def _probability_table(row: list[str]) -> Table:
    """One judge group's goal-probability figures, the group as the title."""
    from scorer.calibrate.report import PROB_HEADERS

    title = f"{row[0]}: goal_probability vs resolved"
    table = Table(title=title, title_justify="left", header_style="bold", box=box.SIMPLE_HEAD)
    for header in PROB_HEADERS[1:]:
        table.add_column(header.replace(" ", "\n"), justify="right", no_wrap=True)
    table.add_row(*row[1:])
    return table


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
