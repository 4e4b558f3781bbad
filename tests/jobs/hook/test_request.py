"""Hook payloads: the real fields, snake_case and camelCase, and what is not a payload."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scorer.jobs.hook.request import MANUAL, HookRequest, PayloadError, parse_payload
from tests.jobs.hook.helpers import camel, payload

SESSION = "c45af7b1-cb7c-4e51-93db-8cbb250a877a"


@pytest.mark.parametrize("shape", [lambda b: b, camel], ids=["snake_case", "camelCase"])
def test_a_session_end_payload(shape):
    body = shape(payload("/root/.claude/projects/-workspace/x.jsonl", SESSION))
    request = parse_payload(json.dumps(body).encode())
    assert request == HookRequest(
        session_id=SESSION,
        transcript=Path("/root/.claude/projects/-workspace/x.jsonl"),
        event="SessionEnd",
        cwd="/workspace",
        reason="prompt_input_exit",
    )
    assert request.automatic and request.label() == SESSION


def test_a_stop_payload_and_the_registered_event_as_fallback():
    stop = parse_payload(json.dumps(payload("/t.jsonl", SESSION, "Stop")))
    assert stop.event == "Stop" and stop.reason is None
    bare = {"session_id": SESSION, "transcript_path": "~/t.jsonl"}
    assert parse_payload(json.dumps(bare), event="SessionEnd").event == "SessionEnd"
    named = parse_payload(json.dumps(bare))
    assert named.event == MANUAL and not named.automatic
    assert named.transcript == Path.home() / "t.jsonl"


def test_either_id_or_path_is_enough():
    assert parse_payload('{"session_id": "abc"}').transcript is None
    assert parse_payload('{"transcript_path": "/t.jsonl"}').session_id is None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty payload"),
        (b"  \n", "empty payload"),
        (b"{not json", "not JSON"),
        (b'["a"]', "JSON list, not an object"),
        (b"42", "JSON int, not an object"),
        (b'{"cwd": "/x", "hook_event_name": "Stop"}', "neither session_id nor transcript_path"),
        (b'{"session_id": "  ", "transcript_path": 7}', "neither session_id nor transcript_path"),
        (b" " * 1_000_001, "too big"),
    ],
)
def test_what_is_not_a_payload(raw, message):
    with pytest.raises(PayloadError, match=message):
        parse_payload(raw)


def test_the_worker_gets_the_request_back_from_its_argv():
    request = HookRequest(SESSION, Path("/t.jsonl"), event="Stop", cwd="/w", reason="other")
    assert request.to_argv() == [
        "--event", "Stop", "--session-id", SESSION, "--transcript", "/t.jsonl",
        "--cwd", "/w", "--reason", "other",
    ]  # fmt: skip
    assert HookRequest(None, Path("/t.jsonl")).to_argv() == [
        "--event", MANUAL, "--transcript", "/t.jsonl",
    ]  # fmt: skip
