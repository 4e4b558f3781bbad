"""The Claude Code plugin in the repository (`plugin/`, the folder the root
marketplace.json points to): its files validate against the documented schema
(`tests/plugin/schemas.py`), and the exact commands that hooks.json and the slash commands
register run as Claude Code runs them."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import tomllib
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import REPO, require
from tests.jobs.hook.helpers import (
    REAL,
    assert_quick_and_silent,
    log_text,
    payload,
    real,
    stored_runs,
    wait_log,
    wait_settled,
)
from tests.plugin.helpers import (
    BANG,
    PLUGIN_DIR,
    SUBSTITUTIONS,
    TOOL_HEAVY,
    command_line,
    frontmatter,
    hook_commands,
    plugin_env,
    read_json,
    run_shell,
    validate,
    with_scorer,
)
from tests.plugin.schemas import COMMAND_FRONTMATTER, HOOKS, MARKETPLACE, PLUGIN

# --- the files -------------------------------------------------------------------------


def test_the_manifests_validate_and_agree():
    plugin = read_json("plugin/.claude-plugin/plugin.json")
    market = read_json(".claude-plugin/marketplace.json")
    validate(plugin, PLUGIN)
    validate(market, MARKETPLACE)
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert plugin["version"] == version
    (entry,) = market["plugins"]
    assert entry["name"] == plugin["name"] == market["name"] == "session-scorer"
    assert entry["version"] == version
    assert (REPO / entry["source"]).resolve() == PLUGIN_DIR
    assert (PLUGIN_DIR / ".claude-plugin" / "plugin.json").is_file()
    # Only the marketplace's own file stays at the root: the plugin is all in its folder.
    assert sorted(p.name for p in (REPO / ".claude-plugin").iterdir()) == ["marketplace.json"]
    assert not (REPO / "hooks").exists() and not (REPO / "commands").exists()


def test_the_schema_rejects_what_the_documentation_rejects():
    good = read_json("plugin/.claude-plugin/plugin.json")
    for bad in (
        {**good, "name": "Session Scorer"},
        {**good, "version": "1.0"},
        {**good, "commands": "commands"},
        {**good, "hooks": "../hooks.json"},
        {"version": "0.1.0"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, PLUGIN)
    hooks = read_json("plugin/hooks/hooks.json")
    for bad in (
        {"SessionEnd": hooks["hooks"]["SessionEnd"]},  # the settings format, no wrapper
        {"hooks": {"SessionStop": hooks["hooks"]["SessionEnd"]}},
        {"hooks": {"Stop": [{"hooks": [{"type": "command"}]}]}},
        {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}},
    ):
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, HOOKS)


def test_hooks_json_registers_session_end_and_stop_through_the_plugin_root():
    validate(read_json("plugin/hooks/hooks.json"), HOOKS)
    commands = hook_commands()
    assert set(commands) == {"SessionEnd", "Stop"}
    for event, command in commands.items():
        assert command == f'sh "${{CLAUDE_PLUGIN_ROOT}}/hooks/scorer.sh" hook {event}'
    assert os.access(PLUGIN_DIR / "hooks" / "scorer.sh", os.X_OK)


def test_the_command_filesvalidate():
    files = sorted((PLUGIN_DIR / "commands").glob("*.md"))
    assert [f.stem for f in files] == ["score", "view-scores"]
    for path in files:
        meta, body = frontmatter(path)
        validate(meta, COMMAND_FRONTMATTER)
        assert re.fullmatch(r"[a-z][a-z0-9-]*", path.stem)
        lines = BANG.findall(body)
        assert len(lines) == 1, path.name
        # The allowed tools cover the command that runs; its script exists.
        assert meta["allowed-tools"] == "Bash(sh:*)" and lines[0].startswith("sh ")
        script = re.search(r"\$\{CLAUDE_PLUGIN_ROOT\}/(\S+?)\"", lines[0]).group(1)
        assert (PLUGIN_DIR / script).is_file()


def test_command_lines_pass_the_default_permission_check():
    """No shell expansion Claude Code would have to refuse: only its own substitutions,
    and every path is the scorer's to compute."""
    for path in sorted((PLUGIN_DIR / "commands").glob("*.md")):
        (line,) = BANG.findall(frontmatter(path)[1])
        braces = set(re.findall(r"\$\{([^}]*)\}", line))
        assert braces <= SUBSTITUTIONS, f"{path.name}: ${{{braces - SUBSTITUTIONS}}}"
        rest = re.sub(r"\$\{[^}]*\}|\$ARGUMENTS", "", line)
        assert "$" not in rest and "~" not in rest and "`" not in rest, path.name


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


def test_without_the_scorer_or_a_source_the_hook_says_once_in_the_log_how_to_install(
    no_scorer, tmp_path
):
    home_dir, env = no_scorer
    plugin = tmp_path / "plugin"  # a copy in no checkout and no plugin cache
    shutil.copytree(PLUGIN_DIR, plugin)
    env["CLAUDE_PLUGIN_ROOT"] = str(plugin)
    command = hook_commands()["SessionEnd"]
    for _ in range(3):
        assert_quick_and_silent(
            run_shell(command, env, b'{"session_id": "s", "transcript_path": "/t"}')
        )
    log = (home_dir / ".local/share/session-scorer/logs/hook.log").read_text()
    assert log.count("session-scorer is not installed") == 1
    assert "pipx install /path/to/session-scorer" in log and "SCORER_INSTALL_SOURCE" in log
    assert "Traceback" not in log
    done = run_shell(f'sh "{plugin}/hooks/scorer.sh" score', env).done
    assert done.returncode == 0 and done.stderr == b""  # a slash command shows its text
    (line,) = done.stdout.decode().splitlines()
    assert line.startswith("session-scorer is not installed") and "SCORER_BIN" in line


def test_the_scorer_is_found_off_path(no_scorer, tmp_path):
    home_dir, env = no_scorer
    local_bin = home_dir / ".local" / "bin"
    local_bin.mkdir(parents=True)
    for where, name in ((local_bin, "scorer"), (tmp_path, "my-scorer")):
        (where / name).write_text(f'#!/bin/sh\necho "{name} $*"\n')
        (where / name).chmod(0o755)
    script = f'sh "{PLUGIN_DIR}/hooks/scorer.sh" hook --now --session-id s'
    assert run_shell(script, env).done.stdout == b"scorer hook --now --session-id s\n"
    env["SCORER_BIN"] = str(tmp_path / "my-scorer")
    assert run_shell(script, env).done.stdout == b"my-scorer hook --now --session-id s\n"


# --- the slash commands, run as written ------------------------------------------------


def test_score_shows_the_scorecard_of_the_current_session(tmp_path, cc_projects):
    session_id = "7e57ab1e-0000-4000-8000-000000000001"
    projects = tmp_path / "claude" / "projects" / "-workspace"
    projects.mkdir(parents=True)
    shutil.copyfile(real(TOOL_HEAVY), projects / f"{session_id}.jsonl")
    env = plugin_env(
        tmp_path / "home", with_scorer(), SCORER_CLAUDE_PROJECTS=str(projects.parent),
        CLAUDE_CODE_SESSION_ID=session_id,  # what Claude Code gives a command's `!` line
    )  # fmt: skip
    done = run_shell(command_line("score"), env, cwd=tmp_path).done
    assert done.returncode == 0, done.stderr
    out = done.stdout.decode()
    assert out.startswith(f"**Session `{session_id}`**, scored by heuristic")
    assert "| tool_efficiency |" in out and "Recommendation:" in out
    rescored = run_shell(command_line("score", "--rescore"), env).done.stdout
    assert rescored.decode().startswith(f"**Session `{session_id}`**")  # judged again


def test_score_as_the_first_prompt_says_in_one_line_there_is_nothing_yet(tmp_path):
    """Claude Code runs the `!` line before it writes the session's transcript."""
    projects = tmp_path / "claude" / "projects"
    (projects / "-workspace").mkdir(parents=True)
    env = plugin_env(
        tmp_path / "home", with_scorer(), SCORER_CLAUDE_PROJECTS=str(projects),
        CLAUDE_CODE_SESSION_ID="7e57ab1e-0000-4000-8000-0000000000ff",
    )  # fmt: skip
    done = run_shell(command_line("score"), env, cwd=tmp_path).done
    assert (done.returncode, done.stderr) == (0, b"")
    (line,) = done.stdout.decode().splitlines()
    assert line.startswith("Nothing to score yet: this session has no transcript so far")
    empty = projects / "-workspace" / "7e57ab1e-0000-4000-8000-0000000000ff.jsonl"
    queued = {"type": "queue-operation", "operation": "enqueue", "content": "/score",
              "sessionId": empty.stem, "timestamp": "2026-11-28T09:34:42.878Z"}  # fmt: skip
    empty.write_text(json.dumps(queued) + "\n")  # all there is before the first turn
    done = run_shell(command_line("score"), env, cwd=tmp_path).done
    assert (done.returncode, done.stderr) == (0, b"")
    (line,) = done.stdout.decode().splitlines()
    assert line.startswith("Nothing to score yet: ") and "no prompts" in line
    del env["CLAUDE_CODE_SESSION_ID"]  # not run by Claude Code at all
    done = run_shell(command_line("score"), env, cwd=tmp_path).done
    assert done.returncode == 0 and done.stdout.startswith(b"No session to score")


def test_view_scores_writes_the_viewer_and_opens_it(tmp_path):
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f'#!/bin/sh\necho "$1" > "{opened}"\n')
    browser.chmod(0o755)
    env = plugin_env(tmp_path / "home", with_scorer(), HOME=str(tmp_path), BROWSER=str(browser))
    done = run_shell(command_line("view-scores"), env, cwd=tmp_path).done
    assert done.returncode == 0, done.stderr
    page = tmp_path / "home" / "cache" / "view.html"  # SCORER_CACHE_DIR, not the project
    assert not list(tmp_path.glob("*.html"))
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
