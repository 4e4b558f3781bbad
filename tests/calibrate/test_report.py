"""The calibration report: Markdown/HTML files, plots, the rich table."""

from __future__ import annotations

import json
import re

import pytest
from rich.console import Console

from scorer.calibrate import report
from scorer.calibrate.report import render_table, write_report
from scorer.calibrate.stats import calibrate
from scorer.errors import ConfigError
from tests.calibrate.helpers import card, label

GOAL, NUM = "goal_achievement", "output_quality"


@pytest.fixture(scope="module")
def result():
    human = [0, 1, 2, 2, 1, 0]
    judge = [0, 2, 2, 0, 1, 3]
    cards = [
        card(
            f"s{i}",
            {GOAL: j, NUM: 3 + (i % 2)},
            evidence=[10 + i],
            meta={"langfuse_url": f"https://lf.test/trace/s{i}"},
        )
        for i, j in enumerate(judge)
    ]
    cards += [card(f"s{i}", {GOAL: 1}, judge="heuristic", model=None) for i in range(6)]
    labels = [label(f"s{i}", GOAL, h) for i, h in enumerate(human)]
    labels += [label(f"s{i}", NUM, 4) for i in range(6)]
    return calibrate(cards, labels, n_boot=20, seed=0)


def test_markdown_report_with_plots(result, tmp_path):
    path = write_report(result, tmp_path / "out")
    assert path == tmp_path / "out" / "calibration.md"
    text = path.read_text()
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    # bias + per (group, dimension): confusion and distribution; 3 groups x dims = 3 agreements
    assert len(result.agreements) == 3
    assert len(images) == 1 + 2 * 3
    for rel in images:
        assert (path.parent / rel).is_file() and (path.parent / rel).stat().st_size > 1000
    assert "| llm/claude-sonnet@v1 | goal_achievement | 6 |" in text
    # the largest disagreement (s3: judge failed vs human complete) leads, with evidence + link
    section = text.split("## goal_achievement — llm/claude-sonnet@v1")[1]
    first_row = section.split("Largest disagreements:")[1].strip().splitlines()[2]
    # |diff|: s5 3 (exceeded vs failed), s3 2, s1 1; the others agree
    assert first_row.startswith(
        "| s5 | exceeded | failed | 3.0 | #15 “quote 15” | [Langfuse](https://lf.test/trace/s5) |"
    )
    assert "| s3 | failed | complete | -2.0 |" in section
    data = json.loads((path.parent / "calibration.json").read_text())
    assert data["agreements"][0]["judge"] == "heuristic"


def test_html_report(result, tmp_path):
    path = write_report(result, tmp_path, fmt="html")
    text = path.read_text()
    assert path.suffix == ".html" and text.startswith("<!doctype html>")
    srcs = re.findall(r"<img src='([^']+)'", text)
    assert srcs and all((tmp_path / s).is_file() for s in srcs)
    assert "<a href='https://lf.test/trace/s5'>Langfuse</a>" in text
    assert "<table>" in text


def test_tables_only_without_matplotlib(result, tmp_path, monkeypatch):
    monkeypatch.setattr(report, "_pyplot", lambda: None)
    text = write_report(result, tmp_path).read_text()
    assert "matplotlib is not installed" in text
    assert "![" not in text
    assert not (tmp_path / "plots").exists()


def test_bad_format(result, tmp_path):
    with pytest.raises(ConfigError, match="unknown report format 'pdf'"):
        write_report(result, tmp_path, fmt="pdf")


def test_render_table(result):
    table = render_table(result)
    assert table.row_count == 3
    console = Console(width=200, record=True)
    console.print(table)
    out = console.export_text()
    assert "heuristic/-@v1" in out and "output_quality" in out
    assert "—" in out  # the constant heuristic has no correlation
