"""The umbrella `scorer` command; each group lives in its own module, imported when used.

`scorer --version` and `scorer scores list` must start fast, and the command modules
between them pull in scipy (trends), the Langfuse SDK (configs), the backfill machinery:
`LazyGroup` knows every command by name and short help, and imports a command's module
only when that command runs (or when `scorer --help` lists them all).
"""

from __future__ import annotations

import importlib
from typing import Any

import typer

from scorer._gc import freeze_at_exit
from scorer.cli._conventions import CONTEXT, ScorerGroup, adopt

COMMANDS: dict[str, tuple[str, str, str]] = {
    "session": (
        "scorer.cli.session",
        "score_session_command",
        "Score one session (same as `score-session`).",
    ),
    "scores": ("scorer.cli.scores", "app", "Browse and push stored scores."),
    "configs": ("scorer.cli.configs", "app", "Langfuse score configs from score_configs/."),
    "backfill": (
        "scorer.cli.backfill",
        "backfill_command",
        "Score every finished session in a window.",
    ),
    "calibrate": ("scorer.cli.calibrate", "calibrate_command", "Agreement with ground truth."),
    "resume-prompt": ("scorer.cli.live", "resume_prompt_command", "Write the next run's prompt."),
    "assess": ("scorer.cli.live", "assess_command", "Write an orientation assessment."),
    "view": ("scorer.cli.view", "view_command", "Write (or serve) the HTML viewer of the store."),
    "trends": ("scorer.cli.trends", "trends_command", "Per-period means, CIs and lowest sessions."),
    "schema": ("scorer.cli.schema", "schema_command", "Print the scorecard JSON Schema."),
    "hook": (
        "scorer.cli.hook",
        "hook_command",
        "Score a session when it ends (the plugin's hook).",
    ),
}
"""Each command's module, the typer app or function in it, and its short help, in the
order `scorer --help` lists them."""


def load_command(name: str) -> Any:
    """Import command `name`'s module and build its click command (a group for a typer
    app), with the shared options and epilog."""
    module, attr, help_text = COMMANDS[name]
    target = getattr(importlib.import_module(module), attr)
    cmd: Any
    if isinstance(target, typer.Typer):
        cmd = typer.main.get_group(target)  # a group even with one command (configs)
    else:
        holder = typer.Typer(add_completion=False)
        holder.command(name, help=help_text)(target)
        cmd = typer.main.get_command(holder)
    cmd.name, cmd.help = name, help_text
    adopt(cmd, root=False)
    return cmd


class LazyGroup(ScorerGroup):
    """`scorer`: its commands are loaded on first use (see the module docstring)."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            self.commands[cmd_name] = load_command(cmd_name)
        return self.commands.get(cmd_name)


app = typer.Typer(
    cls=LazyGroup,
    context_settings=CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    help="Score coding-agent sessions: six dimensions + weighted overall, with evidence.",
)


@app.callback()
def _umbrella() -> None:
    """Nothing to do before a command (typer needs a callback for a group of lazy commands)."""


def main() -> None:
    """Console-script entry point for `scorer`."""
    freeze_at_exit()
    app(prog_name="scorer")
