"""CLI conventions on every entry point and command: -h, --version, completion, an example
and the exit codes in every help, -q/-v, `-` for stdin, one --judge default, exit 2 for
every usage error."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scorer._version import package_version
from scorer.cli.main import app
from tests.conftest import REPO
from tests.jobs.helpers import make_projects

DEMO = REPO / "examples" / "demo-session.jsonl"
ENTRY_POINTS = ("score-session", "score-backfill", "score-calibrate", "scorer")
runner = CliRunner()


def script(name: str) -> str:
    path = Path(sys.executable).parent / name
    if not path.exists():
        pytest.skip(f"{name} is not installed beside {sys.executable}")
    return str(path)


def click_context(cmd) -> typer.Context:
    return typer.Context(cmd)


def subcommands(cmd) -> dict:
    """A group's commands by name (loading the lazy ones); {} for a command."""
    if not hasattr(cmd, "list_commands"):
        return {}
    ctx = click_context(cmd)
    return {name: cmd.get_command(ctx, name) for name in cmd.list_commands(ctx)}


def command_paths(cmd=None, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every command and group of `scorer`, as argv prefixes."""
    cmd = cmd or typer.main.get_command(app)
    paths = [prefix]
    for name, sub in subcommands(cmd).items():
        paths += command_paths(sub, (*prefix, name))
    return paths


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_entry_point_version_help_alias_and_completion(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    version = subprocess.run([script(name), "--version"], capture_output=True, text=True)
    assert version.returncode == 0 and version.stdout.strip() == (
        f"session-scorer {package_version()}"
    )
    short = subprocess.run([script(name), "-h"], capture_output=True, text=True)
    long = subprocess.run([script(name), "--help"], capture_output=True, text=True)
    assert short.returncode == 0 and short.stdout == long.stdout
    for text in ("Example:", "Exit codes:", "--install-completion", "--quiet", "--verbose"):
        assert text in short.stdout, (name, text)
    # `--show-completion` detects the shell from the process tree: run it under bash
    # (`; exit $?` keeps bash from exec-ing it away), whatever started the test run.
    shown = subprocess.run(
        ["bash", "-c", f'"{script(name)}" --show-completion; exit $?'],
        capture_output=True,
        text=True,
    )
    env_var = "_" + name.upper().replace("-", "_") + "_COMPLETE"
    assert shown.returncode == 0 and env_var in shown.stdout


def test_every_command_has_help_with_an_example_and_the_exit_codes():
    paths = command_paths()
    assert len(paths) >= 15  # the umbrella, its groups and every command
    for path in paths:
        result = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, (path, result.output)
        assert "Example:" in result.stdout and "Exit codes:" in result.stdout, path
        assert "2 usage error" in result.stdout and "--quiet" in result.stdout, path


def _options(path: tuple[str, ...]) -> list[str]:
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = subcommands(cmd)[name]
    return [
        o
        for p in cmd.params
        if not getattr(p, "hidden", False)
        for o in (*p.opts, *p.secondary_opts)
    ]


@pytest.mark.parametrize("columns", [80, 100])
def test_narrow_help_cuts_no_cell_and_breaks_no_word(columns):
    """Below 120 columns help is the plain layout: every line fits, every option and
    choice list is whole (typer's rich tables cut `--install-compl…` at 80)."""
    for path in command_paths():
        result = runner.invoke(app, [*path, "-h"], env={"COLUMNS": str(columns)})
        assert result.exit_code == 0, (path, result.output)
        lines = result.stdout.splitlines()
        assert not [line for line in lines if len(line) > columns], (path, columns)
        assert "…" not in result.stdout.replace('"…"', ""), path  # the hook example quotes one
        words = {w for line in lines for w in line.split()}
        for option in _options(path):
            assert any(w == option or w.startswith(option + ",") for w in words), (path, option)
        assert "Exit codes:" in result.stdout and "[bold]" not in result.stdout, path
        assert not [line for line in lines if line.rstrip().endswith("-")], (path, columns)
    backfill = runner.invoke(app, ["backfill", "-h"], env={"COLUMNS": str(columns)}).stdout
    assert "<claude-code|langfuse>" in backfill and "<low|medium|high|xhigh|max>" in backfill


def test_quiet_drops_notes_and_verbose_raises_the_log_level():
    loud = runner.invoke(app, ["session", str(DEMO), "--no-store", "--json"])
    assert loud.exit_code == 0 and "note: ANTHROPIC_API_KEY is not set" in loud.stderr
    quiet = runner.invoke(app, ["session", str(DEMO), "--no-store", "--json", "-q"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["judge"] == "heuristic"
    umbrella = runner.invoke(app, ["-q", "session", str(DEMO), "--no-store", "--json"])
    assert umbrella.exit_code == 0 and umbrella.stderr == ""
    verbose = runner.invoke(app, ["session", str(DEMO), "--no-store", "--json", "-v"])
    assert verbose.exit_code == 0 and logging.getLogger("scorer").level == logging.DEBUG
    runner.invoke(app, ["schema"])  # back to the default level
    assert logging.getLogger("scorer").level == logging.INFO


def test_dash_reads_the_transcript_from_stdin():
    result = runner.invoke(
        app, ["session", "-", "--no-store", "--json"], input=DEMO.read_text(encoding="utf-8")
    )
    assert result.exit_code == 0, result.stderr
    card = json.loads(result.stdout)
    assert card["session_id"] == "0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00"
    assert card["status"] == "scored"
    pane = "$ pytest -q\n1 failed, 2 passed\n$ pytest -q\n3 passed in 0.1s\n"
    plan = runner.invoke(app, ["session", "-", "--dry-run", "--json"], input=pane)
    assert plan.exit_code == 0, plan.stderr
    assert json.loads(plan.stdout)["source"] == "terminal"


def test_dash_reads_the_task_from_stdin(tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("$ make test\nall 4 tests passed\n", encoding="utf-8")
    args = ["session", str(run), "--dry-run", "--prompt-file", "-"]
    task = "Make the four tests in tests/ pass.\n"
    result = runner.invoke(app, args, input=task, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.stderr
    assert "task: Make the four tests in tests/ pass." in result.stdout
    both = runner.invoke(app, ["session", "-", "--prompt-file", "-"], input="x")
    assert both.exit_code == 2 and "not both" in both.stderr


def test_dash_reads_calibration_labels_from_stdin(tmp_path):
    labels = "session_id,dimension,value\nabc,goal_achievement,complete\n"
    args = ["calibrate", "--ground-truth", "-", "--n-boot", "0", "--out", str(tmp_path / "r")]
    result = runner.invoke(app, args, input=labels)
    assert "1 ground-truth label from -" in result.stderr
    # read, but no stored scorecard matches it: nothing to compare (issue 33 item 2)
    assert result.exit_code == 1 and "nothing to compare" in result.stderr, result.output
    jsonl = '{"session_id": "abc", "dimension": "goal_achievement", "value": "complete"}\n'
    assert "1 ground-truth label from -" in runner.invoke(app, args, input=jsonl).stderr


def test_judge_defaults_to_auto_everywhere_and_says_which(tmp_path):
    root = tmp_path / "projects"
    make_projects(root, 2)
    backfill = runner.invoke(app, ["backfill", "--projects-root", str(root), "--json", "-q"])
    assert backfill.exit_code == 0, backfill.output
    assert json.loads(backfill.stdout)["scored"] == 2  # heuristic: no key, no network
    announced = runner.invoke(app, ["backfill", "--projects-root", str(root), "--json"])
    assert "ANTHROPIC_API_KEY is not set" in announced.stderr
    for path in (("session",), ("backfill",), ("calibrate",)):
        help_text = runner.invoke(app, [*path, "-h"], env={"COLUMNS": "300"}).stdout
        assert "[default: auto]" in help_text, path


@pytest.mark.parametrize(
    "args",
    [
        ["backfill", "--from", "yesterday"],
        ["backfill", "--to", "2026-13-01"],
        ["calibrate", "--since", "yesterday"],
        ["session", str(DEMO), "--since", "yesterday"],
        ["backfill", "--shard", "3/2"],
        ["backfill", "--sample", "2", "--fraction", "0.5"],
        ["backfill", "--fraction", "2"],
        ["backfill", "--tag", "x"],
        ["backfill", "--source", "langfuse"],
        ["backfill", "--judge", "heuristic", "--batch-api"],
        ["session", str(DEMO), "--prompt", "a", "--prompt-file", "b"],
        ["session", str(DEMO), "--judge", "nope"],
        ["scores", "export", "--format", "parquet"],
        ["trends", "--since", "last week"],
    ],
)
def test_every_usage_error_exits_2(args):
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (args, result.output)
    assert "Traceback" not in result.output


def test_no_command_lists_an_option_twice():
    def walk(cmd, path=()):
        names = [p.name for p in cmd.params]
        assert len(names) == len(set(names)), (path, names)
        for name, sub in subcommands(cmd).items():
            walk(sub, (*path, name))

    root = typer.main.get_command(app)
    walk(root)
    assert [p.name for p in root.params].count("install_completion") == 1


@pytest.mark.parametrize("columns", ["80", "200"])
@pytest.mark.parametrize("group", [(), ("scores",), ("configs",)])
def test_a_group_without_a_command_prints_its_help_and_exits_2(group, columns, monkeypatch):
    """Like click's `no_args_is_help`: the help on stderr and exit 2 (a usage error); in
    a narrow terminal (plain help) as in a wide one (typer's rich help)."""
    monkeypatch.setenv("COLUMNS", columns)
    bare = subprocess.run([script("scorer"), *group], capture_output=True, text=True)
    assert bare.returncode == 2, bare
    assert bare.stdout == ""
    assert f"Usage: scorer {' '.join(group)}".rstrip() in bare.stderr
    commands = typer.main.get_command(app)
    for name in group:
        commands = subcommands(commands)[name]
    for name in subcommands(commands):
        assert name in bare.stderr, (group, name)
    assert "Exit codes:" in bare.stderr
