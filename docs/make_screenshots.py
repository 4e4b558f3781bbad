"""Regenerate the viewer screenshots in docs/ (headless Chromium, no network).

    .venv/bin/python docs/make_screenshots.py

The store is built from the bundled, self-written demo session only (never from real
data): it is scored by the offline heuristic judge through the real pipeline, then copied
as 24 sessions over six weeks with varied scores, projects and agent models, plus a
second run of one session under a later rubric version (for the compare view). The
heuristic cites events without quotes, so for the picture each citation gets the first
words of its event as the quote, as the LLM judge's citations carry.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.jobs.score import judge_prepared, prepare
from scorer.judge.rubric import OVERALL, default_rubric
from scorer.models import DimensionScore, Scorecard
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.view.helpers import CHROMIUM, FLAGS

REPO = Path(__file__).resolve().parents[1]

DEMO = REPO / "examples" / "demo-session.jsonl"
PROJECTS = ["tinycalc", "billing-api", "web-console", "etl-jobs"]


AGENTS = ["claude-opus-4-6", "claude-sonnet-4-6"]
_P_RANGE = {
    "failed": (0.02, 0.2),
    "partial": (0.2, 0.6),
    "complete": (0.55, 0.95),
    "exceeded": (0.7, 0.98),
}
"""Goal probabilities per goal label for the pictures (made up, like the scores)."""


def _vary(card: Scorecard, rng: random.Random, few_good: bool, texts: dict[int, str]) -> None:
    """Random scores (and quotes from the cited events) on a copy of the demo card."""
    rubric = default_rubric()
    for dim in rubric.dimensions:
        old = card.scores[dim.name]
        if dim.categories:
            cat = rng.choice(dim.categories[:2] if few_good else dim.categories[1:])
            value, label = float(cat.value), cat.label
        else:
            value, label = float(rng.choice([2, 3, 4, 4, 5, 5])), None
        card.scores[dim.name] = old.model_copy(
            update={"value": value, "label": label, "normalized": rubric.normalize(dim.name, value)}
        )
        for ref in card.scores[dim.name].evidence:
            ref.quote = " ".join(texts.get(ref.event, "").split()[1:9])
    # A goal probability that goes with the goal label, as the fitted model's would.
    low, high = _P_RANGE[card.scores["goal_achievement"].label or "partial"]
    card.goal_probability = round(rng.uniform(low, high), 4)
    overall = rubric.overall({n: s.normalized for n, s in card.scores.items() if n != OVERALL})
    card.scores[OVERALL] = DimensionScore(
        name=OVERALL,
        value=overall,
        normalized=overall,
        rationale="weighted mean of the six normalised dimensions",
    )


def build_store(path: Path) -> tuple[int, int]:
    """24 sessions over six weeks, and a second run of session 5 under a later rubric
    version; returns the two run ids of session 5."""
    prepared = prepare(resolve(str(DEMO)).load())
    base = judge_prepared(prepared, "heuristic")
    texts = {e.index: e.text for e in prepared.events}
    rng = random.Random(3)
    with ScoreStore(path) as store:
        for i in range(24):
            card = base.model_copy(deep=True)
            card.attach_timeline(base.timeline or [])
            card.session_id = f"{rng.getrandbits(32):08x}-demo-{i:02d}"
            start = datetime(2026, 10, 12, 9, tzinfo=UTC) + timedelta(
                hours=41 * i + rng.randint(0, 9)
            )
            card.session.started_at, card.created_at = start, start + timedelta(hours=1)
            card.session.ended_at = start + timedelta(minutes=2)
            card.session.project = PROJECTS[i % len(PROJECTS)]
            card.session.agent_model = AGENTS[i % 3 == 0]
            card.session.agent_models = [card.session.agent_model]
            _vary(card, rng, few_good=i % 5 == 0, texts=texts)
            run_id = store.save(card)
            if i == 5:
                first, again = run_id, card.model_copy(deep=True)
        again.attach_timeline(base.timeline or [])
        again.rubric_version += "-next"
        again.created_at += timedelta(days=20)
        _vary(again, rng, few_good=False, texts=texts)
        second = store.save(again)
    return first, second


def shoot(page: Path, fragment: str, out: Path, height: int = 820, width: int = 1400) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--hide-scrollbars",
                "--virtual-time-budget=4000",
                f"--screenshot={out}",
                page.as_uri() + fragment,
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )


def main() -> None:
    if CHROMIUM is None:
        raise SystemExit("chromium is needed: apt-get install chromium")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["SCORER_HOME"] = tmp
        first, second = build_store(Path(tmp) / "scores.sqlite3")
        page = Path(tmp) / "view.html"
        scorer = Path(sys.executable).with_name("scorer")
        subprocess.run([str(scorer), "view", "-o", str(page)], check=True)
        docs = REPO / "docs"
        shots = [
            (f"#/run/{second}/e/12", "viewer-session.png", 820, 1400),
            ("#/", "viewer-index.png", 560, 1400),
            ("#/trends", "viewer-trends.png", 760, 1400),
            (f"#/compare/{first}/{second}", "viewer-compare.png", 900, 1400),
            (f"#/cohorts?by=agent&a={AGENTS[0]}&b={AGENTS[1]}", "viewer-cohorts.png", 560, 1400),
            ("#/", "viewer-index-800.png", 900, 800),
            (f"#/run/{second}?show=tools", "viewer-session-800.png", 1100, 800),
        ]
        for fragment, name, height, width in shots:
            shoot(page, fragment, docs / name, height=height, width=width)
    print("wrote", ", ".join(f"docs/{name}" for _, name, _, _ in shots))


if __name__ == "__main__":
    main()
