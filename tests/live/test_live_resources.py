"""Resource snapshot sanity."""

from __future__ import annotations

import os
import re

from scorer.live.resources import snapshot


def test_snapshot_is_sane(tmp_path):
    r = snapshot(tmp_path)
    assert r.cores == os.cpu_count()
    assert r.load_1 >= 0 and r.load_15 >= 0
    assert 0 < r.memory_available_bytes <= r.memory_total_bytes
    assert 0 <= r.memory_used_percent <= 100
    assert 0 <= r.disk_used_percent <= 100 and r.disk_free_bytes <= r.disk_total_bytes
    assert r.disk_path == str(tmp_path)
    assert r.uptime_seconds > 0
    line = r.one_line()
    assert re.match(r"load \d+\.\d\d/\d+\.\d\d/\d+\.\d\d on \d+ cores; memory ", line)
    assert f"at {tmp_path}" in line and "\n" not in line


def test_missing_path_uses_existing_parent(tmp_path):
    r = snapshot(tmp_path / "not" / "yet")
    assert r.disk_path == str(tmp_path)
