"""Prep output is pinned byte for byte: rendered timelines and chunk plans of real sessions.

A performance change to parsing, redaction, rendering, signals or chunking must not move a
single byte of what the judge reads. `golden_prepare.json` holds sha256 digests of each
session's header (signals block included), its rendered timeline (every event's index,
depth, text) and its chunk plans at two budgets (every chunk's text, event numbers,
overlap, token estimate and truncated events), plus the redaction count.

Sessions: every Claude Code transcript in `../shared/data/claude-code-projects`, every
eighth terminal-bench stream-json session, and the bundled demo. Real-data cases skip with
a reason when the folder is absent.

To refresh the digests after an intended change of output (say why in the commit):
    SCORER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/prepare/test_golden.py
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from scorer.models import Session
from scorer.prepare import prepare
from tests.golden import check_golden, golden_sessions, golden_source

GOLDEN = Path(__file__).with_name("golden_prepare.json")
BUDGETS = (70_000, 12_000)
"""The default budget, and a small one that splits the bigger sessions into several chunks."""


def _sha(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def digests(session: Session) -> dict[str, object]:
    """The digests of one session's prep output at both budgets."""
    out: dict[str, object] = {}
    for budget in BUDGETS:
        prepared = prepare(
            session.model_copy(deep=True), budget=budget, overlap=4, safety_factor=1.25
        )
        if budget == BUDGETS[0]:
            out["header"] = _sha(prepared.header)
            out["timeline"] = _sha([[e.index, e.depth, e.text] for e in prepared.events])
            out["events"] = len(prepared.events)
            out["redactions"] = prepared.redactions.total
        plan = [
            [c.index, _sha(c.text), c.event_indices, c.overlap, c.tokens, c.truncated_events]
            for c in prepared.chunks
        ]
        out[f"chunks@{budget}"] = _sha(plan)
        out[f"n_chunks@{budget}"] = len(plan)
    return out


@pytest.mark.parametrize("name", golden_sessions())
def test_prep_output_matches_golden(name: str) -> None:
    source, _ = golden_source(name)
    check_golden(GOLDEN, name, digests(source.load()))
