"""`scorer view` on a big store: file size, generation time and page load time.

    .venv/bin/python benchmarks/bench_viewer.py [--sessions 5000] [--baseline 500] [--no-browser]

Fills a temporary store with N scored sessions whose timelines are built from real
rendered events (the transcripts in ../shared/data when present, else the bundled demo
session), sampled to a realistic length (log-normal, median 120 events, at most 2,000).
Then it times exactly what each goal names:

- generation: `scorer view` end to end (read the store, render the page, write the file);
- size: the written file;
- page load: headless Chromium from navigation to the index rendered (`loadEventEnd`,
  then the first table row present), and opening one session until its cited event is
  highlighted (decompressing that session's timeline).

The same is measured for a `--baseline` store in the same run; the ratios show how the
numbers scale with the store size.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

from typer.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.cli.main import app
from scorer.jobs.score import prepare
from scorer.models import EvidenceRef, SessionInfo, TimelineEvent
from scorer.settings import get_settings
from scorer.sinks.store import ScoreStore
from scorer.sources import resolve
from tests.sinks.cards import make_card

REPO = Path(__file__).resolve().parents[1]

SHARED = (REPO / ".." / "shared" / "data" / "claude-code-projects").resolve()
LABELS = {"goal_achievement": ["failed", "partial", "complete", "exceeded"]}
ERRORS = ["poor", "struggled", "recovered", "prevented"]


def event_pool() -> list[str]:
    """Rendered (redacted) event texts from real transcripts, or the demo session."""
    paths = sorted(SHARED.glob("*/*.jsonl")) if SHARED.exists() else []
    paths = paths or [REPO / "examples" / "demo-session.jsonl"]
    texts: list[str] = []
    for path in paths:
        texts += [e.text for e in prepare(resolve(str(path)).load()).events]
    return texts


def fill(store_path: Path, n: int, pool: list[str], seed: int = 7) -> float:
    rng = random.Random(seed)
    began = time.perf_counter()
    with ScoreStore(store_path) as store:
        for i in range(n):
            length = min(2000, max(5, int(rng.lognormvariate(4.8, 0.9))))
            start = rng.randrange(0, max(1, len(pool) - length))
            texts = (pool * (1 + length // max(1, len(pool))))[start : start + length]
            timeline = [TimelineEvent(k + 1, 0, t) for k, t in enumerate(texts)]
            values = {
                "goal_achievement": rng.choice(LABELS["goal_achievement"]),
                "error_handling": rng.choice(ERRORS),
                **{d: rng.randint(1, 5) for d in ("tool_efficiency", "process_adherence")},
                **{d: rng.randint(1, 5) for d in ("context_efficiency", "output_quality")},
            }
            card = make_card(
                f"bench-{i:05d}",
                values=values,
                rationale=rng.choice(pool)[:400],
                session=SessionInfo(
                    started_at=_day(i, n),
                    project=f"project-{i % 12}",
                    branch="main",
                    agent_model="claude-opus-4-5",
                    n_events=length,
                ),
            )
            for score in card.scores.values():
                if score.evidence:
                    cited = rng.randint(1, length)
                    score.evidence = [EvidenceRef(event=cited, quote=texts[cited - 1][:60])]
            card.attach_timeline(timeline)
            store.save(card)
    return time.perf_counter() - began


def _day(i: int, n: int):
    from datetime import UTC, datetime, timedelta

    return datetime(2026, 1, 5, tzinfo=UTC) + timedelta(days=300 * i / n, minutes=i)


def generate(home: Path, out: Path) -> float:
    os.environ["SCORER_HOME"] = str(home)
    get_settings.cache_clear()
    began = time.perf_counter()
    result = CliRunner().invoke(app, ["view", "-o", str(out)])
    elapsed = time.perf_counter() - began
    if result.exit_code != 0:
        raise SystemExit(result.stderr)
    return elapsed


def browser_times(page: Path) -> tuple[float, float, float]:
    """(load event ms, index rendered ms, open session + highlight ms) in headless Chromium."""
    sys.path.insert(0, str(REPO / "tests"))
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.view.helpers import browser

    with browser() as driver:
        driver.set_page_load_timeout(300)
        began = time.perf_counter()
        driver.get(page.as_uri())
        WebDriverWait(driver, 300).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, "#index-body tr.row")
        )
        index_ms = (time.perf_counter() - began) * 1000
        load_ms = driver.execute_script(
            "const t = performance.getEntriesByType('navigation')[0];"
            " return t.loadEventEnd - t.startTime;"
        )
        run_id = driver.find_element(By.CSS_SELECTOR, "#index-body tr.row").get_attribute(
            "data-href"
        )
        driver.execute_script(f"location.hash = '{run_id}';")
        link = WebDriverWait(driver, 60).until(
            lambda d: d.find_element(By.CSS_SELECTOR, "a.ev-link")
        )
        began = time.perf_counter()
        link.click()
        WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, ".ev.hl"))
        open_ms = (time.perf_counter() - began) * 1000
    return float(load_ms), index_ms, open_ms


def measure(n: int, pool: list[str], tmp: Path, use_browser: bool) -> dict[str, float]:
    home = tmp / f"home-{n}"
    fill_s = fill(home / "scores.sqlite3", n, pool)
    page = tmp / f"view-{n}.html"
    gen_s = generate(home, page)
    row = {"n": n, "fill_s": fill_s, "gen_s": gen_s, "mb": page.stat().st_size / 1e6}
    store_mb = (home / "scores.sqlite3").stat().st_size / 1e6
    row["store_mb"] = store_mb
    if use_browser:
        row["load_ms"], row["index_ms"], row["open_ms"] = browser_times(page)
    return row


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--baseline", type=int, default=500)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    pool = event_pool()
    print(f"event pool: {len(pool):,} real rendered events")
    with tempfile.TemporaryDirectory() as tmp:
        rows = [
            measure(n, pool, Path(tmp), not args.no_browser) for n in (args.baseline, args.sessions)
        ]
    keys = [k for k in rows[0] if k != "n"]
    print(f"{'sessions':>9} " + " ".join(f"{k:>9}" for k in keys))
    for row in rows:
        print(f"{row['n']:>9} " + " ".join(f"{row[k]:>9.2f}" for k in keys))
    base, big = rows
    ratio = " ".join(f"{big[k] / base[k] if base[k] else float('nan'):>9.2f}" for k in keys)
    print(f"{'ratio':>9} {ratio}   (x{big['n'] / base['n']:.0f} sessions)")


if __name__ == "__main__":
    main()
