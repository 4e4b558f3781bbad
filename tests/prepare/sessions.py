"""Small hand-built sessions for the prepare tests."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from scorer.models import Event, EventKind, Session, SourceKind, TokenUsage


class Builder:
    """Appends numbered events; `call()` returns the tool_use_id for `result()`."""

    def __init__(self) -> None:
        self.n = 0

    def ev(self, kind: EventKind, text: str = "", **kw: Any) -> Event:
        self.n += 1
        return Event(index=self.n, kind=kind, text=text, **kw)

    def call(self, name: str, **inp: Any) -> Event:
        return self.ev(
            EventKind.TOOL_CALL, tool_name=name, tool_use_id=f"tu{self.n + 1}", tool_input=inp
        )

    def result(self, call: Event, text: str, **kw: Any) -> Event:
        return self.ev(EventKind.TOOL_RESULT, text, tool_use_id=call.tool_use_id, **kw)


def sample_session() -> Session:
    """A session touching every renderer branch: tools, errors, subagent, markers."""
    b = Builder()
    events: list[Event] = [b.ev(EventKind.PROMPT, "Fix the failing test in src/x.py")]
    events.append(b.ev(EventKind.THINKING, "Let me   look\n\n at the   test first."))
    read = b.call("Read", file_path="src/x.py", offset=1, limit=200)
    events += [read, b.result(read, "def f():\n    return 1\n")]
    run = b.call("Bash", command="pytest -q tests/")
    long_out = "\n".join(f"line {i} of output" for i in range(2_000))
    events += [
        run,
        b.result(
            run,
            "Exit code 1\n" + long_out + "\n1 failed, 3 passed in 0.52s",
            is_error=True,
            exit_code=1,
        ),
    ]
    edit = b.call("Edit", file_path="src/x.py", old_string="a\nb\nc", new_string="1\n2\n3\n4\n5")
    events += [edit, b.result(edit, "The file src/x.py has been updated.")]
    task = b.call("Task", description="check docs", subagent_type="Explore", prompt="look")
    events.append(task)
    sub = b.ev(EventKind.SUBAGENT, "check docs", agent_id="a1b2", tool_use_id=task.tool_use_id)
    sub_prompt = b.ev(EventKind.PROMPT, "look at the docs")
    grep = b.call("Grep", pattern="def f", path="src")
    sub.children = [sub_prompt, grep, b.result(grep, "src/x.py:1")]
    events += [sub, b.result(task, "docs say f returns 2")]
    events.append(
        b.ev(
            EventKind.COMPACTION, "summary of before", meta={"trigger": "auto", "preTokens": 150000}
        )
    )
    events.append(b.ev(EventKind.API_ERROR, "Overloaded", is_error=True, meta={"status": 529}))
    events.append(b.ev(EventKind.INTERRUPTION, "Request interrupted by user"))
    events.append(b.ev(EventKind.NOTIFICATION, "background shell finished"))
    custom = b.call("mcp__thing__do", alpha=1, beta="x" * 500)
    events.append(custom)
    rerun = b.call("Bash", command="pytest -q tests/")
    events += [rerun, b.result(rerun, "4 passed in 0.40s")]
    events.append(b.ev(EventKind.ASSISTANT, "Fixed it: all tests pass now."))
    return Session(
        session_id="s1",
        source=SourceKind.CLAUDE_CODE,
        project="demo",
        git_branches=["main"],
        models=["claude-sonnet-4-5"],
        started_at=datetime(2026, 1, 1, 10, 0, tzinfo=UTC),
        ended_at=datetime(2026, 1, 1, 10, 12, 30, tzinfo=UTC),
        usage=TokenUsage(input_tokens=100, output_tokens=50, cache_read_tokens=900),
        events=events,
    )
