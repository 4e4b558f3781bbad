"""The automatic-scoring policy: the SCORER_HOOK_* settings and their decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from scorer.errors import ConfigError
from scorer.jobs.hook.policy import HookPolicy, count_tool_calls
from scorer.jobs.hook.request import MANUAL, HookRequest
from scorer.jobs.hook.start import quick_refusal
from scorer.settings import get_settings
from scorer.sources import resolve
from tests.conftest import require
from tests.jobs.hook.helpers import REAL, SHORT, real


def _request(event: str = "SessionEnd", cwd: str | None = "/home/dev/src/spotter") -> HookRequest:
    return HookRequest("s-1", Path("/t.jsonl"), event=event, cwd=cwd)


def test_defaults_and_every_knob_from_the_environment(monkeypatch):
    assert HookPolicy.from_settings(get_settings()) == HookPolicy()
    for name, value in {
        "SCORER_HOOK_ENABLED": "false",
        "SCORER_HOOK_EVENTS": " SessionEnd , Stop ",
        "SCORER_HOOK_STOP_DEBOUNCE": "30",
        "SCORER_HOOK_MIN_TOOL_CALLS": "10",
        "SCORER_HOOK_DAILY_COST_CAP": "1.5",
        "SCORER_HOOK_PROJECTS": "~/work/*, spotter",
        "SCORER_HOOK_IGNORE_PROJECTS": "*/secret-*",
        "SCORER_HOOK_JUDGE": "heuristic",
        "SCORER_HOOK_PUSH": "0",
        "SCORER_HOOK_MODE": "batch",
        "SCORER_HOOK_BATCH_SIZE": "20",
        "SCORER_HOOK_BATCH_MINUTES": "90",
    }.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    assert HookPolicy.from_settings(get_settings()) == HookPolicy(
        enabled=False,
        events=frozenset({"SessionEnd", "Stop"}),
        stop_debounce=30.0,
        min_tool_calls=10,
        daily_cost_cap=1.5,
        projects=("~/work/*", "spotter"),
        ignore_projects=("*/secret-*",),
        judge="heuristic",
        push=False,
        mode="batch",
        batch_size=20,
        batch_minutes=90.0,
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SCORER_HOOK_EVENTS", "SessionEnd,PreToolUse"),
        ("SCORER_HOOK_JUDGE", "gpt"),
        ("SCORER_HOOK_DAILY_COST_CAP", "-1"),
        ("SCORER_HOOK_MIN_TOOL_CALLS", "many"),
        ("SCORER_HOOK_MODE", "later"),
        ("SCORER_HOOK_BATCH_SIZE", "0"),
    ],
)
def test_a_bad_value_names_its_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    with pytest.raises(ConfigError, match=name):
        get_settings()


def test_the_kill_switch_and_the_trigger_events():
    policy = HookPolicy()
    assert policy.refuse(_request()) is None
    assert "not a trigger" in policy.refuse(_request("Stop"))
    assert HookPolicy(events=frozenset({"Stop"})).refuse(_request("Stop")) is None
    assert policy.refuse(_request(MANUAL)) is None  # a named session has no event to filter
    off = HookPolicy(enabled=False)
    assert "SCORER_HOOK_ENABLED" in off.refuse(_request())
    assert "SCORER_HOOK_ENABLED" in off.refuse(_request(MANUAL))


def test_project_lists_match_the_path_the_home_form_or_the_name(monkeypatch):
    monkeypatch.setenv("HOME", "/home/dev")
    allow = HookPolicy(projects=("~/src/*",))
    assert allow.refuse(_request(cwd="/home/dev/src/spotter")) is None
    assert "not in SCORER_HOOK_PROJECTS" in allow.refuse(_request(cwd="/tmp/spotter"))
    assert HookPolicy(projects=("spotter",)).refuse(_request(cwd="/tmp/spotter")) is None
    assert HookPolicy(projects=("/tmp/*",)).refuse(_request(cwd="/tmp/spotter")) is None
    ignore = HookPolicy(projects=("~/src/*",), ignore_projects=("*/secret*",))
    assert "ignored" in ignore.refuse(_request(cwd="/home/dev/src/secret-app"))
    assert HookPolicy(projects=("x",)).refuse(_request(cwd=None)) is None  # decided later


def test_size_and_cost_decisions_say_why():
    policy = HookPolicy(min_tool_calls=3, daily_cost_cap=1.0)
    assert policy.too_small(3) is None
    assert policy.too_small(2) == "2 tool call(s), fewer than SCORER_HOOK_MIN_TOOL_CALLS=3"
    assert policy.over_cap(0.5, 0.5) is None
    assert policy.over_cap(0.9, 0.2) == (
        "the daily cost cap would be passed (spent $0.90 today + ~$0.20 > "
        "SCORER_HOOK_DAILY_COST_CAP=$1.00)"
    )
    assert HookPolicy(daily_cost_cap=0).over_cap(0, 0.01) is not None


def test_a_batch_queue_is_due_at_its_size_or_its_age():
    policy = HookPolicy(mode="batch", batch_size=3, batch_minutes=30)
    assert policy.batch_due(2, 29 * 60) is None
    assert policy.batch_due(3, 0) == "3 session(s) queued (SCORER_HOOK_BATCH_SIZE=3)"
    assert policy.batch_due(1, 31 * 60) == (
        "the oldest waited 31 min (SCORER_HOOK_BATCH_MINUTES=30)"
    )
    assert policy.batch_due(0, 10**6) is None
    assert HookPolicy(mode="direct").batch_due(1, 0) is not None  # left from batch mode


def test_tool_calls_are_counted_with_the_subagents(cc_projects):
    relative = next(r for r in REAL if r.endswith("/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"))
    session = resolve(str(require(real(relative)))).load()
    top = sum(1 for e in session.events if e.kind == "tool_call")
    assert count_tool_calls(session.events) == 254 > top
    assert count_tool_calls(resolve(str(real(SHORT[0]))).load().events) == 2


@pytest.mark.parametrize(
    ("env", "event", "refused"),
    [
        ({}, "SessionEnd", False),
        ({}, "Stop", True),
        ({}, MANUAL, False),
        ({"SCORER_HOOK_EVENTS": "SessionEnd,Stop"}, "Stop", False),
        ({"SCORER_HOOK_EVENTS": "Stop"}, "SessionEnd", True),
        ({"SCORER_HOOK_ENABLED": "0"}, "SessionEnd", True),
        ({"SCORER_HOOK_ENABLED": "off"}, MANUAL, True),
        ({"SCORER_HOOK_ENABLED": "yes"}, "SessionEnd", False),
    ],
)
def test_the_foreground_refuses_as_the_settings_would(monkeypatch, env, event, refused):
    """The hook's stdlib-only pre-check agrees with the policy built from the settings."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    get_settings.cache_clear()
    policy = HookPolicy.from_settings(get_settings())
    assert (policy.refuse(_request(event)) is not None) is refused
    assert (quick_refusal(event, env) is not None) is refused
