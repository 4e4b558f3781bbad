"""Strip outputs and execution counts from notebooks before committing.

    python notebooks/strip_outputs.py               # strip every notebook here, in place
    python notebooks/strip_outputs.py --check       # exit 1 and name the dirty ones

Only outputs, execution counts and per-run metadata change; sources and tags stay.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat

_RUN_METADATA = ("execution", "collapsed", "scrolled")


def dirty_cells(nb: nbformat.NotebookNode) -> list[int]:
    """Indices of code cells that carry outputs or an execution count."""
    return [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]


def strip(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """Clear outputs, execution counts and per-run cell metadata (in place)."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        for key in _RUN_METADATA:
            cell.metadata.pop(key, None)
    nb.metadata.pop("widgets", None)
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="only report, change nothing")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(Path(__file__).resolve().parent.glob("*.ipynb"))
    dirty = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        if not dirty_cells(nb):
            continue
        dirty.append(path)
        if not args.check:
            nbformat.write(strip(nb), path)
    for path in dirty:
        print(f"{'has outputs' if args.check else 'stripped'}: {path}")
    return 1 if args.check and dirty else 0


if __name__ == "__main__":
    sys.exit(main())
