"""The validity harness over two backends: figures per backend and pooled, the goal
probability's figures and its seam, second opinions, the dev features, the folder."""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from scorer.calibrate.validity import probability
from scorer.calibrate.validity.features import feature_rows
from scorer.calibrate.validity.report import collect, reliability_plots, render
from scorer.calibrate.validity.runs import load_runs
from scorer.calibrate.validity.split import load_split
from scorer.calibrate.validity.verdicts import (
    check_opinion,
    goal_label,
    ingest_files,
    second_opinions,
    verdict_path,
)
from scorer.calibrate.validity.workspace import packet_sizes, write_packets
from scorer.errors import ConfigError
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.rubric import default_rubric
from tests.conftest import REPO
from tests.fakes.anthropic import valid_scoring_payload

SPLIT_FILE = REPO / "benchmarks" / "validity_split.json"
DEV_TASK = "csv-to-parquet"  # dev: reading it is allowed
DONE = [("write the parquet file", "met")]
HALF = [("write the parquet file", "met"), ("keep the columns", "unmet")]


@pytest.fixture(autouse=True)
def no_shipped_model(monkeypatch):
    """These tests pick their goal model (none, or `MODELS`), whatever the checkout ships."""
    from scorer.judge import heuristic
    from scorer.judge import probability as judge_probability

    monkeypatch.setattr(judge_probability, "shipped_goal_models", lambda: None)
    monkeypatch.setattr(heuristic, "shipped_goal_models", lambda: None)


def reply(goal: str, checks: list[tuple[str, str]]) -> dict:
    return valid_scoring_payload(labels={"goal_achievement": goal}, requirements=checks)


@pytest.fixture(scope="module")
def all_runs():
    from tests.conftest import TERMINAL_BENCH_ALL, TERMINAL_BENCH_GPT5, require

    require(TERMINAL_BENCH_GPT5)
    runs, _ = load_runs(TERMINAL_BENCH_ALL, load_split(SPLIT_FILE))
    return runs


@pytest.fixture(scope="module")
def folder(all_runs, tmp_path_factory):
    """Packets of DEV_TASK's two runs (coder: resolved; gpt5: failed) and one test-side
    run, each with a first verdict (complete, partial, failed)."""
    chosen = [r for r in all_runs if r.task_id == DEV_TASK]
    chosen.append(
        next(r for r in all_runs if r.side == "test" and r.backend == "claude_code_coder")
    )
    path = tmp_path_factory.mktemp("validity")
    write_packets(path, chosen, AnthropicJudge(verify_tokens=False))
    answers = path.parent / "answers"
    answers.mkdir()
    for run, (goal, checks) in zip(chosen, [("complete", DONE), ("partial", HALF), ("failed", HALF)], strict=True):  # fmt: skip
        (answers / f"{run.run_id}.json").write_text(json.dumps(reply(goal, checks)))
    from scorer.calibrate.validity.workspace import read_manifest

    done = ingest_files(path, read_manifest(path), answers)
    assert len(done.written) == 3, done
    return path, chosen


def _rows(folder, all_runs, **kw):
    from scorer.calibrate.validity.workspace import read_manifest

    path, _ = folder
    return collect(path, read_manifest(path), all_runs, default_rubric(), **kw)


# --- per backend and pooled --------------------------------------------------------------


def test_report_gives_every_figure_pooled_and_per_backend(folder, all_runs):
    rows = _rows(folder, all_runs)
    assert {r.backend for r in rows} == {"claude_code_coder", "claude_code_gpt5"}
    text = render(rows, n_boot=50)
    dev = text.split("== dev:")[1].split("== test:")[0]
    blocks = re.findall(r"^ \[([^:]+): (\d+) runs", dev, re.M)
    assert blocks == [("all backends", "2"), ("claude_code_coder", "1"), ("claude_code_gpt5", "1")]
    for block in re.split(r"^ \[", dev, flags=re.M)[1:]:  # every group has every figure
        assert "resolved-vs-not bal.acc" in block and "AUROC class" in block
        assert "confusion" in block and "contradicts its own checklist" in block
    # no probability anywhere yet: n/a, never 0
    prob_lines = [ln for ln in text.splitlines() if ln.startswith("  llm ") and "n/a" in ln]
    assert prob_lines and not re.search(r"AUROC p.*\b0\.00\b", text)
    test = text.split("== test:")[1].split("== all:")[0]
    assert "[claude_code_coder: 1 runs" in test and "goal ≥ 0.90" in test  # one backend only


def test_the_goal_model_gives_the_llm_rows_probability_and_label(
    folder, all_runs, monkeypatch, tmp_path
):
    from scorer.judge import probability as judge_probability
    from scorer.judge.probability import GoalModels, GoalRule, JudgeModel, Logistic

    assert probability.probability_of(reply("complete", DONE), all_runs[0]) is None  # no model
    one = Logistic(features=["core_conf_mean"], mean=[0.0], scale=[1.0], coef=[1.0], intercept=0)
    rule = GoalRule(complete=0.6, failed=0.2)
    models = GoalModels(
        version="t", fitted_on=[], llm=JudgeModel(model=one, rule=rule),
        heuristic=JudgeModel(model=one, rule=rule),
    )  # fmt: skip
    monkeypatch.setattr(judge_probability, "shipped_goal_models", lambda: models)
    rows = _rows(folder, all_runs)
    by_raw = {r.labels["llm raw"]: r for r in rows}
    # DONE: one met requirement at 90 → p 0.9; HALF: min of 90 and 10 → mean logit 0 → 0.5
    assert by_raw["complete"].probability["llm"] == pytest.approx(0.9)
    assert by_raw["partial"].probability["llm"] == pytest.approx(0.5)
    assert by_raw["complete"].labels["llm"] == "complete"
    assert (
        by_raw["partial"].labels["llm"] == "partial" and by_raw["failed"].labels["llm"] == "partial"
    )
    text = render(rows, n_boot=50)
    assert "reliability llm:" in text and "with p" in text
    pooled = text.split("== all:")[1]
    llm = next(ln for ln in pooled.splitlines() if re.match(r"  llm +3 ", ln))
    assert llm.split()[2] != "n/a"  # AUROC p of the three runs' probabilities
    plots = reliability_plots(rows, tmp_path / "plots")
    names = {p.name for p in plots}
    assert "reliability-dev-all_backends-llm.png" in names
    assert "reliability-dev-claude_code_gpt5-llm.png" in names
    assert all(p.read_bytes().startswith(b"\x89PNG") for p in plots)


# --- second opinions ---------------------------------------------------------------------


def test_second_opinions_are_ingested_and_read_only_when_asked(folder, all_runs, tmp_path):
    path, chosen = folder
    run = chosen[1]  # the gpt5 run, judged partial first
    answers = tmp_path / "answers"
    answers.mkdir()
    (answers / f"{run.run_id}.json").write_text(json.dumps(reply("partial", HALF)))
    (answers / f"{run.run_id}.second-1.json").write_text(json.dumps(reply("complete", DONE)))
    (answers / f"{run.run_id}.second-2.json").write_text("{not json")
    (answers / f"{run.run_id}.second-x.json").write_text("{}")  # not a second opinion's name
    from scorer.calibrate.validity.workspace import read_manifest

    done = ingest_files(path, read_manifest(path), answers)
    assert f"{run.run_id}.second-1" in done.written
    assert [name for name, _ in done.invalid] == [f"{run.run_id}.second-2"]
    assert second_opinions(path, run.run_id) == ["second-1"]
    assert verdict_path(path, run.run_id, "second-1").name == f"{run.run_id}.second-1.json"
    first = {r.run: r.labels["llm"] for r in _rows(folder, all_runs)}
    second = {r.run: r.labels["llm"] for r in _rows(folder, all_runs, opinion="second-1")}
    assert first[run.run_id] == "partial" and second[run.run_id] == "complete"
    assert second[chosen[0].run_id] is None  # no second opinion: no label, no crash
    entry = next(e for e in read_manifest(path).runs if e.run == run.run_id)
    assert goal_label(path, entry, "second-3") == (None, "no second-3 verdict")
    text = render(_rows(folder, all_runs), n_boot=0)
    assert "Second opinions held for 1 of 3 runs" in text and "LLM verdict read: first" in text
    for bad in ("second-0", "second", "third", "../x"):
        with pytest.raises(ConfigError, match="no such verdict"):
            check_opinion(bad)


# --- features for fitting on dev ----------------------------------------------------------


def test_features_hold_dev_runs_with_a_verdict_and_never_a_test_run(folder, all_runs):
    from scorer.calibrate.validity.workspace import read_manifest

    path, chosen = folder
    rows, left = feature_rows(path, read_manifest(path), all_runs)
    test_run = chosen[2]
    assert test_run.side == "test" and verdict_path(path, test_run.run_id).is_file()
    assert {r["run"] for r in rows} == {chosen[0].run_id, chosen[1].run_id} and not left
    row = next(r for r in rows if r["backend"] == "claude_code_gpt5")
    assert row["task_id"] == DEV_TASK and row["family"] == DEV_TASK
    assert row["outcome"] == chosen[1].outcome and row["resolved"] == int(
        chosen[1].outcome == "complete"
    )
    assert row["goal"] == "partial" and row["checklist_goal"] == "partial"
    assert row["checklist"] == [
        {"status": "met", "core": True, "n_evidence": 1, "confidence": 90},
        {"status": "unmet", "core": True, "n_evidence": 0, "confidence": 10},
    ]
    assert row["heuristic"]["goal"] in ("failed", "partial", "complete", "exceeded")
    assert "goal_probability" in row["heuristic"]
    json.dumps(rows)  # one JSON object per line


def test_features_keep_a_stated_confidence():
    from scorer.calibrate.validity.features import checklist

    items = checklist({"requirements": [{"status": "met", "core": False, "confidence": 0.7}]})
    assert items == [{"status": "met", "core": False, "n_evidence": 0, "confidence": 0.7}]


# --- the command: its folder ----------------------------------------------------------------


@pytest.fixture
def cli():
    spec = importlib.util.spec_from_file_location(
        "validity_cli", REPO / "benchmarks" / "validity.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("command", ["packets", "ingest --api", "report", "features"])
def test_no_folder_is_one_line_and_exit_2(cli, command, capsys):
    assert cli.main(command.split()) == 2
    err = capsys.readouterr().err
    assert err == "error: no packet folder: give DIR or set SCORER_VALIDITY_DIR\n"


def test_the_folder_comes_from_the_environment(cli, folder, all_runs, monkeypatch, capsys):
    path, _ = folder
    monkeypatch.setenv("SCORER_VALIDITY_DIR", str(path))
    monkeypatch.setattr(
        cli, "_runs", lambda side="all": [r for r in all_runs if side in ("all", r.side)]
    )
    out = path.parent / "features.jsonl"
    assert cli.main(["features", "--out", str(out)]) == 0
    assert "2 dev runs with a first verdict" in capsys.readouterr().out
    assert len(out.read_text().splitlines()) == 2
    assert cli.main(["report", "--n-boot", "0", "--plots", str(path.parent / "p")]) == 0
    assert "[all backends: 2 runs" in capsys.readouterr().out
    assert cli.main(["report", "--verdict", "third"]) == 1


def test_packet_sizes_per_split_and_backend(folder):
    from scorer.calibrate.validity.workspace import read_manifest

    path, _ = folder
    sizes = {(s.side, s.backend): s for s in packet_sizes(path, read_manifest(path))}
    assert set(sizes) == {
        ("dev", "claude_code_coder"), ("dev", "claude_code_gpt5"), ("dev", "all backends"),
        ("test", "claude_code_coder"), ("test", "all backends"),
    }  # fmt: skip
    dev = sizes[("dev", "all backends")]
    assert dev.runs == 2 and dev.packets == 2 and dev.chunks == {1: 2}
    assert all(c > 1000 for c in dev.chars)


def test_the_bootstrap_is_the_same_as_resampling_one_draw_at_a_time():
    """The vectorized interval equals the per-resample loop it replaced (same draws)."""
    import numpy as np

    from scorer.calibrate.validity.figures import _resolved_bal_acc, resolved_balanced_accuracy

    rng = np.random.default_rng(5)
    truth = rng.choice(["failed", "partial", "complete"], 40)
    pred = rng.choice(["failed", "partial", "complete"], 40)
    loop, draws = np.random.default_rng(0), []
    for _ in range(500):
        idx = loop.integers(0, 40, 40)
        draw = _resolved_bal_acc(truth[idx], pred[idx])
        draws += [] if draw is None else [draw]
    est = resolved_balanced_accuracy(list(truth), list(pred), n_boot=500)
    assert (est.low, est.high) == pytest.approx(tuple(np.percentile(draws, [2.5, 97.5])))
