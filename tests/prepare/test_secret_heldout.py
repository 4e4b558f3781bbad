"""Recall on the held-out secret sets (tests/secret_heldout*.py), in the judge request.

Each case is planted in a transcript (or a wrapped pane capture), loaded by its real
source, prepared as for scoring, and turned into the exact messages the LLM judge would
be sent. A case is caught when no 12-character fragment of its secrets is in them.
Recall must be at least 95%; the cases missed are listed (they are not fixed by tuning
rules on them: see the module docstring of tests/secret_heldout.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scorer.judge.prompts import chunk_notes_messages, default_prompts, single_scoring_messages
from scorer.models import Session
from scorer.prepare import prepare
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.terminal import TerminalFileSource
from tests.secret_corpus import Case, write_transcript
from tests.secret_heldout import HELDOUT, MOVED_TO_TUNING, HeldOut, leaked, pane_text
from tests.secret_heldout_v2 import V2
from tests.secret_heldout_v3 import V3, V3_NEGATIVES

RECALL_GOAL = 0.95


def load_case(case: HeldOut, folder: Path) -> Session:
    """The session a source reads when `case` is planted where agents print it."""
    if case.where == "pane":
        path = folder / "pane.txt"
        path.write_text(pane_text(case), encoding="utf-8")
        return TerminalFileSource(path, task="Set up the service.").load()
    path = write_transcript(Case(case.kind, case.where, case.text, case.secrets), folder)
    return ClaudeCodeSource(path).load()


def judge_request_text(session: Session) -> str:
    """Every user message the LLM judge would get for this session, joined."""
    prompts = default_prompts()
    prepared = prepare(session)
    chunks = prepared.chunks
    if len(chunks) == 1:
        messages = single_scoring_messages(prompts, prepared.header, chunks[0])
    else:
        messages = [
            m
            for c in chunks
            for m in chunk_notes_messages(prompts, prepared.header, c, len(chunks))
        ]
    return "\n".join(str(m["content"]) for m in messages)


def measure(folder: Path, cases: list[HeldOut]) -> tuple[list[HeldOut], list[HeldOut]]:
    """(caught, missed) over `cases`."""
    caught, missed = [], []
    for i, case in enumerate(cases):
        sub = folder / str(i)
        sub.mkdir()
        request = judge_request_text(load_case(case, sub))
        (missed if leaked(case, request) else caught).append(case)
    return caught, missed


V1_LEFT = [c for c in HELDOUT if c.name not in MOVED_TO_TUNING]
TUNED = [c for c in HELDOUT if c.name in MOVED_TO_TUNING]


def test_heldout_sets_are_big_and_varied() -> None:
    for cases in (HELDOUT, V2, V3):
        assert len(cases) >= 60
        assert len({c.kind for c in cases}) >= 40
        assert {c.where for c in cases} == {"prompt", "command", "output", "pane"}
    assert len(TUNED) == len(MOVED_TO_TUNING)  # every moved name is a real case


def test_every_heldout_secret_is_really_in_the_loaded_session(tmp_path: Path) -> None:
    for i, case in enumerate(HELDOUT + V2 + V3):
        sub = tmp_path / str(i)
        sub.mkdir()
        session = load_case(case, sub)
        assert leaked(case, session.model_dump_json()), case.name


def test_v2_cases_stay_caught(tmp_path: Path) -> None:
    """v2 was held out until it was measured (45/61 = 73.8%); the structure, spread and
    command-context layers were then written knowing its misses, so it is tuning data
    now (docs/security.md) and every case must stay caught. Held-out: v3."""
    _, missed = measure(tmp_path, V2)
    assert not missed, [c.name for c in missed]


def test_heldout_v1_cases_not_tuned_on_stay_caught(tmp_path: Path) -> None:
    caught, missed = measure(tmp_path, V1_LEFT)
    assert len(caught) / len(V1_LEFT) >= RECALL_GOAL, [c.name for c in missed]


def test_v1_cases_moved_to_tuning_are_caught(tmp_path: Path) -> None:
    _, missed = measure(tmp_path, TUNED)
    assert not missed, [c.name for c in missed]


# ---- held-out v3: written blind by an adversary, measured once after the rules froze ----

V3_FLOOR = 133 / 155
"""Measured on the rules as landed (docs/security.md); a regression guard, not the goal."""
V3_NEGATIVES_FLOOR = 24
"""Of the 27 strings the judge needs (hashes, ids, public keys) that must survive."""


@pytest.fixture(scope="module")
def v3_result(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[HeldOut], list[HeldOut]]:
    return measure(tmp_path_factory.mktemp("v3"), V3)


def test_heldout_v3_recall_stays_at_its_measured_floor(v3_result) -> None:
    caught, missed = v3_result
    recall = len(caught) / len(V3)
    assert recall >= V3_FLOOR, f"{recall:.1%}; missed: {[c.name for c in missed]}"


@pytest.mark.xfail(strict=True, reason="held-out v3: 133/155 = 85.8% < 95% (docs/security.md)")
def test_heldout_v3_recall_meets_the_goal(v3_result) -> None:
    caught, _ = v3_result
    assert len(caught) / len(V3) >= RECALL_GOAL


def test_heldout_v3_negatives_survive_redaction(tmp_path: Path) -> None:
    """What the judge needs (git SHAs, UUIDs, digests, integrity strings, public keys)
    reaches it, planted as a tool's output."""
    lost = []
    for i, (line, keep) in enumerate(V3_NEGATIVES):
        sub = tmp_path / str(i)
        sub.mkdir()
        path = write_transcript(Case("negative", "output", line, ()), sub)
        if keep not in judge_request_text(ClaudeCodeSource(path).load()):
            lost.append(keep[:24])
    assert len(V3_NEGATIVES) - len(lost) >= V3_NEGATIVES_FLOOR, lost
