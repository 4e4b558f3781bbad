"""A snapshot of the machine a live session runs on (psutil)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path

import psutil
from pydantic import BaseModel

_GIB = 1024**3


class Resources(BaseModel):
    """Load, memory, disk and uptime at one moment."""

    taken_at: datetime
    load_1: float
    load_5: float
    load_15: float
    cores: int
    memory_total_bytes: int
    memory_available_bytes: int
    memory_used_percent: float
    disk_path: str
    """The existing directory whose filesystem was measured."""
    disk_total_bytes: int
    disk_free_bytes: int
    disk_used_percent: float
    uptime_seconds: float

    def one_line(self) -> str:
        """A short line for a judge prompt."""
        return (
            f"load {self.load_1:.2f}/{self.load_5:.2f}/{self.load_15:.2f} on {self.cores} cores; "
            f"memory {self.memory_available_bytes / _GIB:.1f}/{self.memory_total_bytes / _GIB:.1f}"
            f" GiB free ({self.memory_used_percent:.0f}% used); "
            f"disk {self.disk_used_percent:.0f}% used at {self.disk_path} "
            f"({self.disk_free_bytes / _GIB:.1f} GiB free); up {_duration(self.uptime_seconds)}"
        )


def _duration(seconds: float) -> str:
    minutes = int(seconds // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    return f"{days}d {hours}h" if days else f"{hours}h {minutes}m"


def _existing(path: Path) -> Path:
    """`path` or its nearest existing parent (the filesystem it would live on)."""
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def snapshot(path: Path) -> Resources:
    """Measure load, memory, the disk holding `path`, and uptime now.

    Args:
        path: Any path on the filesystem of interest (a missing path uses its parent).
    """
    where = _existing(Path(path))
    load_1, load_5, load_15 = os.getloadavg()
    memory = psutil.virtual_memory()
    disk = psutil.disk_usage(str(where))
    return Resources(
        taken_at=datetime.now(UTC),
        load_1=load_1,
        load_5=load_5,
        load_15=load_15,
        cores=psutil.cpu_count() or 1,
        memory_total_bytes=memory.total,
        memory_available_bytes=memory.available,
        memory_used_percent=memory.percent,
        disk_path=str(where),
        disk_total_bytes=disk.total,
        disk_free_bytes=disk.free,
        disk_used_percent=disk.percent,
        uptime_seconds=max(0.0, time.time() - psutil.boot_time()),
    )
