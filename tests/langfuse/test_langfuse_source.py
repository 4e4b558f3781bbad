"""LangfuseSource against the fake v2 API, fed with real transcripts converted like the plugin."""

from __future__ import annotations

import json
import math

import httpx
import pytest

from scorer.errors import CredentialsError, EmptySessionError, SourceError
from scorer.langfuse_client import make_client
from scorer.models import EventKind
from scorer.sources.base import SessionSource
from scorer.sources.langfuse import FIELDS, LangfuseSource, detect_failure, io_text
from tests.conftest import BIG_SESSION, SPOTTER, require
from tests.langfuse.fake_server import HOST, FakeLangfuse
from tests.langfuse.plugin_fixture import convert_transcript, generic_trace, trace_id_for

BIG_ID = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"


@pytest.fixture(scope="module")
def big_observations() -> list[dict]:
    return convert_transcript(require(BIG_SESSION), link_subagents=True)


def _jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_big_session_pages_through_cursor(big_observations):
    with FakeLangfuse(big_observations) as fake:
        session = LangfuseSource(BIG_ID, client=fake.client(), page_size=200).load()
    n = len(big_observations)
    assert n == 480
    # A small probe page, then pages sized from it (capped at page_size).
    assert fake.calls["observations"] == math.ceil(n / 200) + 1 == 4
    first, *rest = fake.observation_requests
    assert first.url.params["fields"] == FIELDS
    assert first.url.params["sessionId"] == BIG_ID
    assert first.url.params["limit"] == "50"
    assert [r.url.params["limit"] for r in rest] == ["200"] * 3
    assert "cursor" not in first.url.params
    assert all("cursor" in r.url.params for r in rest)
    assert isinstance(LangfuseSource(BIG_ID), SessionSource)
    assert session.extra["langfuse"]["n_observations"] == 480


def test_big_session_maps_to_events(big_observations):
    with FakeLangfuse(big_observations) as fake:
        session = LangfuseSource(BIG_ID, client=fake.client()).load()
    assert fake.calls["observations"] == 2  # ≤ ⌈480/1000⌉ + 1: a probe page, then the rest
    events = [e for _, e in session.iter_events()]
    assert [e.index for e in events] == list(range(1, len(events) + 1))
    tools = [o for o in big_observations if o["type"] == "TOOL"]
    calls = [e for e in events if e.kind == EventKind.TOOL_CALL]
    results = {e.tool_use_id: e for e in events if e.kind == EventKind.TOOL_RESULT}
    assert len(calls) == len(tools) == 254
    assert all(c.tool_use_id.startswith("toolu_") and c.tool_use_id in results for c in calls)
    assert session.events[0].kind == EventKind.PROMPT
    assert session.events[0].text.startswith("Work on bead spotter-4te")
    assert EventKind.COMPACTION in {e.kind for e in events}
    assert session.models[0] == "claude-opus-4-6"
    assert session.cwd == "/home/USER/projects/spotter-worktrees/spotter-4te"
    assert session.git_branches == ["spotter-4te"]
    assert session.origin == f"{HOST}/project/proj-scorer-test/sessions/{BIG_ID}"
    # usage = sum of usageDetails, cost = sum of totalCost
    gens = [o for o in big_observations if o["type"] == "GENERATION"]
    assert session.usage.output_tokens == sum(o["usageDetails"].get("output", 0) for o in gens)
    assert session.usage.cache_read_tokens == sum(
        o["usageDetails"].get("cache_read_input_tokens", 0) for o in gens
    )
    assert session.cost_usd == pytest.approx(sum(o["totalCost"] or 0 for o in gens), abs=1e-5)
    # one subagent, with its own events nested
    (sub,) = [e for e in events if e.kind == EventKind.SUBAGENT]
    assert sub.agent_id == "aac57f5" and sub.text == "Check OTEL hex package versions"
    assert sub.children[0].kind == EventKind.PROMPT and len(sub.children) > 5


def test_failed_tools_found_from_output_text(big_observations):
    """Every result the JSONL flags `is_error` is found from the text alone."""
    flagged = {
        b["tool_use_id"]
        for r in _jsonl(BIG_SESSION)
        if r.get("type") == "user" and isinstance(r["message"].get("content"), list)
        for b in r["message"]["content"]
        if isinstance(b, dict) and b.get("is_error") is True
    }
    with FakeLangfuse(big_observations) as fake:
        session = LangfuseSource(BIG_ID, client=fake.client()).load()
    found = {
        e.tool_use_id
        for _, e in session.iter_events()
        if e.kind == EventKind.TOOL_RESULT and e.is_error
    }
    assert flagged and flagged <= found
    assert len(found) <= len(flagged) + 3  # few false alarms


def test_trace_ids_are_the_plugin_join_key(big_observations):
    first_user = next(r for r in _jsonl(BIG_SESSION) if r.get("type") == "user")
    with FakeLangfuse(big_observations) as fake:
        session = LangfuseSource(BIG_ID, client=fake.client()).load()
    assert session.extra["langfuse"]["trace_ids"][0] == trace_id_for(BIG_ID, first_user["uuid"])
    assert session.extra["num_turns"] == 5  # 5 non-meta user rows


@pytest.mark.parametrize("style", ["turn", "legacy"])
def test_old_plugin_names_give_the_same_events(style):
    path = require(SPOTTER / "tool_heavy.jsonl")
    current = convert_transcript(path)
    old = convert_transcript(path, style=style)
    assert {o["name"] for o in old} != {o["name"] for o in current}
    sid = current[0]["sessionId"]
    with FakeLangfuse(current) as fake:
        a = LangfuseSource(sid, client=fake.client()).load()
    with FakeLangfuse(old) as fake:
        b = LangfuseSource(sid, client=fake.client()).load()
    assert [(e.kind, e.text, e.tool_name) for _, e in a.iter_events()] == [
        (e.kind, e.text, e.tool_name) for _, e in b.iter_events()
    ]
    assert sum(1 for _, e in b.iter_events() if e.kind == EventKind.TOOL_CALL) > 5


def test_non_claude_code_trace_renders():
    with FakeLangfuse(generic_trace()) as fake:
        s = LangfuseSource("generic-session-1", client=fake.client()).load()
    kinds = [e.kind for e in s.events]
    assert kinds == [
        EventKind.PROMPT,
        EventKind.SYSTEM,
        EventKind.ASSISTANT,
        EventKind.SYSTEM,
        EventKind.API_ERROR,
        EventKind.ASSISTANT,
    ]
    assert "What is 2+2?" in s.events[0].text
    assert s.events[1].text.startswith("retriever search-docs:")
    assert s.events[2].text == "2+2 = 4" and s.events[2].model == "gpt-5-mini"
    assert s.events[4].text == "upstream 500" and s.events[4].is_error
    assert s.events[5].text == "The answer is 4."
    assert s.usage.input_tokens == 20 and s.cost_usd == pytest.approx(0.0001)


def test_unknown_session_is_a_clear_error():
    with FakeLangfuse(generic_trace()) as fake, pytest.raises(EmptySessionError) as err:
        LangfuseSource("nope", client=fake.client()).load()
    assert str(err.value) == f"no observations for session nope in Langfuse at {HOST}"


def test_429_honours_retry_after_then_succeeds(fast_retry_waits):
    with FakeLangfuse(generic_trace()) as fake:
        fake.fail("observations", httpx.Response(429, headers={"Retry-After": "7"}, json={}))
        s = LangfuseSource("generic-session-1", client=fake.client()).load()
    assert fake.calls["observations"] == 2
    assert fast_retry_waits == [7.0]
    assert s.n_events == 6


def test_5xx_is_retried_with_backoff(fast_retry_waits):
    with FakeLangfuse(generic_trace()) as fake:
        fake.fail(
            "observations",
            httpx.Response(503, json={"message": "busy"}),
            httpx.Response(502, json={}),
        )
        LangfuseSource("generic-session-1", client=fake.client()).load()
    assert fake.calls["observations"] == 3
    assert fast_retry_waits == [1.0, 2.0]  # exponential backoff, no Retry-After


def test_persistent_5xx_becomes_source_error():
    with FakeLangfuse(generic_trace()) as fake:
        fake.fail("observations", *[httpx.Response(500, json={"message": "boom"})] * 5)
        with pytest.raises(SourceError, match="HTTP 500: boom"):
            LangfuseSource("generic-session-1", client=fake.client()).load()
    assert fake.calls["observations"] == 5


def test_timeout_then_success():
    import respx

    body = {"data": [], "meta": {}}
    with respx.mock(base_url=HOST) as mock:
        route = mock.get("/api/public/v2/observations")
        route.side_effect = [httpx.ReadTimeout("slow"), httpx.Response(200, json=body)]
        client = FakeLangfuse().client()
        with pytest.raises(EmptySessionError):
            LangfuseSource("s", client=client).load()
    assert route.call_count == 2


def test_401_names_the_env_vars():
    with FakeLangfuse(generic_trace()) as fake, pytest.raises(CredentialsError) as err:
        LangfuseSource("generic-session-1", client=fake.client(secret="wrong")).load()
    for var in ("LANGFUSE_PUBLIC_KEY", "LANGFUSE_SECRET_KEY", "LANGFUSE_BASE_URL"):
        assert var in str(err.value)
    assert fake.calls["observations"] == 1  # 401 is never retried


def test_client_from_env(monkeypatch):
    with pytest.raises(CredentialsError, match="LANGFUSE_PUBLIC_KEY"):
        make_client()
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk-lf-test")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk-lf-test")
    monkeypatch.setenv("LANGFUSE_HOST", HOST + "/")
    from scorer.settings import get_settings

    get_settings.cache_clear()
    with FakeLangfuse(generic_trace()) as fake:
        s = LangfuseSource("generic-session-1").load()  # client=None → env
    assert fake.calls["observations"] == 1 and s.origin.startswith(HOST + "/project/")


def test_enrich_local_uses_the_jsonl(big_observations, tmp_path):
    pytest.importorskip("scorer.sources.claude_code").__dict__.get(
        "ClaudeCodeSource"
    ) or pytest.skip("ClaudeCodeSource not available yet")
    with FakeLangfuse(big_observations) as fake:
        s = LangfuseSource(
            BIG_ID, client=fake.client(), enrich_local=True, projects_root=BIG_SESSION.parents[1]
        ).load()
    assert s.source != "langfuse"
    assert s.extra["langfuse"]["url"].endswith(f"/sessions/{BIG_ID}")
    assert any(
        e.kind == EventKind.THINKING or e.kind == EventKind.TOOL_RESULT for _, e in s.iter_events()
    )


def test_io_and_failure_helpers():
    assert io_text('{"role":"assistant","content":[{"type":"text","text":"hi"}]}') == "hi"
    assert io_text('"plain"') == "plain" and io_text("not json {") == "not json {"
    assert io_text('{"role":"tool","tool_results":[]}') == ""
    assert detect_failure("Exit code 2\nboom") == (True, 2)
    assert detect_failure("Exit code 0") == (False, 0)
    assert detect_failure("<tool_use_error>File not found</tool_use_error>")[0]
    assert detect_failure("Error: no such file")[0]
    assert detect_failure("all good") == (False, None)


# --- issue 12 item 7 ---------------------------------------------------------------------


def test_deep_link_url_encodes_session_ids():
    from scorer.sources.langfuse import session_url

    url = session_url("https://lf.test/", "proj 1", "team/a b#1?x=2")
    assert url == "https://lf.test/project/proj%201/sessions/team%2Fa%20b%231%3Fx%3D2"


def test_json_looking_tool_output_is_kept_whole():
    from scorer.sources.langfuse import tool_output_text

    api_reply = json.dumps({"message": "ok", "data": {"items": [1, 2]}, "status": 200})
    assert tool_output_text(json.dumps(api_reply)) == api_reply  # v2: a JSON-encoded string
    assert json.loads(tool_output_text(api_reply)) == json.loads(api_reply)  # decoded once
    skill = json.dumps({"result": "done", "injected_instructions": "..."})
    assert tool_output_text(skill) == "done"
    assert tool_output_text(json.dumps("Exit code 1\nboom")) == "Exit code 1\nboom"


def test_json_tool_output_reaches_the_event_whole():
    obs = generic_trace()
    api_reply = {"message": "created", "id": 42, "url": "https://x.test/42"}
    obs.append(
        {
            **obs[1],
            "id": "tool-json",
            "type": "TOOL",
            "name": "Tool: WebFetch",
            "parentObservationId": "root",
            "isRootObservation": False,
            "output": json.dumps(json.dumps(api_reply)),
        }
    )
    with FakeLangfuse(obs) as fake:
        session = LangfuseSource("generic-session-1", client=fake.client()).load()
    result = next(e for _, e in session.iter_events() if e.tool_name == "WebFetch" and e.text)
    assert json.loads(result.text) == api_reply


@pytest.mark.parametrize("branch", [2026, 3.5, True, "main"])
def test_non_string_git_branch_metadata_is_accepted(branch):
    obs = generic_trace()
    obs[0] = {**obs[0], "metadata": {"git_branch": branch, "cwd": "/w/app"}}
    with FakeLangfuse(obs) as fake:
        session = LangfuseSource("generic-session-1", client=fake.client()).load()
    assert session.git_branches == [str(branch).lower() if branch is True else str(branch)]
