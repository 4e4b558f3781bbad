"""Live-session outputs in `<repo>/.scorer/`: evaluation, history, resume prompt, assessment.

    evaluation.json   the latest evaluation (scorecard + git/test/progress evidence)
    history.jsonl     every evaluation, newest last, capped at `HISTORY_CAP` entries
    next-prompt.md    the prompt for the agent's next run (`scorer resume-prompt`)
    assessment.json   orientation: phase, progress, pending, blockers (`scorer assess`)

Both commands refuse a folder that is not inside a git repository (one-line
`SourceError`, nothing written): their evidence is the agent's working tree.

Every file is written atomically (temp file in the same folder, then rename), so a
reader never sees half a file and a crash leaves the previous version in place.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer._fs import write_atomic
from scorer._text import plural
from scorer.errors import SourceError
from scorer.live.git import GitProgress, git_progress, repo_problem
from scorer.live.progress import TerminalSignals, estimate_progress
from scorer.models import Scorecard

if TYPE_CHECKING:
    from scorer.prepare import Prepared

HISTORY_CAP = 100
DEFAULT_PROMPT_CHARS = 3000


def scorer_dir(repo: Path) -> Path:
    return Path(repo) / ".scorer"


def _ensure_scorer_dir(repo: Path) -> Path:
    """Create `<repo>/.scorer/` with a `.gitignore` of `*`.

    Without it our own files show up as untracked in the agent's repository, and the
    next assessment counts them as the agent's uncommitted work.
    """
    folder = scorer_dir(repo)
    folder.mkdir(parents=True, exist_ok=True)
    ignore = folder / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# written by session-scorer: keep its files out of git\n*\n")
    return folder


def evaluation_record(prepared: Prepared, card: Scorecard) -> dict[str, Any]:
    """The evaluation as stored: the scorecard plus the live evidence it was based on."""
    extra = prepared.session.extra
    return {
        "evaluated_at": datetime.now(UTC).isoformat(),
        "session_id": card.session_id,
        "status": card.status,
        "overall": card.overall,
        "recommendation": card.recommendation,
        "scores": {n: (s.label or s.value) for n, s in card.scores.items()},
        "accomplishments": card.accomplishments,
        "failures": card.failures,
        "summary": card.summary,
        "phase": extra.get("phase"),
        "progress_percent": extra.get("progress_percent"),
        "git": extra.get("git"),
        "terminal_signals": extra.get("terminal_signals"),
        "resources": extra.get("resources"),
        "scorecard": card.model_dump(mode="json"),
    }


def save_evaluation(repo: Path, prepared: Prepared, card: Scorecard) -> Path | None:
    """Write evaluation.json (latest) and append to history.jsonl (capped).

    Returns:
        The evaluation's path, or None when `repo` is not inside a git repository
        (then nothing is written: resume-prompt and assess would refuse it anyway).
    """
    if repo_problem(Path(repo)) is not None:
        return None
    record = evaluation_record(prepared, card)
    folder = _ensure_scorer_dir(repo)
    write_atomic(folder / "evaluation.json", json.dumps(record, indent=2, default=str))
    history = folder / "history.jsonl"
    lines = history.read_text(encoding="utf-8").splitlines() if history.exists() else []
    lines.append(json.dumps(record, default=str))
    write_atomic(history, "\n".join(lines[-HISTORY_CAP:]) + "\n")
    return folder / "evaluation.json"


def load_evaluation(repo: Path) -> dict[str, Any] | None:
    path = scorer_dir(repo) / "evaluation.json"
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SourceError(f"{path} is not valid JSON ({e.msg}); re-run score-session") from e
    if not isinstance(data, dict):
        raise SourceError(f"{path} is not an evaluation object; re-run score-session")
    return data


def _tests(evaluation: dict[str, Any] | None) -> TerminalSignals:
    raw = (evaluation or {}).get("terminal_signals") or {}
    return TerminalSignals.model_validate(raw)


def _since(evaluation: dict[str, Any] | None) -> tuple[datetime | None, str | None]:
    git = (evaluation or {}).get("git") or {}
    since = git.get("since")
    return (datetime.fromisoformat(since) if since else None), git.get("base")


def _require_git(repo: Path) -> None:
    problem = repo_problem(Path(repo))
    if problem is not None:
        raise SourceError(
            f"{repo}: {problem}; assess and resume-prompt need the agent's git "
            "working tree (pass the repository the agent works in)"
        )


def assess(repo: Path) -> dict[str, Any]:
    """Orientation for whoever picks the work up: phase, progress, pending, blockers.

    Raises:
        SourceError: `repo` is not inside a git repository, or its evaluation.json is bad.
    """
    _require_git(repo)
    evaluation = load_evaluation(repo)
    since, base = _since(evaluation)
    git = git_progress(Path(repo), since=since, base=base)
    signals = _tests(evaluation)
    done = (evaluation or {}).get("accomplishments") or []
    estimate = estimate_progress(signals, files_touched=git.touched, accomplishments=len(done))
    tests = signals.tests
    return {
        "assessed_at": datetime.now(UTC).isoformat(),
        "repo": str(repo),
        "summary": (evaluation or {}).get("summary") or git.summary(),
        "phase": estimate.phase,
        "progress_percent": estimate.percent,
        "progress_parts": estimate.parts,
        "accomplishments": done,
        "pending": _pending(evaluation, git, signals),
        "blockers": signals.error_lines[:10],
        "file_changes": git.categories,
        "uncommitted": git.uncommitted,
        "untracked": git.untracked,
        "test_status": tests.model_dump() if tests else None,
        "recommendation": (evaluation or {}).get("recommendation"),
        "git_status": git.status,
    }


def write_assessment(repo: Path) -> Path:
    text = json.dumps(assess(repo), indent=2, default=str)  # raises before anything is written
    path = _ensure_scorer_dir(repo) / "assessment.json"
    write_atomic(path, text)
    return path


def _pending(
    evaluation: dict[str, Any] | None, git: GitProgress, signals: TerminalSignals
) -> list[str]:
    """Prioritised next steps: failing tests first, then failures, then loose ends."""
    steps: list[str] = []
    tests = signals.tests
    if tests and not tests.ok:
        steps.append(
            f"Make the failing tests pass ({tests.failed} failed, {plural(tests.errors, 'error')})."
        )
    steps += [f"Fix: {f}" for f in (evaluation or {}).get("failures") or []]
    if signals.error_lines:
        steps.append(f"Investigate the last error: {signals.error_lines[-1][:160]}")
    if tests is None:
        steps.append("Run the test suite; no test result was seen.")
    loose = len(git.uncommitted) + len(git.untracked)
    if loose:
        steps.append(f"Review and commit {plural(loose, 'uncommitted file')}.")
    return steps


def _task(evaluation: dict[str, Any], max_chars: int) -> list[str]:
    """The original task (the scorecard's redacted task text, else its title), quoted and
    cut to `max_chars`: the next run must know what it is finishing."""
    info = (evaluation.get("scorecard") or {}).get("session") or {}
    task = (info.get("task") or info.get("title") or "").strip()
    if not task:
        return ["(not recorded: the last evaluation did not see the task)"]
    if len(task) > max_chars:
        task = task[: max_chars - 1].rstrip() + "…"
    return [f"> {line}" if line else ">" for line in task.splitlines()]


def _steps(pending: list[str], failures: list[str]) -> list[str]:
    """Next steps without repeats: each failure is already listed under "What failed", so
    it becomes one step that points there instead of a second copy of every line."""
    fixes = {f"Fix: {f}" for f in failures}
    steps = [s for s in pending if s not in fixes]
    if failures:
        where = 0 if not steps or not steps[0].startswith("Make the failing tests") else 1
        steps.insert(
            where, f"Fix what failed (above), in that order: {plural(len(failures), 'item')}."
        )
    return list(dict.fromkeys(steps))


def resume_prompt(repo: Path, *, max_chars: int = DEFAULT_PROMPT_CHARS) -> str:
    """The next run's prompt, built from the latest evaluation and the current state: the
    original task first, then what was done, what failed, the next steps (each once)."""
    orientation = assess(repo)
    evaluation = load_evaluation(repo) or {}
    git_files = [f["path"] for f in ((evaluation.get("git") or {}).get("files") or [])]
    files = list(dict.fromkeys(git_files + orientation["uncommitted"] + orientation["untracked"]))
    done = list(dict.fromkeys(orientation["accomplishments"]))
    failures = list(dict.fromkeys(evaluation.get("failures") or []))
    steps = _steps(orientation["pending"], failures)
    tests = orientation["test_status"]
    sections = [
        ("# Resume", [
            f"Phase: {orientation['phase']} (~{orientation['progress_percent']}% done). "
            f"Last evaluation: overall {evaluation.get('overall', 'n/a')}, "
            f"recommendation {evaluation.get('recommendation', 'n/a')}.",
        ]),
        ("## The task", _task(evaluation, max_chars // 3)),
        ("## Done so far", [f"- {a}" for a in done] or ["- (nothing recorded)"]),
        ("## What failed", [f"- {f}" for f in failures] or ["- nothing recorded"]),
        ("## Next steps (in order)", [f"{i}. {s}" for i, s in enumerate(steps, 1)]
         or ["1. Confirm the task is complete and summarise."]),
        ("## Files to look at", [f"- {f}" for f in files[:15]] or ["- (no changed files)"]),
        ("## How to verify", [
            "- Re-run the test suite and check the summary line"
            + (f" (last: {tests['passed']} passed, {tests['failed']} failed)." if tests else "."),
            "- `git status` should show only intended changes.",
        ]),
    ]  # fmt: skip
    return _fit(sections, max_chars)


def _fit(sections: list[tuple[str, list[str]]], max_chars: int) -> str:
    """Join sections, dropping list items from the end of the longest until it fits."""
    sections = [(title, list(items)) for title, items in sections]

    def text() -> str:
        return "\n\n".join(title + "\n" + "\n".join(items) for title, items in sections) + "\n"

    while len(text()) > max_chars:
        shrinkable = [items for t, items in sections if len(items) > 1 and t != "## The task"]
        if not shrinkable:
            return text()[: max_chars - 2] + "…\n"
        max(shrinkable, key=lambda items: len("\n".join(items))).pop()
    return text()


def write_resume_prompt(repo: Path, *, max_chars: int = DEFAULT_PROMPT_CHARS) -> Path:
    text = resume_prompt(repo, max_chars=max_chars)  # raises before anything is written
    path = _ensure_scorer_dir(repo) / "next-prompt.md"
    write_atomic(path, text)
    return path
