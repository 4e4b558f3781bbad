"""Helpers for the plugin tests: the plugin's files, and its commands run as Claude Code
runs them (through a shell, with Claude Code's substitutions made)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import yaml  # a dev extra (pip install -e '.[dev]'), like jsonschema

from tests.conftest import REPO
from tests.jobs.hook.helpers import REAL, SCORER, Ran, hook_env, run_hook

TOOL_HEAVY = next(r for r in REAL if r.endswith("/tool_heavy.jsonl"))
BANG = re.compile(r"^!`(?P<command>[^`]+)`$", re.MULTILINE)
"""A command file's `!`…`` line: run by Claude Code before the prompt reaches the model."""
BASE_PATH = "/usr/bin:/bin"
PLUGIN_DIR = REPO / "plugin"
"""The plugin's own files: all a marketplace install copies."""
SUBSTITUTIONS = {"CLAUDE_PLUGIN_ROOT"}
"""What Claude Code itself replaces in a command's `!` line. Any other `${…}` (or `$(…)`)
is left to the shell, and Claude Code's default permission check refuses such a line
("a variable in braces in this command can't be checked before it runs")."""


def read_json(relative: str) -> dict:
    return json.loads((REPO / relative).read_text())


def validate(document: object, schema: dict) -> None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    validator.validate(document)


def frontmatter(path: Path) -> tuple[dict, str]:
    text = path.read_text()
    match = re.match(r"^---\s*\n(.*?)---\s*\n", text, re.DOTALL)
    assert match, f"{path.name} has no frontmatter"
    return yaml.safe_load(match.group(1)), text[match.end() :]


def hook_commands() -> dict[str, str]:
    """Event → the command hooks.json registers for it."""
    hooks = read_json("plugin/hooks/hooks.json")["hooks"]
    return {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}


def plugin_env(home: Path, path: str = BASE_PATH, **extra: str) -> dict[str, str]:
    """What a hook sees: CLAUDE_PLUGIN_ROOT and a PATH (with the scorer or without)."""
    return hook_env(home, CLAUDE_PLUGIN_ROOT=str(PLUGIN_DIR), PATH=path, **extra)


def with_scorer() -> str:
    return f"{SCORER.parent}:{BASE_PATH}"


def run_shell(command: str, env: dict[str, str], body: bytes = b"", cwd: Path | None = None) -> Ran:
    """`command` as Claude Code runs a hook command: through a shell, payload on stdin."""
    return run_hook(body, env, ["sh", "-c", command], cwd=cwd)


def command_line(name: str, arguments: str = "") -> str:
    """The `!` line of a command file after Claude Code's substitutions."""
    _, body = frontmatter(PLUGIN_DIR / "commands" / f"{name}.md")
    (line,) = BANG.findall(body)
    return line.replace("${CLAUDE_PLUGIN_ROOT}", str(PLUGIN_DIR)).replace("$ARGUMENTS", arguments)
