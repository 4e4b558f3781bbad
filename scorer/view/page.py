"""Build the self-contained viewer page from stored runs (Jinja2 template + small JS).

Data goes in as JSON (`|tojson`, so no `</script>` can end it early); each session's
redacted timeline goes in as gzip+base64 text in its own script tag that the page decodes
only when that session is opened. No external asset, no network: the page's CSP forbids
every fetch.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from typing import TYPE_CHECKING, Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from scorer._text import plural
from scorer._version import package_version
from scorer.judge.rubric import OVERALL, default_rubric
from scorer.prepare.render import EVENT_LABELS
from scorer.results.rows import DIMENSIONS, SHORT_NAMES
from scorer.results.trends import Period, compute_trends, period_of, when
from scorer.sinks._store_query import recency
from scorer.view.plots import trend_plots

if TYPE_CHECKING:
    from scorer.sinks.store import StoredRun

__all__ = ["render_page"]

_SCRIPTS = ("compare.js", "viewer.js")
"""The page's scripts, in load order: `compare.js` defines what `viewer.js` calls."""


def _asset(name: str) -> Markup:
    text = resources.files("scorer.view").joinpath("templates", name).read_text("utf-8")
    if "</script" in text.lower() or "</style" in text.lower():
        raise ValueError(f"{name} must not contain a closing script/style tag")
    return Markup(text)


def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("scorer.view", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _dimensions() -> list[dict[str, Any]]:
    rubric = {d.name: d for d in default_rubric().dimensions}
    return [
        {
            "name": name,
            "short": SHORT_NAMES.get(name, name),
            "kind": rubric[name].data_type,
            "weight": rubric[name].weight,
            "categories": [c.label for c in rubric[name].categories],
        }
        for name in DIMENSIONS
    ]


def page_data(runs: list[StoredRun], timeline_ids: dict[str, str]) -> dict[str, Any]:
    """The JSON the page embeds: every run as the scorecard JSON plus store bookkeeping,
    the ISO week each run is filed under (as `scorer trends` files it), and how each kind
    of timeline event starts (the page's timeline filters read them)."""
    return {
        "generated_by": f"session-scorer {package_version()}",
        "overall": OVERALL,
        "dimensions": _dimensions(),
        "event_labels": {kind.value: list(labels) for kind, labels in EVENT_LABELS.items()},
        "runs": [
            {
                "run_id": r.run_id,
                "pushed_at": r.pushed_at.isoformat() if r.pushed_at else None,
                "week": period_of(when(r), "week")[1],
                "timeline": timeline_ids.get(r.card.session_id),
                "card": r.card.model_dump(mode="json"),
            }
            for r in runs
        ],
    }


def render_page(
    runs: list[StoredRun],
    timeline_blob: Callable[[str], bytes | None],
    *,
    store: str = "",
    by: Period = "week",
    filtered: bool = False,
    now: datetime | None = None,
) -> str:
    """The whole HTML page.

    Args:
        runs: The runs to show (newest sessions are sorted first by the page itself).
        timeline_blob: Gives a session's stored gzip timeline (or None), e.g.
            `ScoreStore.timeline_blob`.
        store: The store path, named on the empty page.
        by: Period of the trend plots.
        filtered: Whether `runs` were filtered (wording of the empty page).
        now: Generation time shown in the header.
    """
    timeline_ids: dict[str, str] = {}
    timelines: list[tuple[str, str]] = []
    for session_id in dict.fromkeys(r.card.session_id for r in runs):
        blob = timeline_blob(session_id)
        if blob is not None:
            timeline_ids[session_id] = f"tl-{len(timelines)}"
            timelines.append((timeline_ids[session_id], base64.b64encode(blob).decode("ascii")))
    scored = [r for r in runs if r.card.status == "scored"]
    trends = compute_trends(_latest(scored), by=by, lowest=5)
    template = _environment().get_template("viewer.html.j2")
    return template.render(
        version=package_version(),
        n_runs=len(runs),
        runs_text=plural(len(runs), "run"),
        store=store,
        filtered=filtered,
        generated_at=(now or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        css=_asset("viewer.css"),
        js=Markup("\n").join(_asset(name) for name in _SCRIPTS),
        data=page_data(runs, timeline_ids),
        timelines=timelines,
        trends=trends,
        plots=trend_plots(trends),
    )


def _latest(runs: list[StoredRun]) -> list[StoredRun]:
    """One run per session (its newest) so trends do not count a session twice."""
    newest = {run.card.session_id: run for run in sorted(runs, key=recency)}
    return list(newest.values())
