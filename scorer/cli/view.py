"""`scorer view`: write the self-contained HTML viewer of the store (and optionally serve it)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from scorer._fs import write_atomic
from scorer._text import plural
from scorer.cli._common import err, handle_errors
from scorer.cli._filters import (
    CollectionName,
    CollectionOpt,
    Judge,
    Model,
    Project,
    RubricVersion,
    Since,
    Source,
    Until,
    run_filter,
)
from scorer.cli.trends import By
from scorer.sinks.store import ScoreStore


@handle_errors
def view_command(
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Where to write the HTML file [default: scorer-view.html; with --show, "
            "view.html in the cache dir].",
            show_default=False,
        ),
    ] = None,
    serve: Annotated[
        bool, typer.Option("--serve", help="Serve it on 127.0.0.1 and open a browser.")
    ] = False,
    show: Annotated[
        bool, typer.Option("--show", help="Open the written file in the default browser.")
    ] = False,
    port: Annotated[int, typer.Option(help="--serve: port (0 picks a free one).")] = 0,
    open_browser: Annotated[
        bool, typer.Option("--open/--no-open", help="--serve: open the default browser.")
    ] = True,
    timelines: Annotated[
        bool,
        typer.Option(
            "--timelines/--no-timelines",
            help="Embed each session's redacted timeline (most of the file's size).",
        ),
    ] = True,
    by: Annotated[By, typer.Option(help="Period of the trend plots.")] = By.week,
    project: Project = None,
    since: Since = None,
    until: Until = None,
    judge: Judge = None,
    model: Model = None,
    rubric_version: RubricVersion = None,
    source: Source = None,
    collection: CollectionOpt = CollectionName.production,
    all_runs: Annotated[
        bool, typer.Option("--all-runs/--latest", help="Every run, or each session's newest.")
    ] = True,
) -> None:
    """Write one HTML file with every scored session (index with sort/filter/search,
    scorecards, the redacted timelines with clickable evidence, trend plots). It needs no
    network and sends nothing anywhere; share the file as it is."""
    from scorer.view.page import render_page

    filters = dict(project=project, since=since, until=until, judge=judge, model=model)
    filters.update(rubric_version=rubric_version, source=source)
    where = run_filter(**filters, all_runs=all_runs, collection=collection)  # type: ignore[arg-type]
    started = time.perf_counter()
    with ScoreStore() as store:
        runs = store.runs(where)
        html = render_page(
            runs,
            store.timeline_blob if timelines else _no_timeline,
            store=str(store.path),
            by=by.value,
            filtered=any(v is not None for v in filters.values()),
        )
    output = output or _default_output(show and not serve)
    output.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(output, html)
    seconds = time.perf_counter() - started
    size = len(html.encode()) / 1e6
    err.print(f"wrote {output} ({plural(len(runs), 'run')}, {size:.1f} MB, {seconds:.1f} s)")
    if show and not serve:
        _show(output)
    if serve:
        _serve(output, port, open_browser)


def _default_output(shown: bool) -> Path:
    """`scorer-view.html` here; a page only opened goes to the cache dir instead (the
    plugin's /view-scores runs in the user's project, which is no place for it)."""
    if not shown:
        return Path("scorer-view.html")
    from scorer.settings import get_settings

    return get_settings().cache_dir / "view.html"


def _no_timeline(session_id: str) -> None:
    return None


def _show(page: Path) -> None:
    """Open the file itself (it needs no server); say where it is either way."""
    import webbrowser

    url = page.resolve().as_uri()
    try:
        opened = webbrowser.open(url)
    except Exception:  # no usable browser (a headless or SSH session)
        opened = False
    err.print(f"opened {url} in the browser" if opened else f"no browser opened: open {url}")


def _serve(page: Path, port: int, open_browser: bool) -> None:
    import webbrowser

    from scorer.view.serve import PageServer

    with PageServer(page, port) as server:
        err.print(f"serving {server.url} (127.0.0.1 only); Ctrl-C to stop")
        if open_browser:
            webbrowser.open(server.url)
        while True:
            time.sleep(3600)
