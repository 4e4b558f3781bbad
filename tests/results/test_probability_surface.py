"""The goal probability wherever scores are read back: `scores list` and `show`, trends
(its mean per period is the expected success rate, with its count), and the CSV, JSONL
and Parquet exports (issue 31 item 2)."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta
from pathlib import Path
from statistics import mean

import pytest
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.results.rows import COLUMNS
from scorer.sinks.store import ScoreStore
from tests.results.helpers import MONDAY
from tests.sinks.cards import make_card

runner = CliRunner()
WEEK = [("p-a", 0.2), ("p-b", 0.6), ("p-c", None)]  # 2026-W45; p-c judged before p existed
NEXT = [("p-d", 0.9), ("p-e", 0.7312)]  # 2026-W46; p-e after two second opinions
OPINIONS = {
    "goal_probability_model": "2026-11-28.2",
    "first_goal_probability": 0.61,
    "judge_goal": "partial",
    "second_opinions": [
        {"kind": "sample", "p": 0.8, "judge_goal": "complete"},
        {"kind": "adversarial", "p": 0.7836, "judge_goal": "partial"},
    ],
}


def fill(path: Path | None = None) -> None:
    with ScoreStore(path) as store:
        for week, sessions in enumerate((WEEK, NEXT)):
            for i, (sid, p) in enumerate(sessions):
                started = MONDAY + timedelta(days=7 * week + i)
                card = make_card(sid, goal_probability=p, created_at=started + timedelta(hours=1))
                card.session.started_at = started
                if sid == "p-e":
                    card.meta.update(OPINIONS)
                elif p is not None:
                    card.meta["goal_probability_model"] = "2026-11-28.2"
                store.save(card)


def test_the_store_keeps_the_probability_and_lists_it(clean_env) -> None:
    fill()
    with ScoreStore() as store:
        listed = {r.session_id: r.goal_probability for r in store.list_runs()}
        card = store.latest("p-e")
    assert listed == {"p-a": 0.2, "p-b": 0.6, "p-c": None, "p-d": 0.9, "p-e": 0.7312}
    assert card is not None and card.goal_probability == 0.7312
    assert card.meta["second_opinions"] == OPINIONS["second_opinions"]
    rows = json.loads(runner.invoke(app, ["scores", "list", "--json"]).stdout)
    assert {r["session_id"]: r["goal_probability"] for r in rows} == listed


@pytest.mark.parametrize("width", ["80", "200"])
def test_scores_list_shows_it_beside_the_goal(clean_env, width) -> None:
    fill()
    text = runner.invoke(app, ["scores", "list"], env={"COLUMNS": width}).stdout
    lines = {sid: [line for line in text.splitlines() if sid in line] for sid, _ in WEEK + NEXT}
    # wide: a `p(goal)` column; at 80 columns: `complete 0.73` in the goal column
    assert "p(goal)" in text if width == "200" else "goal · p" in text
    for sid, p in WEEK + NEXT:
        row = " ".join(lines[sid]) if width == "200" else _block(text, sid)
        assert (f"{p:.2f}" in row.split()) if p is not None else ("0." not in row.split()[-1])


def _block(text: str, sid: str) -> str:
    """The stacked layout's two lines of one run: the title line and the id line."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if sid in line)
    return lines[at - 1] + " " + lines[at]


def test_scores_show_puts_it_under_goal_achievement_with_the_opinions(clean_env) -> None:
    fill()
    text = runner.invoke(app, ["scores", "show", "p-e"], env={"COLUMNS": "120"}).stdout
    rows = [line.split("│")[1:3] for line in text.splitlines() if line.startswith("│ ")]
    named = [(name.strip(), value.strip()) for name, value in rows if name.strip()]
    assert named[:2] == [("goal_achievement", "complete"), ("goal_probability", "0.73")]
    flat = " ".join(
        " ".join(line.split("│")[3].split()) for line in text.splitlines() if line.startswith("│ ")
    )
    assert "by the fitted model 2026-11-28.2" in flat
    assert "after second opinions: sample 0.80 (complete), adversarial 0.78 (partial);" in flat
    assert "the mean with the first verdict's 0.61" in flat
    assert "goal_achievement follows from it: complete (the judge said partial)" in flat
    old = runner.invoke(app, ["scores", "show", "p-c"], env={"COLUMNS": "120"}).stdout
    assert "goal_probability" not in old  # judged before it existed: no row


def test_trends_give_the_expected_success_rate_with_its_count(clean_env) -> None:
    fill()
    data = json.loads(runner.invoke(app, ["trends", "--json"]).stdout)
    w45, w46 = data["periods"]
    assert (w45["n_sessions"], w46["n_sessions"]) == (3, 2)
    p45, p46 = w45["stats"]["goal_probability"], w46["stats"]["goal_probability"]
    assert (p45["n"], p46["n"]) == (2, 2)  # p-c has none
    assert p45["mean"] == pytest.approx(0.4) and p46["mean"] == pytest.approx(0.8156)
    assert 0 <= p45["low"] <= p45["mean"] <= p45["high"] <= 1  # clipped to 0..1
    assert {low["session_id"]: low["goal_probability"] for low in w46["lowest"]} == {
        "p-d": 0.9,
        "p-e": 0.7312,
    }
    raw = json.loads(runner.invoke(app, ["trends", "--json", "--scale", "raw"]).stdout)
    assert raw["periods"][0]["stats"]["goal_probability"]["mean"] == pytest.approx(0.4)
    for width in ("80", "200"):
        text = runner.invoke(app, ["trends"], env={"COLUMNS": width}).stdout
        assert "expected success rate" in " ".join(text.split())
        assert "p(goal)" in text and "0.40" in text and "0.82" in text
        assert text.count("n=2") == 2  # the count under each period's mean
        assert "complete 0.73" in text  # the lowest sessions' goal and probability


def test_exports_carry_the_probability_columns(clean_env, tmp_path) -> None:
    fill()
    text = runner.invoke(app, ["scores", "export", "--format", "csv"]).stdout
    rows = {r["session_id"]: r for r in csv.DictReader(io.StringIO(text))}
    names = list(COLUMNS)
    at = names.index("goal_probability")
    assert names[at : at + 5] == [
        "goal_probability",
        "first_goal_probability",
        "second_opinions",
        "goal_probability_model",
        "judge_goal",
    ]
    settled, plain, old = rows["p-e"], rows["p-a"], rows["p-c"]
    assert (settled["goal_probability"], settled["first_goal_probability"]) == ("0.7312", "0.61")
    assert (settled["second_opinions"], settled["judge_goal"]) == ("2", "partial")
    assert settled["goal_probability_model"] == "2026-11-28.2"
    # No second opinion: the first verdict's probability is the probability.
    assert (plain["goal_probability"], plain["first_goal_probability"]) == ("0.2", "0.2")
    assert (plain["second_opinions"], plain["judge_goal"]) == ("0", "")
    assert (old["goal_probability"], old["first_goal_probability"]) == ("", "")
    lines = runner.invoke(app, ["scores", "export", "--format", "jsonl"]).stdout.splitlines()
    cards = {c["session_id"]: c for c in map(json.loads, lines)}
    assert cards["p-e"]["goal_probability"] == 0.7312
    assert cards["p-e"]["meta"]["first_goal_probability"] == 0.61


def test_parquet_types_the_probability_columns(clean_env, tmp_path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    fill()
    out = tmp_path / "scores.parquet"
    assert runner.invoke(app, ["scores", "export", "-f", "parquet", "-o", str(out)]).exit_code == 0
    table = pq.read_table(out)
    assert str(table.schema.field("goal_probability").type) == "double"
    assert str(table.schema.field("second_opinions").type) == "int64"
    by_id = dict(zip(table.column("session_id").to_pylist(), table.to_pylist(), strict=True))
    assert by_id["p-e"]["second_opinions"] == 2 and by_id["p-c"]["goal_probability"] is None
    expected = mean(p for _, p in WEEK + NEXT if p is not None)
    got = [r["goal_probability"] for r in by_id.values() if r["goal_probability"] is not None]
    assert mean(got) == pytest.approx(expected)
