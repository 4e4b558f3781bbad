"""The validity harness: the split, packets of the exact judge request, verdicts, figures."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scorer.calibrate.validity.figures import agreement, resolved_balanced_accuracy, wilson
from scorer.calibrate.validity.packets import load_prepared, render_packet, requests_for
from scorer.calibrate.validity.runs import load_runs, outcomes, run_id
from scorer.calibrate.validity.split import (
    build_split,
    family,
    load_split,
    make_split,
    place_runs,
)
from scorer.calibrate.validity.verdicts import check_verdict, ingest_api, ingest_files
from scorer.calibrate.validity.workspace import read_manifest, write_packets
from scorer.errors import ConfigError
from scorer.judge.anthropic import AnthropicJudge
from scorer.settings import get_settings
from tests.conftest import REPO
from tests.fakes.anthropic import FakeAnthropic, message_response, valid_scoring_payload

SPLIT_FILE = REPO / "benchmarks" / "validity_split.json"
DEV_TASK = "csv-to-parquet"  # a dev run: reading it is allowed


# --- the split ---------------------------------------------------------------------------


def test_split_keeps_families_together_and_each_class_halved():
    tasks = {f"t{i}": c for i, c in enumerate(["complete"] * 10 + ["partial"] * 8 + ["failed"] * 6)}
    tasks |= {"fam.easy": "complete", "fam.hard": "failed", "fam": "partial"}
    split = make_split(tasks)
    assert split == make_split(dict(reversed(tasks.items())))  # order does not matter
    sides = {t: split.side(t) for t in tasks}
    assert len({sides["fam"], sides["fam.easy"], sides["fam.hard"]}) == 1
    for cls in ("complete", "partial", "failed"):
        dev = sum(1 for t, c in tasks.items() if c == cls and sides[t] == "dev")
        total = sum(1 for c in tasks.values() if c == cls)
        assert abs(dev - total / 2) <= 1.5, cls
    assert family("crack-7z-hash.hard") == "crack-7z-hash"


V1_TEST_SIDE_HEAD = ["blind-maze-explorer-5x5", "blind-maze-explorer-algorithm"]
"""The first test-side tasks of the split as first committed (one backend): never move."""


def test_committed_split_follows_its_rules(terminal_bench_all):
    committed = load_split(SPLIT_FILE)
    every = outcomes(terminal_bench_all)
    assert committed == build_split(every, "claude_code_coder")
    # the tasks are placed by the reference backend alone, as before the second backend
    tasks = make_split(every["claude_code_coder"])
    assert (committed.dev, committed.test) == (tasks.dev, tasks.test)
    assert committed.test[:2] == V1_TEST_SIDE_HEAD and len(committed.dev) == 40
    classes = every["claude_code_coder"]
    dev, test = (Counter(classes[t] for t in side) for side in (committed.dev, committed.test))
    assert all(abs(dev[c] - test[c]) <= 1 for c in ("complete", "partial", "failed"))


def test_committed_split_puts_both_runs_of_a_task_on_one_side(terminal_bench_all):
    committed = load_split(SPLIT_FILE)
    assert committed.reference == "claude_code_coder"
    assert set(committed.runs) == {"claude_code_coder", "claude_code_gpt5"}
    for backend, sides in committed.runs.items():
        assert (sides["dev"], sides["test"]) == (committed.dev, committed.test), backend
        assert all(committed.run_side(backend, t) == committed.side(t) for t in committed.dev)
    runs, notes = load_runs(terminal_bench_all, committed)
    assert len(runs) == 79 + 76 and len({r.run_id for r in runs}) == 155
    assert Counter((r.backend, r.side) for r in runs) == {
        ("claude_code_coder", "dev"): 39,
        ("claude_code_coder", "test"): 40,
        ("claude_code_gpt5", "dev"): 36,  # its 4 runs without a stream are dev tasks
        ("claude_code_gpt5", "test"): 40,
    }
    gpt5 = Counter(r.outcome for r in runs if r.backend == "claude_code_gpt5")
    assert sum(gpt5.values()) == 76 and len(notes) == 5  # the runs without a stream
    by_task: dict[str, set[str]] = {}
    for r in runs:
        by_task.setdefault(r.task_id, set()).add(r.side)
    assert all(len(sides) == 1 for sides in by_task.values())
    # the reference backend's run ids are those of the one-backend harness; others differ
    coder = next(r for r in runs if r.task_id == DEV_TASK and r.backend == "claude_code_coder")
    other = next(r for r in runs if r.task_id == DEV_TASK and r.backend == "claude_code_gpt5")
    assert coder.run_id == "tb-1ffe5698ba" == run_id(DEV_TASK)
    assert other.run_id == run_id(DEV_TASK, "claude_code_gpt5") != coder.run_id


def test_runs_of_a_new_backend_follow_their_task_or_family():
    tasks = make_split({"a": "complete", "b": "failed", "c.easy": "partial", "d": "failed"})
    split = place_runs(tasks, {"new": ["a", "b", "c.hard", "zzz"]})
    placed = split.runs["new"]
    assert split.run_side("new", "c.hard") == tasks.side("c.easy")  # the family's side
    assert "zzz" not in placed["dev"] + placed["test"]  # a new family would move the sides
    assert (split.dev, split.test) == (tasks.dev, tasks.test)
    with pytest.raises(ConfigError, match="reference backend 'x'"):
        build_split({"new": {"a": "complete"}}, "x")


def test_a_split_with_a_run_off_its_tasks_side_is_refused(tmp_path):
    bad = tmp_path / "split.json"
    bad.write_text(
        json.dumps(
            {
                "method": "m",
                "reference": "r",
                "dev": ["a"],
                "test": ["b"],
                "runs": {"r": {"dev": ["a"], "test": ["b"]}, "s": {"dev": ["b"], "test": []}},
            }
        )
    )
    with pytest.raises(ConfigError, match="s runs not on their task's side"):
        load_split(bad)


def test_a_split_listing_a_task_twice_is_refused(tmp_path):
    bad = tmp_path / "split.json"
    bad.write_text(json.dumps({"method": "m", "dev": ["a"], "test": ["a"]}))
    with pytest.raises(ConfigError, match="both sides"):
        load_split(bad)


# --- packets ---------------------------------------------------------------------------


@pytest.fixture
def dev_run(terminal_bench):
    runs, _ = load_runs(terminal_bench, load_split(SPLIT_FILE))
    return next(r for r in runs if r.task_id == DEV_TASK)


def test_a_packet_is_the_exact_request_and_reveals_no_outcome(dev_run, terminal_bench):
    judge = AnthropicJudge(verify_tokens=False)
    prepared = load_prepared(str(dev_run.session_path), dev_run.instruction)
    (request,) = requests_for(judge, prepared, dev_run.run_id, None)
    # what score-session --prompt would send: the product's own request builder
    assert request.params == judge.scoring_request(prepared.header, prepared.chunks[0])
    packet = render_packet(request)
    assert judge.system_text.strip() in packet
    assert request.params["messages"][0]["content"].strip() in packet
    assert '"goal_achievement"' in packet and "Save the reply as" in packet
    label = json.loads((terminal_bench / DEV_TASK / "label.json").read_text())
    for secret in ("is_resolved", "parser_results", label["trial_name"], *label["parser_results"]):
        assert secret not in packet
    assert dev_run.run_id == run_id(DEV_TASK) and DEV_TASK not in dev_run.run_id


def test_packets_folder_has_no_outcomes_and_refuses_another_prompt(dev_run, tmp_path):
    judge = AnthropicJudge(verify_tokens=False)
    manifest = write_packets(tmp_path, [dev_run], judge, commit="abc")
    (entry,) = manifest.runs
    assert entry.side == "dev" and entry.session_id and entry.agent_backend != "unknown"
    assert (tmp_path / "dev" / f"{dev_run.run_id}.md").is_file()
    assert (tmp_path / "heuristic" / f"{dev_run.run_id}.json").is_file()
    text = (tmp_path / "manifest.json").read_text()
    for field in ('"outcome"', "is_resolved", "tests_passed", "parser_results"):
        assert field not in text
    assert read_manifest(tmp_path).runs == manifest.runs
    other = AnthropicJudge(verify_tokens=False)
    other.prompts = other.prompts.model_copy(update={"hash": "0" * 16})
    with pytest.raises(ConfigError, match="another folder"):
        write_packets(tmp_path, [dev_run], other)


# --- verdicts ----------------------------------------------------------------------------


def _schema(judge: AnthropicJudge) -> dict:
    from scorer.judge.schema import output_config

    return output_config(judge.reply_model)["format"]["schema"]


def test_check_verdict_takes_the_schema_of_the_packet():
    schema = _schema(AnthropicJudge(verify_tokens=False))
    good = valid_scoring_payload()
    assert check_verdict(json.dumps(good), schema) == (good, None)
    assert check_verdict("```json\n" + json.dumps(good) + "\n```", schema)[0] == good
    assert "not JSON" in str(check_verdict("{", schema)[1])
    bad = {**good, "goal_achievement": {**good["goal_achievement"], "value": "great"}}
    data, error = check_verdict(json.dumps(bad), schema)
    assert data is None and "goal_achievement" in str(error)


def test_ingest_files_copies_valid_answers_and_reports_the_rest(dev_run, tmp_path):
    folder, answers = tmp_path / "packets", tmp_path / "answers"
    answers.mkdir()
    manifest = write_packets(folder, [dev_run], AnthropicJudge(verify_tokens=False))
    (answers / f"{dev_run.run_id}.json").write_text("not json")
    done = ingest_files(folder, manifest, answers)
    assert done.invalid and not done.written
    (answers / f"{dev_run.run_id}.json").write_text(json.dumps(valid_scoring_payload()))
    done = ingest_files(folder, manifest, answers)
    assert done.written == [dev_run.run_id]
    assert (folder / "verdicts" / f"{dev_run.run_id}.json").is_file()


def test_ingest_api_sends_the_packets_exact_request(dev_run, tmp_path):
    fake = FakeAnthropic([message_response(valid_scoring_payload())])
    judge = AnthropicJudge(fake.client(), verify_tokens=False)
    manifest = write_packets(tmp_path, [dev_run], AnthropicJudge(verify_tokens=False))
    done = ingest_api(tmp_path, manifest, [dev_run], judge)
    assert done.written == [dev_run.run_id] and not done.invalid
    sent = fake.message_bodies[0]
    saved = json.loads((tmp_path / "requests" / f"{dev_run.run_id}.json").read_text())
    assert (
        sent["messages"] == saved["messages"]
        and sent["system"][0]["text"] == saved["system"][0]["text"]
    )
    assert ingest_api(tmp_path, manifest, [dev_run], judge).written == []  # nothing twice


# --- figures -------------------------------------------------------------------------------


def test_wilson_interval_matches_the_textbook_value():
    est = wilson(8, 10)  # Wilson 95%: [0.490, 0.943]
    assert est.value == 0.8
    assert est.low == pytest.approx(0.4902, abs=1e-3) and est.high == pytest.approx(
        0.9433, abs=1e-3
    )
    assert wilson(0, 0).value is None


def test_agreement_counts_exceeded_as_complete():
    truth = ["complete", "complete", "partial", "failed"]
    judged = ["exceeded", "partial", "partial", "complete"]
    a = agreement(truth, judged, n_boot=200)
    assert a.exact.value == 0.5
    assert a.confusion == [[0, 0, 1], [0, 1, 0], [0, 1, 1]]
    assert a.resolved.value == pytest.approx(0.5)  # resolved recall 1/2, others 1/2
    assert a.resolved.low is not None and a.resolved.low <= a.resolved.value <= a.resolved.high
    assert resolved_balanced_accuracy(["failed"], ["failed"]).value is None  # one class only


# --- the command ---------------------------------------------------------------------------


def test_validity_command_end_to_end(dev_run, tmp_path, monkeypatch, terminal_bench_all, capsys):
    import importlib.util

    monkeypatch.setenv("SCORER_TERMINAL_BENCH", str(terminal_bench_all))
    spec = importlib.util.spec_from_file_location(
        "validity_cli", REPO / "benchmarks" / "validity.py"
    )
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    monkeypatch.setattr(cli, "_runs", lambda side="all": [dev_run])
    folder = tmp_path / "v"
    assert cli.main(["packets", str(folder)]) == 0
    answers = tmp_path / "answers"
    answers.mkdir()
    reply = valid_scoring_payload(labels={"goal_achievement": "partial"})
    (answers / f"{dev_run.run_id}.json").write_text(json.dumps(reply))
    assert cli.main(["ingest", str(folder), "--from", str(answers)]) == 0
    assert cli.main(["report", str(folder), "--n-boot", "50", "--compare", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "== dev: 1 runs" in out and "LLM verdicts for 1" in out
    assert "heuristic" in out and "goal_achievement" in out
    assert cli.main(["report", str(tmp_path / "nowhere")]) == 1
    assert cli.main(["split"]) == 0
    assert "matches its rules" in capsys.readouterr().out
    monkeypatch.setenv("SCORER_TERMINAL_BENCH", str(terminal_bench_all / "claude_code_coder"))
    get_settings.cache_clear()
    assert cli.main(["split"]) == 1
    assert "holds runs of claude_code_gpt5, not under" in capsys.readouterr().err


def test_manifest_paths_are_relative(dev_run, tmp_path):
    manifest = write_packets(tmp_path, [dev_run], AnthropicJudge(verify_tokens=False))
    assert all(not Path(q.packet).is_absolute() for r in manifest.runs for q in r.requests)


def test_a_chunked_run_gets_its_final_packet_once_its_notes_are_in(terminal_bench, tmp_path):
    from tests.fakes.anthropic import notes_payload

    runs, _ = load_runs(terminal_bench, load_split(SPLIT_FILE))
    run = next(r for r in runs if r.task_id == "crack-7z-hash.hard")  # dev, two chunks
    judge = AnthropicJudge(verify_tokens=False)
    (entry,) = write_packets(tmp_path, [run], judge).runs
    assert [q.stage for q in entry.requests] == ["notes", "notes"]
    answers = tmp_path / "answers"
    answers.mkdir()
    for q in entry.requests:
        (answers / f"{q.name}.json").write_text(json.dumps(notes_payload()))
    done = ingest_files(tmp_path, read_manifest(tmp_path), answers)
    assert sorted(done.written) == sorted(q.name for q in entry.requests)
    (entry,) = write_packets(tmp_path, [run], judge).runs
    assert [q.stage for q in entry.requests] == ["final"]
    packet = (tmp_path / "dev" / f"{run.run_id}.md").read_text()
    assert "<chunk_notes_" in packet and "## Chunk 2 of 2" in packet
