"""Files and folders nobody may change, for the tests of write errors.

As root (CI containers) permission bits change nothing, so `chattr +i` makes the path
immutable; otherwise a folder loses its write bits. A file can only be made immutable
(a rename onto a read-only file in a writable folder succeeds): without root the test
skips.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def read_only(path: Path) -> Iterator[Path]:
    """`path` (a file or a folder) unchangeable inside the block; restored after it."""
    if os.geteuid() == 0:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is not installed (root ignores permission bits)")
        made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
        if made.returncode != 0:
            pytest.skip(f"chattr +i failed here: {made.stderr.strip()}")
        try:
            yield path
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        return
    if not path.is_dir():
        pytest.skip("a read-only file needs chattr, and chattr needs root")
    mode = stat.S_IMODE(path.stat().st_mode)
    path.chmod(0o555)
    try:
        yield path
    finally:
        path.chmod(mode)
