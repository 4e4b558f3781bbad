"""Shared helpers for the benchmark scripts: the real session, synthetic copies, timing.

Not a test module: the scripts print numbers next to the issue's goals. Synthetic
sessions are written into a temp dir per run and never committed.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPOTTER = "claude-code-projects/-home-USER-projects-spotter"
BIG_NAME = "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ID_RE = re.compile(r"\b(toolu_|msg_|req_)([A-Za-z0-9]+)")


def shared_data() -> Path:
    """The real data folder: `../shared/data` beside the checkout (CI), or one level up."""
    for base in (REPO / ".." / "shared" / "data", REPO / ".." / ".." / "shared" / "data"):
        if base.resolve().is_dir():
            return base.resolve()
    sys.exit("real data not found: expected ../shared/data beside the checkout")


def big_session() -> Path:
    """The real 2.7 MB Claude Code transcript the goals are stated on."""
    return shared_data() / SPOTTER / BIG_NAME


def make_synthetic(src: Path, dest: Path, copies: int, session_id: str | None = None) -> Path:
    """Write `copies` copies of `src` as one session under `dest`, each with fresh ids.

    Event uuids, message / tool-use / request ids are renewed per copy, so the parser
    sees `copies` times as many distinct events (no dedupe shortcut); the session id
    stays one id (`session_id`, default the source's).
    """
    lines = src.read_text(encoding="utf-8").splitlines()
    old_sid = src.stem
    new_sid = session_id or old_sid
    out = dest / f"{new_sid}.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for k in range(copies):
            fresh: dict[str, str] = {old_sid: new_sid}

            def new_uuid(m: re.Match[str], fresh: dict[str, str] = fresh) -> str:
                return fresh.setdefault(m.group(0), str(uuid.uuid4()))

            def new_id(m: re.Match[str], k: int = k) -> str:
                return f"{m.group(1)}{m.group(2)}c{k}"

            for line in lines:
                fh.write(_ID_RE.sub(new_id, _UUID_RE.sub(new_uuid, line)) + "\n")
    return out


def peak_rss_mb() -> float:
    """This process's peak resident set size in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed_run(cmd: Sequence[str], env: dict[str, str] | None = None) -> tuple[float, str]:
    """Run a command to completion; its wall seconds and stdout (raises on failure)."""
    began = time.perf_counter()
    proc = subprocess.run(
        list(cmd), capture_output=True, text=True, cwd=REPO, env=env or os.environ.copy()
    )
    wall = time.perf_counter() - began
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return wall, proc.stdout


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def verdict(value: float, goal: float) -> str:
    """`met` when `value <= goal`, else `MISSED`."""
    return "met" if value <= goal else "MISSED"


def row(metric: str, value: str, goal: str, ok: str = "") -> str:
    """One aligned output line: metric, measured value, goal, verdict."""
    return f"  {metric:<52} {value:>16}   goal {goal:<10} {ok}"


def load_note() -> str:
    """The machine's load average, printed with the figures (shared machine)."""
    one, five, _ = os.getloadavg()
    return f"load average {one:.1f} / {five:.1f} on {os.cpu_count()} cores"
