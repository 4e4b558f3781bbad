"""The viewer page without a browser: self-contained, escaped, served on loopback only."""

from __future__ import annotations

import base64
import gzip
import json
import re
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.models import Session, SessionInfo, SourceKind, langfuse_link
from scorer.sinks.store import ScoreStore
from scorer.view.serve import PageServer
from tests.conftest import BIG_SESSION, require
from tests.results.helpers import fill_store
from tests.sinks.cards import make_card

runner = CliRunner()


def _view(tmp_path: Path, *args: str) -> str:
    out = tmp_path / "v.html"
    result = runner.invoke(app, ["view", "-o", str(out), *args])
    assert result.exit_code == 0, result.stderr
    return out.read_text(encoding="utf-8")


def _data(html: str) -> dict:
    match = re.search(
        r'<script type="application/json" id="scorer-data">(.*?)</script>', html, re.S
    )
    assert match
    return json.loads(match.group(1))


def test_page_is_self_contained(clean_env, tmp_path: Path) -> None:
    fill_store()
    html = _view(tmp_path)
    assert not re.search(r"<(script|img|link|iframe)[^>]+(src|href)=", html, re.I)
    assert "@import" not in html and "url(" not in html
    assert "default-src 'none'" in html  # the CSP forbids any fetch
    data = _data(html)
    assert len(data["runs"]) == 7
    card = next(r["card"] for r in data["runs"] if r["card"]["status"] == "scored")
    assert card["schema_version"] == 1 and "goal_achievement" in card["scores"]
    assert len(re.findall(r'type="application/gzip\+base64"', html)) == 6


def test_hostile_text_cannot_break_out_of_the_data(clean_env, tmp_path: Path) -> None:
    evil = "</script><script>alert(1)</script><!--"
    with ScoreStore() as store:
        store.save(make_card("x", summary=evil, session=SessionInfo(project=evil)))
    html = _view(tmp_path)
    assert evil not in html
    assert _data(html)["runs"][0]["card"]["summary"] == evil


def test_no_timelines_leaves_them_out(clean_env, tmp_path: Path) -> None:
    fill_store()
    html = _view(tmp_path, "--no-timelines")
    assert "application/gzip+base64" not in html
    assert {r["timeline"] for r in _data(html)["runs"]} == {None}


def test_filters_and_empty_wording(clean_env, tmp_path: Path) -> None:
    fill_store()
    data = _data(_view(tmp_path, "--project", "alpha", "--latest"))
    assert {r["card"]["session"]["project"] for r in data["runs"]} == {"alpha"}
    html = _view(tmp_path, "--project", "nope")
    assert "has no scored sessions matching the filters" in html


def test_empty_store(clean_env, tmp_path: Path) -> None:
    html = _view(tmp_path)
    assert "has no scored sessions yet" in html and _data(html)["runs"] == []


def test_real_session_timeline_is_in_the_page(clean_env, tmp_path: Path) -> None:
    session = require(BIG_SESSION)
    scored = runner.invoke(app, ["session", str(session), "--judge", "heuristic", "--json"])
    assert scored.exit_code == 0, scored.stderr
    card = json.loads(scored.stdout)
    assert card["session"]["project"] and card["session"]["started_at"].startswith("2026-02-12")
    html = _view(tmp_path)
    (run,) = _data(html)["runs"]
    blob = re.search(rf'id="{run["timeline"]}">([^<]+)<', html).group(1)
    events = json.loads(gzip.decompress(base64.b64decode(blob)))
    assert len(events) == card["session"]["n_events"] == 684
    cited = {e["event"] for s in card["scores"].values() for e in s["evidence"]}
    assert cited <= {e[0] for e in events}  # every evidence link has its event


def test_langfuse_link_encodes_the_session_id() -> None:
    origin = "https://cloud.langfuse.com/project/p1/sessions/a b/c?"
    assert (
        langfuse_link(origin, "a b/c?")
        == "https://cloud.langfuse.com/project/p1/sessions/a%20b%2Fc%3F"
    )
    assert langfuse_link("langfuse:abc", "abc") is None
    session = Session(session_id="s#1", source=SourceKind.LANGFUSE, origin=origin)
    assert SessionInfo.of(session).langfuse_url.endswith("/sessions/s%231")


def test_serve_is_loopback_only_and_serves_the_page(tmp_path: Path) -> None:
    page = tmp_path / "v.html"
    page.write_text("<html>hello</html>")
    with PageServer(page) as server:
        assert server.url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(server.url, timeout=5) as resp:
            assert resp.read() == b"<html>hello</html>"
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(server.url + "etc/passwd", timeout=5)


def test_view_serve_end_to_end(clean_env, tmp_path: Path) -> None:
    """`scorer view --serve --no-open` writes the page and serves it on 127.0.0.1."""
    import os
    import subprocess
    import sys

    fill_store()
    out = tmp_path / "served.html"
    scorer = Path(sys.executable).with_name("scorer")
    proc = subprocess.Popen(
        [str(scorer), "view", "-o", str(out), "--serve", "--no-open"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "300"},
    )
    try:
        url = None
        for line in proc.stderr:
            if line.startswith("serving "):
                url = line.split()[1]
                break
        assert url and url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url, timeout=10) as resp:
            assert resp.read() == out.read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_trend_axis_labels_carry_the_year_where_it_starts_and_changes() -> None:
    from scorer.view.plots import _axis_labels

    weeks = ["2026-W45", "2026-W52", "2026-W53", "2027-W01", "2027-W07"]
    assert _axis_labels(weeks) == ["2026-W45", "W52", "W53", "2027-W01", "W07"]
    assert _axis_labels(["2026-12-31", "2027-01-01", "2027-01-02"]) == [
        "2026-12-31",
        "2027-01-01",
        "01-02",
    ]


def test_page_embeds_each_runs_week_and_the_event_labels(clean_env, tmp_path: Path) -> None:
    from datetime import UTC, datetime

    start = datetime(2026, 12, 31, 23, tzinfo=UTC)  # ISO week 2026-W53
    with ScoreStore() as store:
        store.save(make_card("w", session=SessionInfo(started_at=start)))
    data = _data(_view(tmp_path))
    assert data["runs"][0]["week"] == "2026-W53"
    assert data["event_labels"]["tool_result"] == ["↳ result"]
    assert "<title>session-scorer — 1 run</title>" in _view(tmp_path)
