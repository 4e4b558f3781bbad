"""Recall on the held-out secret set (tests/secret_heldout.py), in the judge request.

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
from tests.secret_heldout import HELDOUT, HeldOut, leaked, pane_text

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


def measure(folder: Path) -> tuple[list[HeldOut], list[HeldOut]]:
    """(caught, missed) over the held-out set."""
    caught, missed = [], []
    for i, case in enumerate(HELDOUT):
        sub = folder / str(i)
        sub.mkdir()
        request = judge_request_text(load_case(case, sub))
        (missed if leaked(case, request) else caught).append(case)
    return caught, missed


def test_heldout_set_is_big_and_varied() -> None:
    assert len(HELDOUT) >= 60
    assert len({c.kind for c in HELDOUT}) >= 40
    assert {c.where for c in HELDOUT} == {"prompt", "command", "output", "pane"}


def test_every_heldout_secret_is_really_in_the_loaded_session(tmp_path: Path) -> None:
    for i, case in enumerate(HELDOUT):
        sub = tmp_path / str(i)
        sub.mkdir()
        session = load_case(case, sub)
        assert leaked(case, session.model_dump_json()), case.name


@pytest.mark.xfail(strict=True, reason="held-out v1: 67/83 = 80.7%, below the 95% goal (docs/security.md)")
def test_heldout_recall_in_the_judge_request(tmp_path: Path) -> None:
    caught, missed = measure(tmp_path)
    recall = len(caught) / len(HELDOUT)
    assert recall >= RECALL_GOAL, (
        f"recall {recall:.1%} ({len(caught)}/{len(HELDOUT)}); missed: {[c.name for c in missed]}"
    )
