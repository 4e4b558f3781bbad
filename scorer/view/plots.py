"""Geometry of the viewer's trend plots (pure): one small chart per score, the template
draws it as inline SVG. Values are on the normalised 0..1 scale; the goal probability's
chart is the expected success rate per period."""

from __future__ import annotations

from pydantic import BaseModel

from scorer.results.trends import PROBABILITY, TREND_COLUMNS, Trends

__all__ = ["Plot", "trend_plots"]

WIDTH, HEIGHT = 330, 150
LEFT, RIGHT, TOP, BOTTOM = 30, 320, 8, 130


class Point(BaseModel):
    x: float
    y: float
    label: str = ""
    mean: float = 0.0
    n: int = 0


class Plot(BaseModel):
    """One score's chart: mean line, CI band polygon, ticks and labels (SVG coordinates)."""

    name: str
    note: str = ""
    """What the mean means, when it is not a score's (the expected success rate)."""
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = RIGHT
    line: str
    band: str
    points: list[Point]
    y_ticks: list[Point]
    x_labels: list[Point]


def _y(value: float) -> float:
    clamped = min(1.0, max(0.0, value))
    return round(BOTTOM - clamped * (BOTTOM - TOP), 1)


def _x(i: int, n: int) -> float:
    return round(LEFT + (RIGHT - LEFT) * (i + 0.5) / max(n, 1), 1)


def _coords(points: list[tuple[float, float]]) -> str:
    return " ".join(f"{x},{y}" for x, y in points)


def _axis_labels(labels: list[str]) -> list[str]:
    """`2026-W52`, `W53`, `2027-W01`, `W02`: the year on the first label and wherever it
    changes (`2026-11-20`, `11-21`, … for days), so the axis never reads W52 → W01."""
    out, year = [], None
    for label in labels:
        this, _, rest = label.partition("-")
        out.append(label if this != year or not rest else rest)
        year = this
    return out


def trend_plots(trends: Trends, max_labels: int = 10) -> list[Plot]:
    """One plot per score that has data, periods left to right."""
    periods = trends.periods
    n = len(periods)
    step = max(1, -(-n // max_labels))  # ceil: at most `max_labels` x labels
    shown = [(i, p.label) for i, p in enumerate(periods) if i % step == 0]
    axis = _axis_labels([label for _, label in shown])
    x_labels = [
        Point(x=_x(i, n), y=0, label=text) for (i, _), text in zip(shown, axis, strict=True)
    ]
    ticks = [Point(x=0, y=_y(v), label=f"{v:g}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)]
    plots = []
    for name in TREND_COLUMNS:
        pts = [(i, p.label, p.stats[name]) for i, p in enumerate(periods) if name in p.stats]
        if not pts:
            continue
        points = [
            Point(x=_x(i, n), y=_y(s.mean), label=label, mean=s.mean, n=s.n) for i, label, s in pts
        ]
        upper = [(_x(i, n), _y(s.high if s.high is not None else s.mean)) for i, _, s in pts]
        lower = [(_x(i, n), _y(s.low if s.low is not None else s.mean)) for i, _, s in pts]
        plots.append(
            Plot(
                name=name,
                note="mean = expected success rate" if name == PROBABILITY else "",
                line=_coords([(p.x, p.y) for p in points]),
                band=_coords(upper + lower[::-1]) if len(pts) > 1 else "",
                points=points,
                y_ticks=ticks,
                x_labels=x_labels,
            )
        )
    return plots
