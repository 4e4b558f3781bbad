"""The `scorer` console script: `scorer hook` is dispatched before anything else loads.

A Claude Code hook must answer within a second, and importing the umbrella app
(`scorer.cli.main`, which registers every command group: the trends and Langfuse imports
alone take over a second) would spend that on commands the hook never runs. The bare
`scorer hook` with a payload on stdin (what the plugin runs) skips typer and pydantic
too (`scorer.jobs.hook.start`): about 0.05 s of CPU. `scorer --version` alone is answered
here as well (typer and rich cost 0.15 s more); every other command goes through the
umbrella, which imports only the module of the command that runs (`scorer.cli.main`).
"""

from __future__ import annotations

import sys


def main() -> None:
    """Console-script entry point for `scorer`."""
    if sys.argv[1:] == ["hook"] and not sys.stdin.isatty():  # how the plugin calls it
        from scorer.jobs.hook.start import start_from_hook

        start_from_hook(sys.stdin.buffer.read(2_000_000))
        return
    if sys.argv[1:] == ["--version"]:  # the same line as every command's --version
        from scorer._version import package_version

        sys.stdout.write(f"session-scorer {package_version()}\n")
        return
    if sys.argv[1:2] == ["hook"]:  # options, --help: the typer command, still without the rest
        from scorer.cli.hook import main as hook_main

        hook_main(sys.argv[2:])
        return
    from scorer.cli.main import main as umbrella

    umbrella()


if __name__ == "__main__":  # `python -m scorer.cli.entry` (the plugin's fallback)
    main()
