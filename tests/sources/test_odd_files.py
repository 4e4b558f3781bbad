"""Odd files never crash or hang a source or discovery: the bad line or file is skipped
and reported, the rest is used."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scorer.errors import SourceError
from scorer.jobs.discover_local import discover_local
from scorer.sources import resolve
from scorer.sources._jsonl import read_jsonl
from scorer.sources.claude_code import ClaudeCodeSource
from tests.conftest import REPO

DEMO = REPO / "examples" / "demo-session.jsonl"
DEEP = ("[" * 10_000 + "]" * 10_000).encode()
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


DEMO_ID = b"0d3e5f1a-7c2b-4e8d-9a61-5b4c3d2e1f00"


def _demo_lines(session_id: str | None = None) -> list[bytes]:
    """The demo transcript's lines, under another session id if given."""
    data = DEMO.read_bytes()
    return (data.replace(DEMO_ID, session_id.encode()) if session_id else data).splitlines()


def _write(path: Path, lines: list[bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_line_nested_10000_deep_is_skipped_and_counted(tmp_path: Path) -> None:
    lines = _demo_lines()
    deep_record = b'{"type": "user", "x": ' + DEEP + b"}"
    medium = b'{"type": "user", "x": ' + b"[" * 600 + b"]" * 600 + b"}"  # loads, too deep to walk
    path = _write(tmp_path / "deep.jsonl", [lines[0], DEEP, deep_record, medium, *lines[1:]])
    session = ClaudeCodeSource(path).load()
    demo = ClaudeCodeSource(DEMO).load()
    assert session.n_events == demo.n_events
    assert session.extra["bad_lines"] == 3
    assert any("3 of" in w and "nested too deeply" in w for w in session.extra["warnings"])
    assert resolve(str(path)).load().n_events == demo.n_events  # sniffing survives it too


def test_deep_first_lines_do_not_break_sniffing(tmp_path: Path) -> None:
    path = _write(tmp_path / "s.jsonl", [DEEP, DEEP, *_demo_lines()])
    assert resolve(str(path)).load().n_events == ClaudeCodeSource(DEMO).load().n_events


def test_truncated_and_non_utf8_lines_are_counted(tmp_path: Path) -> None:
    lines = _demo_lines()
    prompt = json.loads(lines[1])
    prompt["message"]["content"] = "caf\u00e9 cr\u00e8me: fix the build"
    latin1 = json.dumps(prompt, ensure_ascii=False).encode("latin-1")
    path = _write(tmp_path / "t.jsonl", [lines[0], latin1, *lines[2:], lines[3][:40]])
    parsed = read_jsonl(path)
    assert (parsed.bad_lines, parsed.non_utf8_lines) == (1, 1)
    session = ClaudeCodeSource(path).load()
    assert session.events[0].text.startswith("caf\ufffd cr\ufffdme")
    warnings = " ".join(session.extra["warnings"])
    assert "1 of 34 lines skipped" in warnings and "1 lines were not UTF-8" in warnings


def test_latin1_file_is_decoded_with_replacement(tmp_path: Path) -> None:
    text = DEMO.read_text().replace("median()", "m\u00e9dian()")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(text.encode("latin-1", errors="replace"))  # `→` becomes `?`
    session = resolve(str(path)).load()
    assert session.n_events == ClaudeCodeSource(DEMO).load().n_events
    assert "m\ufffddian()" in session.events[0].text
    assert any("not UTF-8" in w for w in session.extra["warnings"])


def test_fifo_is_refused_without_opening_it(tmp_path: Path) -> None:
    fifo = tmp_path / "live.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(SourceError, match="not a regular file"):
        resolve(str(fifo))
    with pytest.raises(SourceError, match="not a regular file"):
        read_jsonl(fifo)


def _project_root(tmp_path: Path) -> Path:
    root = tmp_path / "projects"
    old = (NOW - timedelta(hours=5)).timestamp()
    for project, sid in (("-a", "good-1"), ("-b", "good-2")):
        path = _write(root / project / f"{sid}.jsonl", _demo_lines(sid))
        os.utime(path, (old, old))
    (root / "-a" / "dangling.jsonl").symlink_to(root / "-a" / "gone.jsonl")
    (root / "-a" / "loop1.jsonl").symlink_to(root / "-a" / "loop2.jsonl")
    (root / "-a" / "loop2.jsonl").symlink_to(root / "-a" / "loop1.jsonl")
    os.mkfifo(root / "-b" / "fifo.jsonl")
    return root


def test_discovery_skips_and_reports_symlinks_and_fifos(tmp_path: Path) -> None:
    root = _project_root(tmp_path)
    found = discover_local(root, now=NOW)
    assert [r.session_id for r in found.sessions] == ["good-1", "good-2"]
    skipped = " ".join(found.skipped_files)
    for name in ("dangling.jsonl", "loop1.jsonl", "loop2.jsonl", "fifo.jsonl"):
        assert name in skipped
    assert "not a regular file" in skipped
    assert len(found.notes()) == 4


def test_same_session_id_in_two_projects_is_one_session(tmp_path: Path) -> None:
    root = _project_root(tmp_path)
    newer = _write(root / "-b" / "good-1.jsonl", _demo_lines("good-1"))
    t = (NOW - timedelta(hours=2)).timestamp()
    os.utime(newer, (t, t))
    found = discover_local(root, now=NOW)
    assert sorted(r.session_id for r in found.sessions) == ["good-1", "good-2"]
    ref = next(r for r in found.sessions if r.session_id == "good-1")
    assert ref.origin == str(newer)
    assert len(found.clashes) == 1 and "good-1" in found.clashes[0]


def test_future_mtime_is_clamped_to_now_not_active_forever(tmp_path: Path) -> None:
    root = _project_root(tmp_path)
    future = (NOW + timedelta(days=365)).timestamp()
    os.utime(root / "-b" / "good-2.jsonl", (future, future))
    found = discover_local(root, now=NOW)
    ref = next(r for r in found.sessions if r.session_id == "good-2")
    assert ref.last_activity == NOW
    assert found.active == [] and len(found.future_mtime) == 1


def test_session_id_in_two_projects_is_reported_by_the_resolver(tmp_path: Path) -> None:
    root = tmp_path / "projects"
    for project in ("-a", "-b"):
        _write(root / project / "abcdef12-0000-4000-8000-000000000000.jsonl", _demo_lines())
    with pytest.raises(SourceError, match=r"is in 2 project folders \(-a, -b\)"):
        resolve("abcdef12-0000-4000-8000-000000000000", projects_root=root)


def test_langfuse_io_too_deep_stays_a_string() -> None:
    from scorer.sources.langfuse import parse_io

    deep = "[" * 10_000 + "]" * 10_000
    medium = "[" * 500 + "]" * 500
    assert parse_io(deep) == deep
    assert parse_io(medium) == medium
    assert parse_io('{"a": [1, 2]}') == {"a": [1, 2]}


def test_lone_surrogates_are_replaced_so_every_writer_can_encode(tmp_path: Path) -> None:
    from scorer.prepare.render import render_timeline

    lines = _demo_lines()
    prompt = json.loads(lines[1])
    prompt["message"]["content"] = "lone SURROGATE here, and a pair: PAIR"
    raw = json.dumps(prompt).encode()
    raw = raw.replace(b"SURROGATE", b"\\ud800").replace(b"PAIR", b"\\ud83d\\ude00")
    path = _write(tmp_path / "s.jsonl", [lines[0], raw, *lines[2:]])
    session = ClaudeCodeSource(path).load()
    assert session.events[0].text == "lone \ufffd here, and a pair: \U0001f600"
    render_timeline(session).encode("utf-8")  # would raise on a lone surrogate
    session.model_dump_json().encode("utf-8")
    assert any("not UTF-8" in w for w in session.extra["warnings"])
