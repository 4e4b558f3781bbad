"""Options shared by the commands that read many stored runs (export, trends, view)."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated

import typer

from scorer.sinks.store import RunFilter

Project = Annotated[str | None, typer.Option(help="Only sessions of this project.")]
Since = Annotated[
    datetime | None, typer.Option(help="Only sessions that started at or after this (UTC).")
]
Until = Annotated[datetime | None, typer.Option(help="Only sessions that started before this.")]
Judge = Annotated[str | None, typer.Option(help="Only this judge kind (llm/heuristic).")]
Model = Annotated[str | None, typer.Option(help="Only runs by this judge model.")]
RubricVersion = Annotated[str | None, typer.Option(help="Only runs of this rubric version.")]
Source = Annotated[
    str | None, typer.Option(help="Only this source (claude-code, stream-json, langfuse...).")
]
Search = Annotated[
    str | None,
    typer.Option(help="Only runs whose title, task, project, id or summary has these words."),
]


class CollectionName(StrEnum):
    production = "production"
    calibration = "calibration"
    all = "all"


CollectionOpt = Annotated[
    CollectionName,
    typer.Option(
        "--collection",
        help="production (sessions people ran), calibration (score-calibrate's runs) or all.",
    ),
]
AllRuns = Annotated[
    bool,
    typer.Option(
        "--all-runs",
        help="Every stored run; by default only each session's newest run (after filters).",
    ),
]


def run_filter(
    *,
    project: str | None = None,
    since: datetime | None = None,
    until: datetime | None = None,
    judge: str | None = None,
    model: str | None = None,
    rubric_version: str | None = None,
    all_runs: bool = False,
    status: str | None = None,
    source: str | None = None,
    search: str | None = None,
    collection: CollectionName = CollectionName.production,
) -> RunFilter:
    """The store filter for these options."""
    return RunFilter(
        project=project,
        since=since,
        until=until,
        judge=judge,
        model=model,
        rubric_version=rubric_version,
        status=status,
        source=source,
        search=search,
        collection=None if collection == CollectionName.all else collection.value,
        latest_per_session=not all_runs,
    )
