"""`scorer resume-prompt` opens with the original task and lists every step once (issue
26, item 6): a failure is listed under "What failed" and pointed to from the next steps,
not copied there again."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.jobs.resume import resume_prompt
from scorer.models import SessionInfo
from tests.sinks.cards import make_card

TASK = "Fix the date parser in src/dates.py.\nKeep the CLI flags as they are."


def _repo(tmp_path: Path, failures: list[str], task: str | None = TASK) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["config", "user.email", "t@example.com"],
                 ["config", "user.name", "t"]):  # fmt: skip
        subprocess.run(["git", *args], cwd=repo, check=True)
    (repo / "dates.py").write_text("x = 1\n")
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "start"], cwd=repo, check=True)
    card = make_card(
        "live-1",
        failures=failures,
        accomplishments=["parser rewritten", "parser rewritten"],
        session=SessionInfo(title="Fix the date parser", task=task),
    )
    evaluation = {
        "overall": card.overall,
        "recommendation": "retry",
        "accomplishments": card.accomplishments,
        "failures": failures,
        "scorecard": card.model_dump(mode="json"),
    }
    (repo / ".scorer").mkdir()
    (repo / ".scorer" / "evaluation.json").write_text(json.dumps(evaluation))
    return repo


def test_the_prompt_opens_with_the_task_and_repeats_no_step(clean_env, tmp_path) -> None:
    failures = ["the ISO week of 2026-12-31 is wrong", "the --utc flag was dropped"]
    text = resume_prompt(_repo(tmp_path, failures))
    lines = text.splitlines()
    task_at = lines.index("## The task")
    assert lines[task_at + 1 : task_at + 3] == [
        "> Fix the date parser in src/dates.py.",
        "> Keep the CLI flags as they are.",
    ]
    assert task_at < lines.index("## Done so far") < lines.index("## Next steps (in order)")
    for failure in failures:
        assert sum(failure in line for line in lines) == 1, text  # under "What failed" only
    assert "Fix what failed (above), in that order: 2 items." in text
    content = [line for line in lines if line.startswith(("- ", "> ")) or line[:1].isdigit()]
    bodies = [line.split(" ", 1)[1] for line in content]
    assert len(bodies) == len(set(bodies)), text  # no step, failure or accomplishment twice
    assert text.count("parser rewritten") == 1


def test_a_long_task_is_cut_and_a_missing_one_is_named(clean_env, tmp_path) -> None:
    text = resume_prompt(_repo(tmp_path, [], task="word " * 2000), max_chars=3000)
    assert len(text) <= 3000 and "## The task" in text and "…" in text
    assert "## Next steps (in order)" in text  # the task did not crowd the steps out
    other = tmp_path / "other"
    other.mkdir()
    repo = _repo(other, [], task=None)
    assert "Fix the date parser" in resume_prompt(repo)  # the title stands in
    result = CliRunner().invoke(app, ["resume-prompt", str(repo)])
    assert result.exit_code == 0, result.output
    assert "## The task" in (repo / ".scorer" / "next-prompt.md").read_text()
