"""The installed package's version, read once (kept apart so modules need not import `scorer`)."""

from __future__ import annotations

from functools import cache


@cache
def package_version() -> str:
    """The distribution's version, or 0.0.0 when running from a checkout without install."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("session-scorer")
    except PackageNotFoundError:
        return "0.0.0"
