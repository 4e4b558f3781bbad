"""A small store of scored sessions over three weeks, for export, trends and the viewer."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from scorer.models import SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card, unscored_card

MONDAY = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)  # ISO week 2026-W45
GOALS = ["complete", "partial", "failed", "exceeded", "complete", "partial"]


def timeline(n: int = 30) -> list[TimelineEvent]:
    return [
        TimelineEvent(i, 0, f"#{i} tool_call Bash: step {i} of the plan") for i in range(1, n + 1)
    ]


def fill_store(path: Path | None = None, n: int = 6) -> list[str]:
    """`n` scored sessions, two per week from 2026-W45, plus one unscored; returns ids."""
    ids = []
    with ScoreStore(path) as store:
        for i in range(n):
            started = MONDAY + timedelta(days=3 * i + (i % 2))
            sid = f"sess-{i:02d}"
            card = make_card(
                sid,
                values={"goal_achievement": GOALS[i % len(GOALS)], "tool_efficiency": 1 + i % 5},
                created_at=started + timedelta(hours=2),
                session=SessionInfo(
                    started_at=started,
                    project="alpha" if i % 2 == 0 else "beta",
                    branch="main",
                    agent_model="claude-opus-4-5",
                    n_events=30,
                ),
            )
            card.attach_timeline(timeline())
            store.save(card)
            ids.append(sid)
        store.save(unscored_card("sess-unscored", created_at=MONDAY))
    return ids
