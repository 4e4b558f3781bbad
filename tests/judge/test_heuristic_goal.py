"""The heuristic's goal rules built on final verification, hedges and requirement coverage."""

from __future__ import annotations

from sklearn.metrics import balanced_accuracy_score

from scorer.jobs.score import judge_prepared, prepare
from scorer.judge.heuristic import HeuristicJudge
from scorer.models import Event, EventKind, Session, SourceKind
from scorer.sources import resolve
from tests.conftest import TERMINAL_BENCH, require
from tests.prepare.sessions import Builder


def goal(events: list[Event], source: SourceKind = SourceKind.CLAUDE_CODE):
    session = Session(session_id="g", source=source, events=events)
    card = HeuristicJudge(probability=False).judge(prepare(session))  # the rules' own goal
    return card.scores["goal_achievement"], card


def work(b: Builder, task: str = "Add a greeting to `app.py`", check: str | None = "python app.py"):
    """prompt → read → edit app.py → (a check) ; the caller appends the ending."""
    events = [b.ev(EventKind.PROMPT, task)]
    read = b.call("Read", file_path="app.py")
    events += [read, b.result(read, "pass")]
    edit = b.call("Edit", file_path="app.py", old_string="pass", new_string="print('hi')")
    events += [edit, b.result(edit, "updated")]
    if check:
        run = b.call("Bash", command=check)
        events += [run, b.result(run, "hi")]
    return events


def test_claim_checked_after_the_last_edit_is_complete():
    b = Builder()
    score, card = goal([*work(b), b.ev(EventKind.ASSISTANT, "Done: it prints hi.")])
    assert score.label == "complete"
    assert score.rationale == "success claimed and checked after the last edit (run) [rule checked]"
    assert [e.event for e in score.evidence] == [6, 7]
    assert card.meta["goal_confidence"] == 0.62  # (14 + 1) / (22 + 2): right 14 of 22 on dev
    assert card.meta["goal_rule"] == "checked"
    assert card.scores["process_adherence"].value == 5  # ran it, read before editing


def test_claim_without_any_check_after_the_last_edit_is_partial():
    b = Builder()
    score, card = goal([*work(b, check=None), b.ev(EventKind.ASSISTANT, "Done, it works.")])
    assert score.label == "partial"
    assert "nothing checked the work after the last edit" in score.rationale
    assert 4 in [e.event for e in score.evidence]  # the unchecked edit
    assert card.scores["process_adherence"].value == 3  # +1 read first, -1 unchecked


def test_failed_final_check_and_hedged_claims_are_partial():
    b = Builder()
    events = work(b, check=None)
    run = b.call("Bash", command="python app.py")
    events += [run, b.result(run, "Exit code 1\nNameError", is_error=True)]
    events.append(b.ev(EventKind.ASSISTANT, "Done."))
    score, _ = goal(events)
    assert score.label == "partial"
    assert "the last check after the last edit failed (exit 1)" in score.rationale

    b = Builder()
    hedge = "Done. The greeting is hard-coded; in a real deployment it would need config."
    score, _ = goal([*work(b), b.ev(EventKind.ASSISTANT, hedge)])
    assert score.label == "partial"
    assert "hedges (hard-coded, in a real, would need)" in score.rationale


def test_requirements_untouched_by_any_action_make_a_claim_partial():
    task = "Do:\n1. Edit `app.py`\n2. Write `NOTES.txt`\n3. Update `setup.cfg`"
    b = Builder()
    score, _ = goal([*work(b, task=task), b.ev(EventKind.ASSISTANT, "All done.")])
    assert score.label == "partial"
    assert "2 of 3 requirements untouched" in score.rationale
    b = Builder()  # one untouched requirement out of two is not enough to doubt the claim
    task = "Do:\n1. Edit `app.py`\n2. Write `NOTES.txt`"
    score, _ = goal([*work(b, task=task), b.ev(EventKind.ASSISTANT, "All done.")])
    assert score.label == "complete"


def test_a_headless_report_that_claims_nothing_is_failed():
    b = Builder()
    ending = "Let me look at the logs next."
    events = [*work(b), b.ev(EventKind.ASSISTANT, ending), b.ev(EventKind.RESULT, ending)]
    score, _ = goal(events, SourceKind.STREAM_JSON)
    assert score.label == "failed" and "claims nothing" in score.rationale
    score, _ = goal(events[:-1])  # interactive: the user may carry on
    assert score.label == "partial" and "neutral ending" in score.rationale


def test_tests_after_the_last_edit_decide_before_any_claim():
    b = Builder()
    events = work(b, check="pytest -q")
    events[-1] = b.result(events[-2], "Exit code 1\n1 failed, 4 passed in 0.2s", is_error=True)
    score, _ = goal([*events, b.ev(EventKind.ASSISTANT, "Fixed and done.")])
    assert score.label == "partial" and "1 pass" not in score.rationale
    assert score.rationale == "tests after the last edit: 4 pass, 1 fail [rule tests]"

    b = Builder()
    events = work(b, check="pytest -q")
    events[-1] = b.result(events[-2], "5 passed in 0.2s")
    edit = b.call("Edit", file_path="app.py", old_string="hi", new_string="hello")
    events += [edit, b.result(edit, "updated")]  # the passing run no longer decides
    score, _ = goal([*events, b.ev(EventKind.ASSISTANT, "Done.")])
    assert score.label == "partial" and "nothing checked" in score.rationale


def test_exceeded_needs_new_tests_that_pass_and_a_clean_run():
    b = Builder()
    events = work(b, check=None)
    new_test = b.call("Write", file_path="tests/test_app.py", content="def test_hi(): ...\n")
    run = b.call("Bash", command="pytest -q")
    events += [new_test, b.result(new_test, "created"), run, b.result(run, "3 passed in 0.1s")]
    score, card = goal([*events, b.ev(EventKind.ASSISTANT, "Done, with a regression test.")])
    assert score.label == "exceeded" and card.recommendation == "complete"
    assert card.scores["output_quality"].value == 5

    named = work(Builder(), task="Fix `app.py` and add tests/test_app.py", check=None)
    b = Builder()
    b.n = len(named)
    new_test = b.call("Write", file_path="tests/test_app.py", content="def test_hi(): ...\n")
    run = b.call("Bash", command="pytest -q")
    named += [new_test, b.result(new_test, "created"), run, b.result(run, "3 passed in 0.1s")]
    score, _ = goal([*named, b.ev(EventKind.ASSISTANT, "Done.")])
    assert score.label == "complete"  # the task asked for that test: nothing beyond it


def test_dev_split_figures():
    """The dev split's figures for this heuristic version (its rules were tuned there; the
    untuned test split is measured only by `benchmarks/validity.py report`)."""
    from scorer.calibrate.validity.runs import load_runs
    from scorer.calibrate.validity.split import load_split
    from tests.conftest import REPO

    runs, _ = load_runs(
        require(TERMINAL_BENCH), load_split(REPO / "benchmarks" / "validity_split.json")
    )
    truth, pred = [], []
    for run in (r for r in runs if r.side == "dev"):
        session = resolve(str(run.session_path), task=run.instruction).load()
        truth.append(run.outcome)
        label = judge_prepared(prepare(session), "heuristic").scores["goal_achievement"].label
        pred.append("complete" if label == "exceeded" else label)
    assert len(truth) == 39
    resolved = balanced_accuracy_score(
        [t == "complete" for t in truth], [p == "complete" for p in pred]
    )
    exact = sum(t == p for t, p in zip(truth, pred, strict=True))
    # the product's goal is the rules' own (the fitted probability does not relabel it)
    assert (round(resolved, 3), exact) == (0.833, 27)
    assert {"failed", "partial", "complete"} <= set(pred)


def test_a_claim_checked_only_through_background_output_says_how_in_words():
    b = Builder()
    events = [b.ev(EventKind.PROMPT, "Serve `app.py` and tell me it runs")]
    edit = b.call("Write", file_path="app.py", content="print('up')")
    events += [edit, b.result(edit, "ok")]
    start = b.call("Bash", command="python app.py", run_in_background=True)
    events += [start, b.result(start, "Command running in background with ID: ab12")]
    peek = b.call("BashOutput", bash_id="ab12")
    events += [peek, b.result(peek, "<status>running</status>\nup")]
    score, _ = goal([*events, b.ev(EventKind.ASSISTANT, "Done.")])
    assert score.label == "complete"
    assert score.rationale == "success claimed and checked after the last edit (run) [rule checked]"
    assert [e.event for e in score.evidence] == [6, 7]  # the output read after the edit

    b = Builder()  # nothing edited, nothing checked: still words, never a Python literal
    score, _ = goal([b.ev(EventKind.PROMPT, "Say hi"), b.ev(EventKind.ASSISTANT, "Done: hi.")])
    assert score.rationale == (
        "success claimed; nothing was edited and nothing checked [rule checked]"
    )
