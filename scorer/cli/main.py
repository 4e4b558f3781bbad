"""The umbrella `scorer` command; each group lives in its own module."""

from __future__ import annotations

import typer

from scorer._gc import freeze_at_exit
from scorer.cli._conventions import CONTEXT, ScorerGroup
from scorer.cli.session import score_session_command

app = typer.Typer(
    cls=ScorerGroup,
    context_settings=CONTEXT,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Score coding-agent sessions: six dimensions + weighted overall, with evidence.",
)
app.command("session", help="Score one session (same as `score-session`).")(score_session_command)


def _register() -> None:
    from scorer.cli import backfill, calibrate, configs, hook, live, schema, scores, trends, view

    app.add_typer(scores.app, name="scores", help="Browse and push stored scores.")
    app.add_typer(configs.app, name="configs", help="Langfuse score configs from score_configs/.")
    app.command("backfill", help="Score every finished session in a window.")(
        backfill.backfill_command
    )
    app.command("calibrate", help="Agreement with ground truth.")(calibrate.calibrate_command)
    app.command("resume-prompt", help="Write the next run's prompt.")(live.resume_prompt_command)
    app.command("assess", help="Write an orientation assessment.")(live.assess_command)
    app.command("view", help="Write (or serve) the HTML viewer of the store.")(view.view_command)
    app.command("trends", help="Per-period means, CIs and lowest sessions.")(trends.trends_command)
    app.command("schema", help="Print the scorecard JSON Schema.")(schema.schema_command)
    app.command("hook", help="Score a Claude Code session when it ends (the plugin's hook).")(
        hook.hook_command
    )


_register()


def main() -> None:
    """Console-script entry point for `scorer`."""
    freeze_at_exit()
    app(prog_name="scorer")
