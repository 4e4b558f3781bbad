"""The Claude Code plugin in the repository: its files validate against the documented
schema (`tests/plugin/schemas.py`), and the exact commands that hooks.json and the slash
commands register run as Claude Code runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
import tomllib
from pathlib import Path

import jsonschema
import pytest
import yaml  # a dev extra (pip install -e '.[dev]'), like jsonschema

from tests.conftest import REPO, require
from tests.jobs.hook.helpers import (
    REAL,
    SCORER,
    Ran,
    assert_quick_and_silent,
    hook_env,
    log_text,
    payload,
    real,
    run_hook,
    stored_runs,
    wait_log,
    wait_settled,
)
from tests.plugin.schemas import COMMAND_FRONTMATTER, HOOKS, MARKETPLACE, PLUGIN

TOOL_HEAVY = next(r for r in REAL if r.endswith("/tool_heavy.jsonl"))
BANG = re.compile(r"^!`(?P<command>[^`]+)`$", re.MULTILINE)
"""A command file's `!`…`` line: run by Claude Code before the prompt reaches the model."""
BASE_PATH = "/usr/bin:/bin"


def _json(relative: str) -> dict:
    return json.loads((REPO / relative).read_text())


def _validate(document: object, schema: dict) -> None:
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
    hooks = _json("hooks/hooks.json")["hooks"]
    return {event: groups[0]["hooks"][0]["command"] for event, groups in hooks.items()}


def plugin_env(home: Path, path: str = BASE_PATH, **extra: str) -> dict[str, str]:
    """What a hook sees: CLAUDE_PLUGIN_ROOT and a PATH (with the scorer or without)."""
    return hook_env(home, CLAUDE_PLUGIN_ROOT=str(REPO), PATH=path, **extra)


def with_scorer() -> str:
    return f"{SCORER.parent}:{BASE_PATH}"


def run_shell(command: str, env: dict[str, str], body: bytes = b"", cwd: Path | None = None) -> Ran:
    """`command` as Claude Code runs a hook command: through a shell, payload on stdin."""
    return run_hook(body, env, ["sh", "-c", command], cwd=cwd)


# --- the files -------------------------------------------------------------------------


def test_the_manifests_validate_and_agree():
    plugin = _json(".claude-plugin/plugin.json")
    market = _json(".claude-plugin/marketplace.json")
    _validate(plugin, PLUGIN)
    _validate(market, MARKETPLACE)
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert plugin["version"] == version
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] == market["name"] == "session-scorer"
    assert entry["version"] == version
    assert (REPO / entry["source"] / ".claude-plugin" / "plugin.json").is_file()


def test_the_schema_rejects_what_the_documentation_rejects():
    good = _json(".claude-plugin/plugin.json")
    for bad in (
        {**good, "name": "Session Scorer"},
        {**good, "version": "1.0"},
        {**good, "commands": "commands"},
        {**good, "hooks": "../hooks.json"},
        {"version": "0.1.0"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            _validate(bad, PLUGIN)
    hooks = _json("hooks/hooks.json")
    for bad in (
        {"SessionEnd": hooks["hooks"]["SessionEnd"]},  # the settings format, no wrapper
        {"hooks": {"SessionStop": hooks["hooks"]["SessionEnd"]}},
        {"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}},
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            _validate(bad, HOOKS)


def test_hooks_json_registers_session_end_and_stop_through_the_plugin_root():
    _validate(_json("hooks/hooks.json"), HOOKS)
    commands = hook_commands()
    assert set(commands) == {"SessionEnd", "Stop"}
    for event, command in commands.items():
        assert command == f'sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/scorer.sh" hook {event}'
    assert os.access(REPO / "hooks" / "scorer.sh", os.X_OK)


def test_the_command_files_validate():
    files = sorted((REPO / "commands").glob("*.md"))
    assert [f.stem for f in files] == ["score", "view-scores"]
    for path in files:
        meta, body = frontmatter(path)
        _validate(meta, COMMAND_FRONTMATTER)
        assert re.fullmatch(r"[a-z][a-z0-9-]*", path.stem)
        lines = BANG.findall(body)
        assert len(lines) == 1, path.name
        # The allowed tools cover the command that runs; its script exists.
        assert meta["allowed-tools"] == "Bash(sh:*)" and lines[0].startswith("sh ")
        script = re.search(r"\$\{CLAUDE_PLUGIN_ROOT\}/(\S+?)\"", lines[0]).group(1)
        assert (REPO / script).is_file()


# --- the hooks, run as registered ------------------------------------------------------


def test_the_registered_session_end_hook_returns_at_once_and_scores(tmp_path, cc_projects):
    home = tmp_path / "home"
    session_id = REAL[TOOL_HEAVY]
    body = json.dumps(payload(require(real(TOOL_HEAVY)), session_id)).encode()
    assert_quick_and_silent(
        run_shell(hook_commands()["SessionEnd"], plugin_env(home, with_scorer()), body)
    )
    wait_settled(home, [session_id])
    assert stored_runs(home) == {session_id: 1}


def test_the_registered_stop_hook_costs_nothing_unless_asked_for(tmp_path, cc_projects):
    home = tmp_path / "home"
    body = json.dumps(payload(real(TOOL_HEAVY), "s-stop", "Stop")).encode()
    done = run_shell(hook_commands()["Stop"], plugin_env(home, with_scorer()), body).done
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not home.exists()  # no Python started: nothing written at all
    env = plugin_env(
        home, with_scorer(), SCORER_HOOK_EVENTS="SessionEnd, Stop", SCORER_HOOK_STOP_DEBOUNCE="0"
    )
    done = run_shell(hook_commands()["Stop"], env, body).done
    assert done.returncode == 0
    wait_log(home, "s-stop: scored by heuristic")


def test_the_kill_switch_stops_the_hook_before_python(tmp_path):
    home = tmp_path / "home"
    env = plugin_env(home, with_scorer(), SCORER_HOOK_ENABLED="off")
    done = run_shell(hook_commands()["SessionEnd"], env, b'{"session_id": "x"}').done
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not home.exists()


@pytest.fixture
def no_scorer(tmp_path):
    """A machine where session-scorer is not installed: a PATH and HOME without it."""
    probe = subprocess.run(
        ["python3", "-c", "import scorer.cli.entry"], env={"PATH": BASE_PATH}, capture_output=True
    )
    if probe.returncode == 0:
        pytest.skip("the system python3 has session-scorer installed")
    home_dir = tmp_path / "user"
    home_dir.mkdir()
    env = {"PATH": BASE_PATH, "HOME": str(home_dir), "CLAUDE_PLUGIN_ROOT": str(REPO)}
    return home_dir, env


def test_without_the_scorer_the_hook_says_once_in_the_log_how_to_install(no_scorer, tmp_path):
    home_dir, env = no_scorer
    plugin = tmp_path / "plugin"  # an installed copy, without a .venv of its own
    shutil.copytree(REPO / "hooks", plugin / "hooks")
    env["CLAUDE_PLUGIN_ROOT"] = str(plugin)
    command = hook_commands()["SessionEnd"]
    for _ in range(3):
        assert_quick_and_silent(
            run_shell(command, env, b'{"session_id": "s", "transcript_path": "/t"}')
        )
    log = (home_dir / ".local/share/session-scorer/logs/hook.log").read_text()
    assert log.count("session-scorer is not installed") == 1
    assert f'pipx install "{plugin}"' in log
    done = run_shell(f'sh "{plugin}/hooks/scorer.sh" hook --now --session-id s', env).done
    assert done.returncode == 1 and b"session-scorer is not installed" in done.stdout


def test_the_scorer_is_found_off_path(no_scorer, tmp_path):
    home_dir, env = no_scorer
    local_bin = home_dir / ".local" / "bin"
    local_bin.mkdir(parents=True)
    for where, name in ((local_bin, "scorer"), (tmp_path, "my-scorer")):
        (where / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
        (where / name).chmod(0o755)
    script = f'sh "{REPO}/hooks/scorer.sh" hook --now --session-id s'
    assert run_shell(script, env).done.stdout == b"scorer hook --now --session-id s\n"
    env["SCORER_BIN"] = str(tmp_path / "my-scorer")
    assert run_shell(script, env).done.stdout == b"my-scorer hook --now --session-id s\n"


# --- the slash commands, run as written ------------------------------------------------


def command_line(name: str, session_id: str = "", arguments: str = "") -> str:
    """The `!` line of a command file after Claude Code's substitutions."""
    _, body = frontmatter(REPO / "commands" / f"{name}.md")
    (line,) = BANG.findall(body)
    line = line.replace("${CLAUDE_PLUGIN_ROOT}", str(REPO))
    return line.replace("${CLAUDE_SESSION_ID}", session_id).replace("$ARGUMENTS", arguments)


def test_score_shows_the_scorecard_of_the_current_session(tmp_path, cc_projects):
    session_id = "7e57ab1e-0000-4000-8000-000000000001"
    projects = tmp_path / "claude" / "projects" / "-workspace"
    projects.mkdir(parents=True)
    shutil.copyfile(real(TOOL_HEAVY), projects / f"{session_id}.jsonl")
    env = plugin_env(tmp_path / "home", with_scorer(), SCORER_CLAUDE_PROJECTS=str(projects.parent))
    done = run_shell(command_line("score", session_id), env, cwd=tmp_path).done
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith(f"**Session `{session_id}`**, scored by heuristic")
    assert "| tool_efficiency |" in out and "Recommendation:" in out
    rescored = run_shell(command_line("score", session_id, "--rescore"), env).done.stdout
    assert rescored.decode().startswith(f"**Session `{session_id}`**")  # judged again


def test_view_scores_writes_the_viewer_and_opens_it(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > "{opened}"\n')
    browser.chmod(0o755)
    env = plugin_env(tmp_path / "home", with_scorer(), HOME=str(tmp_path), BROWSER=str(browser))
    done = run_shell(command_line("view-scores"), env, cwd=tmp_path).done
    assert done.returncode == 0, done.stderr
    page = tmp_path / ".cache" / "session-scorer" / "view.html"
    assert page.is_file() and "<html" in page.read_text()[:500].lower()
    wait_for_file(opened)
    assert opened.read_text().strip() == page.resolve().as_uri()
    assert f"opened {page.resolve().as_uri()}" in done.stderr.decode()


def wait_for_file(path: Path, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert path.exists()


def test_the_log_after_a_real_run_has_no_traceback(tmp_path, cc_projects):
    home = tmp_path / "home"
    env = plugin_env(home, with_scorer())
    body = json.dumps(payload(real(TOOL_HEAVY), "s-log")).encode()
    run_shell(hook_commands()["SessionEnd"], env, body)
    wait_log(home, "s-log: scored by heuristic")
    assert "Traceback" not in log_text(home)


def test_every_hook_setting_is_documented():
    from scorer.settings import Settings

    doc = (REPO / "docs" / "plugin.md").read_text()
    names = [f.validation_alias for n, f in Settings.model_fields.items() if n.startswith("hook_")]
    assert len(names) == 12
    assert [n for n in names if f"`{n}`" not in doc] == []
