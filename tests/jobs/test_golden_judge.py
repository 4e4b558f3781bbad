"""Judging is pinned: heuristic cards and the LLM judge's exact request bodies on real sessions.

A refactor of the judging step (how score-session, backfill, Message Batches and
calibration wire prepare → judge → finish the card) must not change one result.
`golden_judge.json` holds, per session:

- `heuristic`: the finished heuristic scorecard as `score_session` returns it (every
  score, rationale, evidence ref, recommendation, meta, session info), with the
  timeline as a digest and machine paths made relative;
- `llm`: every Messages API request the Sonnet judge sends, in a stable order (the
  single scoring call; or each chunk's notes call, then the final call), each as sha256
  digests of its `system`, `messages`, `output_config` and whole body (key order
  included) plus its model and `max_tokens`; and the finished LLM card built from the
  fake's replies;
- extra cases at a 12,000-token budget (chunked sessions: notes + final calls), and the
  demo session through a repair (invalid reply first) and a refusal (fallback model).

Sessions: every Claude Code transcript in `../shared/data/claude-code-projects`, every
eighth terminal-bench run (its task given as `--prompt` from `label.json`, as a user
would), and the bundled demo. Real-data cases skip when the folder is absent.

Prompts, signals and rendering legitimately change. To regenerate after an intended change
(say why in the commit):

    SCORER_UPDATE_GOLDEN=1 .venv/bin/python -m pytest -q tests/jobs/test_golden_judge.py
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import httpx2
import pytest

from scorer.jobs.score import score_session
from scorer.models import Scorecard
from tests.conftest import REPO, SHARED_DATA
from tests.fakes.anthropic import (
    FakeAnthropic,
    message_response,
    notes_payload,
    refusal_response,
    valid_scoring_payload,
)
from tests.golden import DEMO, check_golden, golden_sessions, golden_source

GOLDEN = Path(__file__).with_name("golden_judge.json")
SMALL_BUDGET = 12_000
CHUNKED = (
    "claude-code-projects/-home-USER-projects-spotter/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl",
    "claude-code-projects/-home-USER-projects-spotter/subagent.jsonl",
    "terminal-bench/claude_code_coder/swe-bench-astropy-2/session.jsonl",
)
"""Sessions also judged at `SMALL_BUDGET`, where they split into several chunks."""
_CHUNK = re.compile(r'<transcript(?:_[0-9a-f]+)? chunk="(\d+)/(\d+)">')  # with its fence id


def _cases() -> list[str]:
    cases = [f"{kind}:{name}" for name in golden_sessions() for kind in ("heuristic", "llm")]
    cases += [f"llm@{SMALL_BUDGET}:{name}" for name in CHUNKED]
    cases += [f"llm-repair:{DEMO}", f"llm-refusal:{DEMO}"]
    return cases


def _sha(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _relative(value: Any) -> Any:
    """Machine paths (the data folder, the checkout) as placeholders, recursively."""
    if isinstance(value, str):
        return value.replace(str(SHARED_DATA), "<data>").replace(str(REPO), "<repo>")
    if isinstance(value, dict):
        return {k: _relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v) for v in value]
    return value


def card_view(card: Scorecard) -> dict[str, Any]:
    """The card's JSON without what varies per run or machine (time, package version, a
    file's modification time standing in for a session's own times)."""
    data = card.model_dump(mode="json", exclude={"created_at", "package_version"})
    if card.session.times_from == "file":
        data["session"].update(started_at="<file time>", ended_at="<file time>")
    data["timeline"] = _sha([list(e) for e in card.timeline or []])
    return _relative(data)


def request_view(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "model": body["model"],
        "max_tokens": body["max_tokens"],
        "system": _sha(body["system"]),
        "messages": _sha(body["messages"]),
        "output_config": _sha(body["output_config"]),
        "body": _sha(body),
    }


def _label(body: dict[str, Any]) -> str:
    """`notes i/n`, `repair`, or `score` (single or final), for a stable order."""
    if len(body["messages"]) > 1:
        return "repair"
    match = _CHUNK.search(body["messages"][0]["content"])
    if match and "progress" in json.dumps(body["output_config"]):
        return f"notes {int(match[1]):03d}/{match[2]}"
    return "score"


def _reply(body: dict[str, Any]) -> httpx2.Response:
    """A deterministic reply per request: notes name their chunk, scores cite event 1."""
    if "progress" in json.dumps(body["output_config"]):
        match = _CHUNK.search(body["messages"][0]["content"])
        return message_response(notes_payload(progress=f"chunk {match[1] if match else '?'}"))
    return message_response(valid_scoring_payload(), model=body["model"])


def _fake(kind: str) -> FakeAnthropic:
    if kind == "llm-repair":
        return FakeAnthropic([message_response("{not json"), _reply])
    if kind == "llm-refusal":
        return FakeAnthropic([refusal_response(), _reply])
    return FakeAnthropic([_reply] * 64)


def judged(case: str) -> dict[str, Any]:
    """What judging one case produces (see the module docstring)."""
    kind, name = case.split(":", 1)
    source, task = golden_source(name)
    budget = SMALL_BUDGET if kind == f"llm@{SMALL_BUDGET}" else None
    if kind == "heuristic":
        card = score_session(source, judge="heuristic", task=task, sinks=[]).card
        return {"card": card_view(card)}
    fake = _fake(kind)
    card = score_session(
        source, judge="llm", task=task, budget=budget, sinks=[], client=fake.client()
    ).card
    bodies = sorted(fake.message_bodies, key=lambda b: (_label(b) == "score", _label(b)))
    if kind in ("llm-repair", "llm-refusal"):
        bodies = fake.message_bodies  # the order is the point: first try, then the retry
    return {
        "requests": [{"call": _label(b), **request_view(b)} for b in bodies],
        "card": card_view(card),
    }


@pytest.mark.parametrize("case", _cases())
def test_judging_matches_golden(case: str) -> None:
    check_golden(GOLDEN, case, judged(case))
