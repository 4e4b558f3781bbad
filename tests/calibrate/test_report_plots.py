"""The calibration report's plots and names (issue 33 item 9): no label cut at a plot's
edge, every count on the confusion matrix readable on its cell, and Terminal-Bench's
execution-verified outcomes never called "human"."""

from __future__ import annotations

import io
import re
from typing import ClassVar

import pytest
from matplotlib.colors import to_rgba
from matplotlib.figure import Figure
from PIL import Image

from scorer.calibrate import plots
from scorer.calibrate.ground_truth import EXECUTION, load_terminal_bench
from scorer.calibrate.report import write_report
from scorer.calibrate.stats import calibrate
from tests.calibrate.helpers import card, label
from tests.conftest import TERMINAL_BENCH, require

GOAL = "goal_achievement"
TRUTH = [0, 0, 0, 1, 1, 2, 2, 2, 2, 2, 2, 2, 0, 1]
JUDGE = [0, 1, 2, 1, 2, 2, 2, 2, 2, 2, 2, 1, 0, 2]
"""Many agreeing `complete`s: the darkest cell of the confusion matrix (it held black text)."""


def _result(annotator: str = EXECUTION, *, groups: int = 2):
    """Scorecards of two judge groups with the long names real runs have, against labels
    given by `annotator` (`execution`: Terminal-Bench's tests)."""
    cards = []
    for g in range(groups):
        model = "claude-sonnet-5-5" if g else None
        judge, version = (
            ("llm", "judge-2026-11-25.1") if g else ("heuristic", "heuristic-2026-11-25.1")
        )
        cards += [
            card(f"s{i}", {GOAL: j}, judge=judge, model=model, prompt_version=version)
            for i, j in enumerate(JUDGE)
        ]
    labels = [label(f"s{i}", GOAL, t, annotator=annotator) for i, t in enumerate(TRUTH)]
    return calibrate(cards, labels, n_boot=0, seed=0)


class _Recorded(Figure):
    """A Figure that remembers every instance, so a test can look at what was drawn."""

    made: ClassVar[list[Figure]] = []

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        _Recorded.made.append(self)


def _contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    def luminance(rgba: tuple[float, ...]) -> float:
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("groups", [1, 2])
def test_no_plot_has_anything_cut_at_its_edge(groups: int) -> None:
    """The bias plot's long judge-group labels ran off its left edge: the layout was made
    at 100 dpi and the file written at 90, where text is wider. A plot whose outermost
    pixels are all background has nothing cut."""
    drawn = plots.make_plots(_result(groups=groups))
    assert drawn is not None and {"bias"} < set(drawn)
    for key, png in drawn.items():
        image = Image.open(io.BytesIO(png)).convert("L")
        w, h = image.size
        frame = [image.getpixel((x, y)) for x in range(w) for y in (0, h - 1)]
        frame += [image.getpixel((x, y)) for y in range(h) for x in (0, w - 1)]
        assert min(frame) > 240, (key, min(frame))


def test_confusion_counts_are_readable_on_their_cells() -> None:
    _Recorded.made = []
    result = _result(groups=1)
    plots._plot_confusion(_Recorded, result.agreements[0])
    (fig,) = _Recorded.made
    (ax,) = fig.axes
    image = ax.images[0]
    checked = 0
    for text in ax.texts:
        col, row = (round(v) for v in text.get_position())
        cell = image.cmap(image.norm(result.agreements[0].confusion[row][col]))
        ratio = _contrast(to_rgba(text.get_color()), cell)
        assert ratio >= 4.5, (text.get_text(), text.get_color(), ratio)  # WCAG AA
        checked += 1
    assert checked == 16
    assert {t.get_color() for t in ax.texts} == {"black", "white"}


@pytest.mark.parametrize(
    ("rgba", "want"),
    [((1, 1, 1, 1), "black"), ((0.03, 0.19, 0.42, 1), "white"), ((0.5, 0.5, 0.5, 1), "black")],
)
def test_ink(rgba, want) -> None:
    assert plots.ink(rgba) == want


def _drawn_names(result) -> set[str]:
    _Recorded.made = []
    for a in result.agreements:
        plots._plot_confusion(_Recorded, a)
        plots._plot_distribution(_Recorded, a)
    plots._plot_bias(_Recorded, result)
    names = set()
    for fig in _Recorded.made:
        for ax in fig.axes:
            names |= {ax.get_xlabel(), ax.get_ylabel()}
            legend = ax.get_legend()
            names |= {t.get_text() for t in legend.get_texts()} if legend else set()
    return names


def test_execution_verified_outcomes_are_labelled_as_such(tmp_path) -> None:
    result = _result()
    assert {a.truth for a in result.agreements} == {"execution-verified"}
    names = _drawn_names(result)
    assert "execution-verified" in names and "mean bias (judge − execution-verified)" in names
    assert not any("human" in n for n in names), names
    html = write_report(result, tmp_path / "h", fmt="html").read_text()
    md = write_report(result, tmp_path / "m").read_text()
    for text in (html, md):
        assert "execution-verified" in text and "own tests (Terminal-Bench)" in text
        assert not re.search(r"\bhumans?\b", text), re.findall(r".{40}\bhumans?\b.{20}", text)
    assert "<th>execution-verified</th>" in html
    assert "| task (session) | judge | execution-verified | diff |" in md


def test_human_labels_stay_human_and_a_mix_is_ground_truth(tmp_path) -> None:
    human = _result("alice")
    assert {a.truth for a in human.agreements} == {"human"}
    assert "human" in _drawn_names(human)
    assert "<th>human</th>" in write_report(human, tmp_path / "h", fmt="html").read_text()
    cards = [card(f"s{i}", {GOAL: j}) for i, j in enumerate(JUDGE)]
    labels = [label(f"s{i}", GOAL, t, annotator=EXECUTION if i % 2 else "alice")
              for i, t in enumerate(TRUTH)]  # fmt: skip
    mixed = calibrate(cards, labels, n_boot=0, seed=0)
    assert mixed.agreements[0].truth == "mixed"
    assert "ground truth" in _drawn_names(mixed)
    assert "<th>ground truth</th>" in write_report(mixed, tmp_path / "x", fmt="html").read_text()


def test_real_terminal_bench_labels_are_execution_verified(tmp_path) -> None:
    labels = load_terminal_bench(require(TERMINAL_BENCH))
    assert labels and {lab.annotator for lab in labels} == {EXECUTION}
    cards = [card(lab.session_id, {GOAL: 2}) for lab in labels]
    result = calibrate(cards, labels, n_boot=0, seed=0)
    assert result.agreements[0].truth == "execution-verified"
    assert result.agreements[0].n == len(labels)
