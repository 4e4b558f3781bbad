"""`write_atomic`: a whole file or nothing, and a device or FIFO is written to, not replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scorer._fs import write_atomic
from scorer.errors import ConfigError
from tests.readonly import read_only


def test_a_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "out.html"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two" and [p.name for p in path.parent.iterdir()] == ["out.html"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()), daemon=True)
    reader.start()
    write_atomic(fifo, "through the pipe")
    reader.join(timeout=10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still a FIFO: `-o /dev/null` stays a device


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_nobody_reads_is_refused_not_waited_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import scorer._fs

    monkeypatch.setattr(scorer._fs, "PIPE_WAIT_SECONDS", 0.2)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(ConfigError, match="named pipe nobody reads"):
        write_atomic(fifo, "lost")
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_an_error_names_the_users_file_never_the_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "view.html"
    path.write_text("before")
    with read_only(path), pytest.raises(PermissionError) as caught:
        write_atomic(path, "after")
    assert caught.value.filename == str(path) and caught.value.filename2 is None
    assert ".tmp" not in str(caught.value)
    assert path.read_text() == "before" and [p.name for p in tmp_path.iterdir()] == ["view.html"]


def test_a_folder_that_takes_no_file_is_named_as_the_users_path(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    with read_only(folder), pytest.raises(PermissionError) as caught:
        write_atomic(folder / "report.md", "text")
    assert caught.value.filename == str(folder / "report.md")
    assert ".tmp" not in str(caught.value) and list(folder.iterdir()) == []


_WRITE = """
import sys
from pathlib import Path
from scorer._fs import write_atomic
print("printed first", flush=False)
write_atomic(Path(sys.argv[1]), "x" * 200_000 + "end\\n")
"""


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_into_a_pipe_is_written_through(name: str) -> None:
    """`-o /dev/stdout | cmd`: the pipe is this process's own descriptor (its path in
    /proc names no file); 200 kB is more than a pipe holds, so the writes block."""
    if not Path(name).exists():
        pytest.skip(f"{name} does not exist here")
    proc = subprocess.run(
        [sys.executable, "-c", _WRITE, name], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "printed first\n" + "x" * 200_000 + "end\n"


@pytest.mark.parametrize("mode", ["w", "a"])
def test_dev_stdout_into_a_file_keeps_the_shells_redirection(tmp_path: Path, mode: str) -> None:
    """`> out` writes the file, `>> out` appends to it: the descriptor is written, the
    file is neither reopened nor replaced."""
    out = tmp_path / "out.txt"
    out.write_text("kept\n")
    with out.open(mode) as fh:
        proc = subprocess.run(
            [sys.executable, "-c", _WRITE, "/dev/stdout"], stdout=fh, stderr=subprocess.PIPE
        )
    assert proc.returncode == 0, proc.stderr
    before = "kept\n" if mode == "a" else ""
    assert out.read_text() == before + "printed first\n" + "x" * 200_000 + "end\n"
