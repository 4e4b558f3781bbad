"""Locate the bundled data folders (`prompts/`, `score_configs/`, `examples/`)."""

from __future__ import annotations

from pathlib import Path

_PKG = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder `name` from the source checkout, or the copy packed into the wheel."""
    for candidate in (_PKG.parent / name, _PKG / "_data" / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"bundled folder {name!r} not found next to {_PKG}")
