"""The goal probability in the viewer, in headless Chromium (issue 31 item 2): a sortable
index column with a range filter kept in the URL and its mean (the expected success rate)
in the summary row; the card page with the second opinions and the judge's own label; two
runs and two cohorts side by side; the trend plot; all at 800 px without sideways scroll."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from statistics import mean

import pytest

from scorer.models import SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card
from tests.view.helpers import browser, css, require_browser, wait, write_view

pytestmark = pytest.mark.slow

SESSIONS = [
    # session, agent model, day of November 2026, goal, probability
    ("p-hi", "model-b", 10, "complete", 0.91),
    ("p-settled", "model-b", 11, "complete", 0.7312),
    ("p-low", "model-a", 2, "failed", 0.12),
    ("p-mid", "model-a", 3, "partial", 0.46),
    ("p-none", "model-a", 4, "partial", None),  # judged before the probability existed
]
SETTLED_META = {
    "goal_probability_model": "2026-11-28.2",
    "first_goal_probability": 0.61,
    "judge_goal": "partial",
    "second_opinions": [
        {"kind": "sample", "p": 0.8, "judge_goal": "complete", "cost_usd": 0.01},
        {"kind": "adversarial", "p": 0.7836, "judge_goal": "partial", "cost_usd": 0.01},
    ],
}
HEURISTIC_P = 0.40
"""An older heuristic run of `p-settled` (compare: A 0.40, B 0.73)."""


def _write_view(tmp_path: Path) -> tuple[str, dict[str, int]]:
    ids: dict[str, int] = {}
    with ScoreStore() as store:
        for sid, model, day, goal, p in SESSIONS:
            info = SessionInfo(
                title=f"task {sid}",
                project="billing",
                agent_model=model,
                started_at=datetime(2026, 11, day, 9, tzinfo=UTC),
            )
            if sid == "p-settled":
                old = make_card(sid, judge="heuristic", model=None, session=info,
                                goal_probability=HEURISTIC_P, values={"goal_achievement": "partial"},
                                created_at=datetime(2026, 11, 20, tzinfo=UTC))  # fmt: skip
                ids["p-settled-heuristic"] = store.save(old)
            card = make_card(
                sid,
                session=info,
                values={"goal_achievement": goal},
                goal_probability=p,
                created_at=datetime(2026, 11, 21, tzinfo=UTC),
            )
            if sid == "p-settled":
                card.meta.update(SETTLED_META)
            card.attach_timeline([TimelineEvent(1, 0, "#1 USER: fix it")])
            ids[sid] = store.save(card)
    out = tmp_path / "view.html"
    write_view(out)
    return out.as_uri(), ids


def _index_p(driver) -> list[str]:
    """The index rows' probability cells, top to bottom."""
    return [td.text for td in css(driver, '#index-body td[data-score="goal_probability"]')]


def _row(table, name: str) -> list[str]:
    from selenium.webdriver.common.by import By

    (row,) = table.find_elements(By.CSS_SELECTOR, f'tr[data-score="{name}"]')
    return [td.text for td in row.find_elements(By.TAG_NAME, "td")]


def test_the_index_sorts_filters_and_averages_the_probability(clean_env, tmp_path) -> None:
    require_browser()
    page, _ = _write_view(tmp_path)
    with browser() as driver:
        driver.get(page)
        wait(driver, lambda d: len(css(d, "#index-body tr.row")) == 6)
        head = css(driver, 'th[data-sort="goal_probability"]')[0]
        assert head.get_attribute("title") == "goal_probability"
        summary = css(driver, '#index-summary td[data-score="goal_probability"]')[0]
        known = [p for *_, p in SESSIONS if p is not None] + [HEURISTIC_P]
        assert summary.text == f"{mean(known):.2f}"
        assert "5 runs: the expected success rate" in summary.get_attribute("title")
        head.click()  # descending first; a run without one goes last either way
        assert _index_p(driver) == ["0.91", "0.73", "0.46", "0.40", "0.12", "–"]
        css(driver, 'th[data-sort="goal_probability"]')[0].click()
        assert _index_p(driver) == ["0.12", "0.40", "0.46", "0.73", "0.91", "–"]
        css(driver, "#f-pmin")[0].send_keys("0.4")
        css(driver, "#f-pmax")[0].send_keys("0.8")
        assert _index_p(driver) == ["0.40", "0.46", "0.73"]
        assert "3 runs" in css(driver, "#index-summary")[0].text
        url = driver.current_url
        assert "pmin=0.4" in url and "pmax=0.8" in url and "sort=goal_probability" in url
        driver.get("about:blank")
        driver.get(url)  # the range survives a reload and a shared link
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        assert _index_p(driver) == ["0.40", "0.46", "0.73"]
        assert css(driver, "#f-pmin")[0].get_attribute("value") == "0.4"
        assert driver.get_log("browser") == []


def test_the_card_page_shows_the_probability_with_its_second_opinions(clean_env, tmp_path):
    require_browser()
    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.get(f"{page}#/run/{ids['p-settled']}")
        row = wait(driver, lambda d: css(d, "#score-goal_probability")[0])
        above = driver.execute_script("return arguments[0].previousElementSibling.id", row)
        assert above == "score-goal_achievement"  # beside goal_achievement
        assert row.find_element("css selector", ".chip").text == "0.73"
        assert "by the fitted model 2026-11-28.2" in row.text
        opinions = {li.get_attribute("data-kind"): li.text for li in css(driver, "#opinions li")}
        assert opinions == {
            "first": "first verdict 0.61",
            "sample": "sample 0.80 → complete",
            "adversarial": "adversarial 0.78 → partial",
        }
        relabel = css(driver, "#score-goal_probability .relabel")[0].text
        assert relabel == "goal_achievement follows from it: complete (the judge said partial)"
        # A card without second opinions shows the probability alone; an old card, no row.
        driver.get(f"{page}#/run/{ids['p-hi']}")
        row = wait(driver, lambda d: css(d, "#score-goal_probability")[0])
        assert row.find_element("css selector", ".chip").text == "0.91"
        assert not css(driver, "#opinions") and not css(driver, ".relabel")
        driver.get(f"{page}#/run/{ids['p-none']}")
        wait(driver, lambda d: css(d, "#score-goal_achievement"))
        assert not css(driver, "#score-goal_probability")
        assert driver.get_log("browser") == []


def test_two_runs_and_two_cohorts_compare_the_expected_success_rate(clean_env, tmp_path):
    require_browser()
    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.get(f"{page}#/compare/{ids['p-settled-heuristic']}/{ids['p-settled']}")
        table = wait(driver, lambda d: css(d, "#compare table.cmp")[0])
        assert _row(table, "goal_probability") == ["goal_probability", "0.40", "0.73", "+0.33"]
        driver.get(f"{page}#/cohorts?by=agent&a=model-a&b=model-b")
        table = wait(driver, lambda d: css(d, "#cohorts table.cmp")[0])
        row = _row(table, "goal_probability")
        # A: p-low and p-mid (p-none has none); B: p-hi and p-settled's newest run.
        assert row[1:6] == [f"{mean([0.12, 0.46]):.2f}", "2", f"{mean([0.91, 0.7312]):.2f}",
                            "2", "+0.53"]  # fmt: skip
        assert _row(table, "overall_quality")[2] == "3"  # every session counts there
        assert row[7:] == ["", ""]  # no label counts for a probability
        assert "expected success rate" in css(driver, "#cohorts p.muted")[0].text
        assert driver.get_log("browser") == []


def test_the_trend_plots_include_the_expected_success_rate(clean_env, tmp_path) -> None:
    require_browser()
    page, _ = _write_view(tmp_path)
    with browser() as driver:
        driver.get(f"{page}#/trends")
        plot = wait(driver, lambda d: css(d, '.plot[data-plot="goal_probability"]')[0])
        assert "expected success rate" in plot.find_element("css selector", "h3").text
        titles = driver.execute_script(
            "return [...arguments[0].querySelectorAll('circle title')].map(t => t.textContent)",
            plot,
        )
        # W45: p-low, p-mid (p-none has none); W46: p-hi and p-settled (newest run)
        assert titles == [
            f"2026-W45: {mean([0.12, 0.46]):.3f} (n=2)",
            f"2026-W46: {mean([0.91, 0.7312]):.3f} (n=2)",
        ]
        assert "p(goal)" in css(driver, "#trends table")[0].text
        assert driver.get_log("browser") == []


@pytest.mark.parametrize(
    "fragment", ["#/", "#/run/{settled}", "#/cohorts?by=agent&a=model-a&b=model-b"]
)
def test_the_probability_pages_fit_800_px(clean_env, tmp_path, fragment) -> None:
    require_browser()
    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.set_window_size(800, 900)
        driver.get(page + fragment.format(settled=ids["p-settled"]))
        wait(driver, lambda d: css(d, "main section:not(.hidden) table"))
        sideways = driver.execute_script(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
        )
        wide = driver.execute_script(
            "return [...document.querySelectorAll('section:not(.hidden) .table-wrap')]"
            ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
        )
        assert sideways <= 0 and wide == 0, (fragment, sideways, wide)
        assert driver.get_log("browser") == []
