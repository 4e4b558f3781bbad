"""Option checks shared by the commands: a bad value is one red line and exit 2.

Use them as typer callbacks, e.g. `typer.Option(callback=non_negative)`; typer hands the
callback the option itself, so the message names the flag the user typed.
"""

from __future__ import annotations

from datetime import datetime

import typer

from scorer.cli._common import fail

EXIT_USAGE = 2


def usage_error(message: str) -> typer.Exit:
    """Print one red line on stderr and return the Exit (code 2) to raise."""
    return fail(message, EXIT_USAGE)


def _flag(param: typer.CallbackParam) -> str:
    return max(param.opts, key=len) if param.opts else str(param.name)


def _number(value: float) -> str:
    return f"{value:g}"


def non_negative(param: typer.CallbackParam, value: float | None) -> float | None:
    """Reject a negative count, amount or duration."""
    if value is not None and value < 0:
        raise usage_error(f"{_flag(param)} must not be negative, got {_number(value)}")
    return value


def positive(param: typer.CallbackParam, value: float | None) -> float | None:
    """Reject zero or a negative value where zero means nothing sensible (a budget)."""
    if value is not None and value <= 0:
        raise usage_error(f"{_flag(param)} must be greater than 0, got {_number(value)}")
    return value


def unit_interval(param: typer.CallbackParam, value: float | None) -> float | None:
    """Accept only 0..1 (an overall score threshold)."""
    if value is not None and not 0 <= value <= 1:
        raise usage_error(f"{_flag(param)} must be between 0 and 1, got {_number(value)}")
    return value


def in_range(low: int, high: int):
    """A callback accepting only `low..high` (a chunk budget, an overlap)."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and not low <= value <= high:
            raise usage_error(f"{_flag(param)} must be between {low:,} and {high:,}, got {value:,}")
        return value

    return check


def check_window(start: datetime | None, end: datetime | None) -> None:
    """`--from` must come before `--to`.

    Raises:
        typer.Exit: With code 2 after printing one line.
    """
    if start is not None and end is not None and end <= start:
        raise usage_error(
            f"--to {end.isoformat()} is not after --from {start.isoformat()}: the window is empty"
        )
