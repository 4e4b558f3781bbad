"""`scorer resume-prompt <repo>` and `scorer assess <repo>` for live (tmux + git) runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from scorer.cli._common import err, handle_errors, out
from scorer.errors import SourceError


def _repo(path: Path) -> Path:
    if not path.is_dir():
        raise SourceError(f"not a directory: {path}")
    return path


@handle_errors
def resume_prompt_command(
    repo: Annotated[Path, typer.Argument(help="The repository the agent works on.")],
    max_chars: Annotated[int, typer.Option(help="Size limit of the prompt.")] = 3000,
    show: Annotated[bool, typer.Option("--print/--no-print", help="Also print it.")] = True,
) -> None:
    """Write <repo>/.scorer/next-prompt.md from the latest evaluation and git/test state."""
    from scorer.jobs.resume import write_resume_prompt

    path = write_resume_prompt(_repo(repo), max_chars=max_chars)
    if show:
        out.print(path.read_text(encoding="utf-8"), markup=False, highlight=False)
    err.print(f"wrote {path}")


@handle_errors
def assess_command(
    repo: Annotated[Path, typer.Argument(help="The repository the agent works on.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the assessment JSON.")] = False,
) -> None:
    """Write <repo>/.scorer/assessment.json: phase, progress, pending work, blockers."""
    from scorer.jobs.resume import write_assessment

    path = write_assessment(_repo(repo))
    data = json.loads(path.read_text(encoding="utf-8"))
    if as_json:
        out.print_json(data=data)
    else:
        out.print(
            f"[bold]{data['phase']}[/] ~{data['progress_percent']}%  "
            f"recommendation: {data['recommendation'] or '-'}\n{data['summary']}"
        )
        for step in data["pending"]:
            out.print(f"  • {step}", highlight=False)
    err.print(f"wrote {path}")
