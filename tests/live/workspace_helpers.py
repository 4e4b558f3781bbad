"""Real git repositories with commits at controlled times, and Claude Code transcripts
shaped like the real ones (`../shared/data/claude-code-projects`: the same line fields,
a prompt, tool calls with their results, an answer) that worked in them."""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

NOW = datetime.now(UTC).replace(microsecond=0)
START = NOW - timedelta(minutes=40)
"""When the test sessions start (recent: inside the final state's maximum age)."""
END = NOW - timedelta(minutes=10)


def git(repo: Path, *args: str, when: datetime | None = None) -> str:
    """Run the real git binary in `repo`, with author and committer dates at `when`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_AUTHOR_NAME="Dev", GIT_AUTHOR_EMAIL="dev@example.com", GIT_COMMITTER_NAME="Dev",
        GIT_COMMITTER_EMAIL="dev@example.com", GIT_CONFIG_NOSYSTEM="1", HOME=str(repo),
    )  # fmt: skip
    if when is not None:
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S+0000")
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    done = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def commit(repo: Path, files: dict[str, str | bytes], message: str, when: datetime) -> str:
    """Write `files`, stage everything and commit at `when`; the new HEAD."""
    for name, body in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(body, bytes):
            path.write_bytes(body)
        else:
            path.write_text(body)
    git(repo, "add", "-A", when=when)
    git(repo, "commit", "-q", "-m", message, when=when)
    return git(repo, "rev-parse", "HEAD")


def make_repo(path: Path, *, branch: str = "main", when: datetime | None = None) -> Path:
    """A repository with one commit (a README) made an hour before `START`."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", branch)
    commit(path, {"README.md": "# app\n"}, "initial", when or START - timedelta(hours=1))
    return path


def _line(kind: str, message: dict[str, Any], at: datetime, common: dict[str, Any]) -> dict:
    stamp = at.strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return {
        **common,
        "type": kind,
        "message": message,
        "uuid": str(uuid.uuid4()),
        "timestamp": stamp,
    }


def transcript(
    path: Path,
    *,
    cwd: Path | str,
    task: str,
    branch: str = "main",
    start: datetime = START,
    end: datetime = END,
    session_id: str = "5e55a0e0-0000-4000-8000-000000000001",
) -> Path:
    """A Claude Code transcript: the task, a Write, a Bash `pytest`, a Bash `git commit`,
    each with its result, then the answer; its lines span `start` to `end`."""
    common = {
        "parentUuid": None, "isSidechain": False, "userType": "external", "cwd": str(cwd),
        "sessionId": session_id, "version": "2.1.38", "gitBranch": branch,
    }  # fmt: skip
    step = (end - start) / 7
    calls = [
        ("Write", {"file_path": f"{cwd}/app.py", "content": "print('hi')\n"}, "File created"),
        ("Bash", {"command": "pytest -q"}, "3 passed in 0.01s"),
        ("Bash", {"command": "git commit -am 'add app'"}, "[main 1a2b3c4] add app"),
    ]
    lines = [_line("user", {"role": "user", "content": task}, start, common)]
    for i, (name, args, output) in enumerate(calls):
        tool_id = f"toolu_{i:024d}"
        use = {"type": "tool_use", "id": tool_id, "name": name, "input": args}
        lines.append(_line("assistant", _assistant([use]), start + step * (2 * i + 1), common))
        result = {"type": "tool_result", "content": output, "tool_use_id": tool_id}
        lines.append(
            _line("user", {"role": "user", "content": [result]}, start + step * (2 * i + 2), common)
        )
    done = _assistant([{"type": "text", "text": "Done: the app is written and tested."}])
    lines.append(_line("assistant", done, end, common))
    parent = None
    for line in lines:
        line["parentUuid"], parent = parent, line["uuid"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _assistant(content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "model": "claude-opus-4-6", "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message",
        "role": "assistant", "content": content, "stop_reason": None,
        "usage": {"input_tokens": 3, "output_tokens": 13},
    }  # fmt: skip
