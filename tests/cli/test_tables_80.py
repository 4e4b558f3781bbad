"""Tables at 80 columns on a pipe (CI logs): nothing cut to `he…`, ids as unique prefixes
next to their project, full dates, every statistic readable."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scorer.calibrate.report import STATS, format_stat
from scorer.cli.main import app
from scorer.cli.tables import short_ids
from tests.jobs.helpers import transcript_lines

runner = CliRunner()
NARROW = {"COLUMNS": "80"}
PROJECT = "-home-dev-proj"


def write_sessions(root: Path, n: int) -> list[str]:
    folder = root / PROJECT
    folder.mkdir(parents=True)
    when = datetime.now(UTC) - timedelta(hours=3)
    ids = [
        str(uuid.UUID(int=((i + 1) * 0x9E3779B97F4A7C15_F39CC0605CEDC834) % (1 << 128)))
        for i in range(n)
    ]
    for sid in ids:
        path = folder / f"{sid}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in transcript_lines(sid, when)) + "\n")
        os.utime(path, (when.timestamp(), when.timestamp()))
    return ids


@pytest.fixture
def scored(tmp_path) -> list[str]:
    root = tmp_path / "projects"
    ids = write_sessions(root, 6)
    result = runner.invoke(
        app, ["backfill", "--projects-root", str(root), "--judge", "heuristic", "--json"]
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["scored"] == 6, result.output
    return ids


def assert_fits_80(text: str) -> None:
    assert "…" not in text, text
    assert all(len(line) <= 80 for line in text.splitlines()), text


def test_short_ids_are_unique_prefixes_of_at_least_8():
    ids = ["4eee1c72-32da", "4eee1c72-99aa", "a0c60ca0-cefc-4d59-a38f", "short", "abcdefghij"]
    short = short_ids(ids)
    assert short["a0c60ca0-cefc-4d59-a38f"] == "a0c60ca0"
    assert short["4eee1c72-32da"] == "4eee1c72-3" and short["4eee1c72-99aa"] == "4eee1c72-9"
    assert short["short"] == "short" and short["abcdefghij"] == "abcdefghij"  # kept whole
    assert len(set(short.values())) == len(ids)


def test_scores_list_at_80_columns_shows_titles_prefixes_projects_and_dates(scored):
    result = runner.invoke(app, ["scores", "list"], env=NARROW)
    assert result.exit_code == 0, result.output
    assert_fits_80(result.stdout)
    today = datetime.now(UTC).strftime("%Y-%m-%d")
    assert result.stdout.count(today) == 6
    for sid in scored:
        assert sid[:8] in result.stdout and sid not in result.stdout
        shown = runner.invoke(app, ["scores", "show", sid[:8], "--json"])
        assert json.loads(shown.stdout)["session_id"] == sid  # the prefix can be typed back
    listed = json.loads(runner.invoke(app, ["scores", "list", "--json"]).stdout)
    by_id = {run["session_id"]: run for run in listed}
    for line_pair in zip(*[iter(result.stdout.splitlines()[5:17])] * 2, strict=False):
        sid = next(s for s in scored if line_pair[1].split()[0] == s[:8])
        assert line_pair[0].strip().startswith(by_id[sid]["title"])  # the title first
        assert line_pair[1].split()[2] == by_id[sid]["session"]["project"]  # id · project
    wide = runner.invoke(app, ["scores", "list"], env={"COLUMNS": "200"})
    assert all(sid in wide.stdout for sid in scored) and "…" not in wide.stdout


def test_calibration_table_at_80_columns_keeps_every_statistic(scored, tmp_path):
    labels = tmp_path / "labels.csv"
    rows = ["session_id,dimension,value"]
    for i, sid in enumerate(scored):
        rows.append(f"{sid},goal_achievement,{['failed', 'partial', 'complete'][i % 3]}")
        rows.append(f"{sid},tool_efficiency,{1 + i % 5}")
    labels.write_text("\n".join(rows) + "\n")
    args = ["calibrate", "--ground-truth", str(labels), "--n-boot", "0", "--judge", "heuristic"]
    args += ["--out", str(tmp_path / "report")]
    table = runner.invoke(app, args, env=NARROW)
    assert table.exit_code == 0, table.output
    assert_fits_80(table.stdout)
    data = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    group = data["agreements"][0]
    assert f"{group['judge']}/-@{group['prompt_version']}" in table.stdout
    for header, _ in STATS:
        assert header.split(" ")[0] in table.stdout
    for a in data["agreements"]:
        line = next(ln for ln in table.stdout.splitlines() if a["dimension"] in ln)
        cells = line.split()
        assert cells[0] == a["dimension"] and cells[1] == str(a["n"])
        assert cells[2] == format_stat(a["exact_agreement"])


def test_trends_at_80_columns_split_the_means_instead_of_cutting_them(scored):
    from scorer.results.rows import SHORT_NAMES
    from scorer.results.trends import TREND_SCORES

    result = runner.invoke(app, ["trends", "--lowest", "1"], env=NARROW)
    assert result.exit_code == 0, result.output
    assert_fits_80(result.stdout)
    for name in TREND_SCORES:
        assert SHORT_NAMES.get(name, name) in result.stdout
    assert result.stdout.count("┃ week") == 3  # two means tables and the lowest sessions
    wide = runner.invoke(app, ["trends", "--lowest", "1"], env={"COLUMNS": "200"})
    assert wide.stdout.count("┃ week") == 2
