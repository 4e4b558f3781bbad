"""Regenerate the viewer screenshots in docs/ (headless Chromium, no network).

    .venv/bin/python docs/make_screenshots.py

The store is built from the bundled, self-written demo session only (never from real
data): it is scored by the offline heuristic judge through the real pipeline, then copied
as 24 sessions over six weeks with varied scores and projects. The heuristic cites events
without quotes, so for the picture each citation gets the first words of its event as the
quote, as the LLM judge's citations carry.
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
from scorer.models import DimensionScore
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.view.helpers import CHROMIUM, FLAGS

REPO = Path(__file__).resolve().parents[1]

DEMO = REPO / "examples" / "demo-session.jsonl"
PROJECTS = ["tinycalc", "billing-api", "web-console", "etl-jobs"]


def build_store(path: Path) -> int:
    prepared = prepare(resolve(str(DEMO)).load())
    base = judge_prepared(prepared, "heuristic")
    texts = {e.index: e.text for e in prepared.events}
    rubric, rng = default_rubric(), random.Random(3)
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
            for dim in rubric.dimensions:
                old = card.scores[dim.name]
                if dim.categories:
                    cat = rng.choice(dim.categories[1:] if i % 5 else dim.categories[:2])
                    value, label = float(cat.value), cat.label
                else:
                    value, label = float(rng.choice([2, 3, 4, 4, 5, 5])), None
                card.scores[dim.name] = old.model_copy(
                    update={
                        "value": value,
                        "label": label,
                        "normalized": rubric.normalize(dim.name, value),
                    }
                )
                for ref in card.scores[dim.name].evidence:
                    ref.quote = " ".join(texts.get(ref.event, "").split()[1:9])
            overall = rubric.overall(
                {n: s.normalized for n, s in card.scores.items() if n != OVERALL}
            )
            card.scores[OVERALL] = DimensionScore(
                name=OVERALL,
                value=overall,
                normalized=overall,
                rationale="weighted mean of the six normalised dimensions",
            )
            store.save(card)
    return 24


def shoot(page: Path, fragment: str, out: Path, height: int = 820) -> None:
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                CHROMIUM,
                *FLAGS,
                f"--user-data-dir={profile}",
                f"--window-size=1400,{height}",
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
        build_store(Path(tmp) / "scores.sqlite3")
        page = Path(tmp) / "view.html"
        scorer = Path(sys.executable).with_name("scorer")
        subprocess.run([str(scorer), "view", "-o", str(page)], check=True)
        with ScoreStore(Path(tmp) / "scores.sqlite3") as store:
            run_id = store.runs()[5].run_id
        shoot(page, f"#/run/{run_id}/e/12", REPO / "docs" / "viewer-session.png")
        shoot(page, "#/", REPO / "docs" / "viewer-index.png", height=560)
        shoot(page, "#/trends", REPO / "docs" / "viewer-trends.png", height=760)
    print("wrote docs/viewer-session.png, docs/viewer-index.png, docs/viewer-trends.png")


if __name__ == "__main__":
    main()
