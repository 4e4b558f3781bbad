"""Options shared by the commands that read many stored runs (export, trends, view)."""

from __future__ import annotations

from datetime import datetime
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
        latest_per_session=not all_runs,
    )
