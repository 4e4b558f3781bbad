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
import os
from pathlib import Path

import pytest

from scorer.models import Session
from scorer.prepare import prepare
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.stream_json import StreamJsonSource
from tests.conftest import CC_PROJECTS, REPO, SHARED_DATA, TERMINAL_BENCH

GOLDEN = Path(__file__).with_name("golden_prepare.json")
BUDGETS = (70_000, 12_000)
"""The default budget, and a small one that splits the bigger sessions into several chunks."""
DEMO = "examples/demo-session.jsonl"


def _cases() -> list[str]:
    """Case names relative to the shared data folder (or the repo, for the demo)."""
    names = [DEMO]
    if CC_PROJECTS.exists():
        names += [str(p.relative_to(SHARED_DATA)) for p in sorted(CC_PROJECTS.rglob("*.jsonl"))]
    else:
        names.append("claude-code-projects (absent)")
    if TERMINAL_BENCH.exists():
        streams = sorted(TERMINAL_BENCH.glob("*/session.jsonl"))
        names += [str(p.relative_to(SHARED_DATA)) for p in streams[::8]]
    else:
        names.append("terminal-bench (absent)")
    return names


def _load(name: str) -> Session:
    if name == DEMO:
        return ClaudeCodeSource(REPO / DEMO).load()
    path = SHARED_DATA / name
    if not path.exists():
        pytest.skip(f"real data not available: {path}")
    if name.startswith("terminal-bench/"):
        return StreamJsonSource(path).load()
    return ClaudeCodeSource(path).load()


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


def _golden() -> dict[str, dict[str, object]]:
    return json.loads(GOLDEN.read_text(encoding="utf-8")) if GOLDEN.exists() else {}


@pytest.mark.parametrize("name", _cases())
def test_prep_output_matches_golden(name: str) -> None:
    session = _load(name)
    got = digests(session)
    if os.environ.get("SCORER_UPDATE_GOLDEN"):
        golden = _golden()
        golden[name] = got
        GOLDEN.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return
    want = _golden().get(name)
    assert want is not None, f"{name} has no golden digests: run with SCORER_UPDATE_GOLDEN=1"
    assert got == want
