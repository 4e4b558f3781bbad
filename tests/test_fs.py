"""`write_atomic`: a whole file or nothing, and a device or FIFO is written to, not replaced."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from scorer._fs import write_atomic
from scorer.errors import ConfigError


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
