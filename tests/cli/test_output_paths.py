"""Where output goes (issue 33 item 8), through the real `scorer` process: errors name the
user's path, never our temp file; `-o /dev/stdout` works into a pipe and into a file; a
backfill into a store it cannot write says how to fix it before judging anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CC_PROJECTS, require
from tests.readonly import read_only


def scorer(*args: str, **kw) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "scorer"
    if not exe.exists():
        pytest.skip(f"scorer is not installed beside {sys.executable}")
    kw.setdefault("capture_output", True)
    return subprocess.run([str(exe), *args], env=os.environ.copy(), timeout=120, **kw)


@pytest.fixture
def store() -> Path:
    """A store of the real Claude Code sessions (heuristic judge)."""
    root = require(CC_PROJECTS)
    done = scorer("backfill", "--projects-root", str(root), "--judge", "heuristic", "--json")
    assert done.returncode == 0, done.stderr
    return Path(os.environ["SCORER_HOME"]) / "scores.sqlite3"


def test_an_output_error_names_the_users_file(store, tmp_path):
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "view.html"
    out.write_text("old")
    with read_only(out):
        result = scorer("view", "-o", str(out))
    assert result.returncode == 1
    assert result.stderr.decode().strip() == f"error: {out}: operation not permitted"
    assert out.read_text() == "old" and [p.name for p in out.parent.iterdir()] == ["view.html"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_export_to_dev_stdout_into_a_pipe(store, fmt):
    plain = scorer("scores", "export", "-f", fmt)
    piped = scorer("scores", "export", "-f", fmt, "-o", "/dev/stdout")
    assert piped.returncode == 0, piped.stderr
    assert piped.stdout == plain.stdout and plain.stdout.count(b"\n") >= 5
    assert b"wrote 5 runs to /dev/stdout" in piped.stderr


def test_parquet_to_dev_stdout_into_a_pipe(store):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    piped = scorer("scores", "export", "-f", "parquet", "-o", "/dev/stdout")
    assert piped.returncode == 0, piped.stderr
    table = pq.read_table(pa.BufferReader(piped.stdout))
    assert table.num_rows == 5 and "session_id" in table.column_names


@pytest.mark.parametrize("redirect", [">", ">>"])
def test_export_to_dev_stdout_into_a_file(store, tmp_path, redirect):
    out = tmp_path / "runs.csv"
    out.write_text("earlier line\n")
    exe = Path(sys.executable).parent / "scorer"
    shell = f'"{exe}" scores export -f csv -o /dev/stdout {redirect} "{out}"'
    done = subprocess.run(["bash", "-c", shell], env=os.environ.copy(), capture_output=True)
    assert done.returncode == 0, done.stderr
    expected = scorer("scores", "export", "-f", "csv").stdout.decode()
    before = "earlier line\n" if redirect == ">>" else ""
    assert out.read_text() == before + expected


def test_a_backfill_into_a_store_it_cannot_write_says_how_to_fix_it(store):
    """The store exists and reads fine, but takes no write: the backfill stops before
    discovery and judging, with the fix (not a SQLite message after the first card)."""
    before = store.read_bytes()
    with read_only(store):
        result = scorer(
            "backfill", "--projects-root", str(CC_PROJECTS), "--judge", "heuristic", "--rescore"
        )
    assert result.returncode == 1
    assert result.stderr.decode().strip() == (
        f"error: score store {store} is not writable (operation not permitted); "
        "set SCORER_HOME to a writable folder"
    )
    assert store.read_bytes() == before


def test_a_backfill_into_a_folder_it_cannot_write_says_how_to_fix_it(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("SCORER_HOME", str(home))
    with read_only(home):
        root = str(require(CC_PROJECTS))
        result = scorer("backfill", "--projects-root", root, "--judge", "heuristic")
    assert result.returncode == 1
    line = result.stderr.decode().strip()
    assert line.startswith(f"error: score store {home / 'scores.sqlite3'} is not writable (")
    assert line.endswith("; set SCORER_HOME to a writable folder") and "\n" not in line
    assert list(home.iterdir()) == []
