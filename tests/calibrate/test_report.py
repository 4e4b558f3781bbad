"""The calibration report: Markdown/HTML files, plots, the rich table."""

from __future__ import annotations

import base64
import json
import re
import tomllib
from html.parser import HTMLParser

import pytest
from rich.console import Console

from scorer.calibrate import plots, report
from scorer.calibrate.report import render_table, write_report
from scorer.calibrate.stats import calibrate
from scorer.errors import ConfigError
from tests.calibrate.helpers import card, label
from tests.conftest import REPO

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


class _Refs(HTMLParser):
    """Every src/href in a page, and the text of its <dt> elements."""

    def __init__(self) -> None:
        super().__init__()
        self.srcs: list[str] = []
        self.hrefs: list[str] = []
        self.terms: list[str] = []
        self._in_dt = False

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.srcs += [found["src"]] if "src" in found else []
        self.hrefs += [found["href"]] if "href" in found else []
        self._in_dt = tag == "dt"

    def handle_data(self, data):
        if self._in_dt:
            self.terms.append(data)
            self._in_dt = False


def test_html_report_is_one_self_contained_file(result, tmp_path):
    path = write_report(result, tmp_path / "out", fmt="html")
    text = path.read_text()
    assert path.suffix == ".html" and text.startswith("<!doctype html>")
    assert sorted(p.name for p in path.parent.iterdir()) == ["calibration.html", "calibration.json"]
    refs = _Refs()
    refs.feed(text)
    assert len(refs.srcs) == 1 + 2 * 3  # bias + confusion and distribution per agreement
    for src in refs.srcs:
        head, _, payload = src.partition(",")
        assert head == "data:image/png;base64"
        png = base64.b64decode(payload, validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 1000
    assert refs.hrefs and all(h.startswith(("https://", "file://")) for h in refs.hrefs)
    assert '<a href="https://lf.test/trace/s5">Langfuse</a>' in text
    # the legend explains every statistic in the summary table, and the CIs
    for symbol, _ in report._STATS:
        assert symbol in refs.terms, symbol
    assert "[low, high]" in refs.terms
    assert (
        "Balanced accuracy" in text and "Krippendorff" in text and "judge is more generous" in text
    )


def test_disagreements_name_the_task_and_link_the_session(tmp_path):
    transcript = tmp_path / "t1.jsonl"
    transcript.write_text("{}\n")
    cards = [
        card("t1", {GOAL: 0}, meta={"origin": str(transcript)}),
        card("t2", {GOAL: 3}, meta={"origin": "tmux -L x: agent"}),
        card("t3", {GOAL: 2}),
    ]
    labels = [label("t1", GOAL, 2), label("t2", GOAL, 0), label("t3", GOAL, 0)]
    labels[0].meta["task_id"] = "chess-best-move"
    labels[1].meta.update(task="fix <the> parser", url="https://ci.test/runs/2")
    result = calibrate(cards, labels, n_boot=0, seed=0)
    html_text = write_report(result, tmp_path / "h", fmt="html").read_text()
    assert "<td>chess-best-move (t1)</td>" in html_text
    assert f'<a href="{transcript.as_uri()}">file</a>' in html_text
    assert "<td>fix &lt;the&gt; parser (t2)</td>" in html_text  # escaped by the template
    assert '<a href="https://ci.test/runs/2">open</a>' in html_text
    assert "<td>t3</td>" in html_text  # no task name, no link: the id and a dash
    md = write_report(result, tmp_path / "m").read_text()
    assert (
        f"| chess-best-move (t1) | failed | complete | -2.0 | — | [file]({transcript.as_uri()}) |"
        in md
    )
    assert "## Legend" in md and "- **κw**: Weighted kappa" in md


def test_plots_need_no_extra_and_leave_the_pyplot_backend_alone(result, tmp_path):
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert any(d.startswith("matplotlib") for d in deps)  # a plain install draws plots
    import matplotlib

    before = matplotlib.get_backend()
    write_report(result, tmp_path / "r", fmt="html")
    assert matplotlib.get_backend() == before


def test_tables_only_without_matplotlib(result, tmp_path, monkeypatch):
    monkeypatch.setattr(plots, "figure_class", lambda: None)
    text = write_report(result, tmp_path / "r").read_text()
    assert "matplotlib could not be imported" in text
    assert "![" not in text
    assert not (tmp_path / "r" / "plots").exists()


def test_bad_format(result, tmp_path):
    with pytest.raises(ConfigError, match="unknown report format 'pdf'"):
        write_report(result, tmp_path / "r", fmt="pdf")


def test_render_table(result):
    table = render_table(result)
    assert table.row_count == 3
    console = Console(width=200, record=True)
    console.print(table)
    out = console.export_text()
    assert "heuristic/-@v1" in out and "output_quality" in out
    assert "—" in out  # the constant heuristic has no correlation


def test_goal_probability_table_and_reliability_diagram(tmp_path):
    from tests.calibrate.test_probability import CLASS, PROB, TRUTH

    cards = [card(f"s{i}", {GOAL: c}, goal_probability=p) for i, (c, p) in enumerate(zip(CLASS, PROB, strict=True))]  # fmt: skip
    cards += [card(f"s{i}", {GOAL: c}, judge="heuristic", model=None) for i, c in enumerate(CLASS)]
    result = calibrate(cards, [label(f"s{i}", GOAL, t) for i, t in enumerate(TRUTH)], n_boot=20)
    path = write_report(result, tmp_path / "md")
    text = path.read_text()
    assert "bootstrap 20x, AUROC 2,000x (seed 0)" in text
    table = text.split("## Goal: success probability vs resolved")[1].split("## Legend")[0]
    assert "| judge | n | with p | AUROC p | AUROC class | Brier | ECE |" in table
    assert "| heuristic/-@v1 | 8 | 0 | n/a | 0." in table and table.count("n/a") == 3
    llm_row = next(line for line in table.splitlines() if line.startswith("| llm/"))
    assert llm_row.startswith("| llm/claude-sonnet@v1 | 8 | 8 | 0.94 [")
    llm = text.split("## goal_achievement — llm/claude-sonnet@v1")[1]
    images = re.findall(r"!\[([^\]]*)\]\(([^)]+)\)", llm)
    assert [alt.split()[0] for alt, _ in images] == ["confusion", "reliability", "dist"]
    png = (path.parent / images[1][1]).read_bytes()
    assert png.startswith(b"\x89PNG") and len(png) > 1000
    heuristic = text.split("## goal_achievement — heuristic/-@v1")[1].split("## ")[0]
    assert "reliability" not in heuristic and "no card has a goal_probability" in heuristic

    html = write_report(result, tmp_path / "html", fmt="html").read_text()
    refs = _Refs()
    refs.feed(html)
    assert len(refs.srcs) == 1 + 2 * 2 + 1  # bias, confusion + dist per group, 1 reliability
    assert re.search(
        r'<img src="data:image/png;base64,[^"]+" alt="reliability goal_achievement — llm/', html
    )
    assert "<th>AUROC class</th>" in html and "AUROC p" in refs.terms and "ECE" in refs.terms

    console = Console(width=80, record=True)
    from scorer.cli.tables import calibration_view

    console.print(calibration_view(result, console))
    shown = console.export_text()
    assert "goal_probability vs resolved" in shown and "n/a" in shown and "0.94 [" in shown
    assert all(len(line) <= 80 for line in shown.splitlines())
    assert report.render_probability_table(result) is not None
