"""The viewer in a real browser (headless Chromium): clicking an evidence link shows,
scrolls to and highlights the cited event with its quote; the URL fragment takes the same
path; timelines render lazily; an empty store says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from scorer.models import EvidenceRef, SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card
from tests.view.helpers import browser, require_browser, wait, write_view

pytestmark = pytest.mark.slow
BIG = 1_000


def _write_view(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """Two sessions: a short one citing #12 and a 1,000-event one citing #900."""
    short = make_card("short-1", session=SessionInfo(project="alpha", n_events=30))
    short.attach_timeline([TimelineEvent(i, 0, f"#{i} event text {i}") for i in range(1, 31)])
    big = make_card("big-1", session=SessionInfo(project="beta", n_events=BIG))
    big.scores["tool_efficiency"].evidence = [EvidenceRef(event=900, quote="ran pytest -x")]
    big.attach_timeline([TimelineEvent(i, i % 2, f"#{i} step {i}") for i in range(1, BIG + 1)])
    with ScoreStore() as store:
        ids = {"short-1": store.save(short), "big-1": store.save(big)}
    out = tmp_path / "view.html"
    write_view(out)
    return out, ids


def _visible_in_pane(driver, element) -> bool:
    return driver.execute_script(
        "const e = arguments[0].getBoundingClientRect(),"
        " p = document.getElementById('timeline').getBoundingClientRect();"
        "return e.top >= p.top && e.bottom <= p.bottom && e.height > 0;",
        element,
    )


def test_clicking_evidence_highlights_the_event_with_its_quote(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.common.by import By

    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.get(page.as_uri())
        rows = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#index-body tr.row"))
        assert len(rows) == 2
        driver.find_element(By.CSS_SELECTOR, f'a[href="#/run/{ids["short-1"]}"]').click()
        link = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, 'a.ev-link[data-event="12"]'))
        assert "3 passed" in link.find_element(By.XPATH, "..").text  # quote beside the score
        wait(driver, lambda d: d.find_elements(By.ID, "ev-12"))
        link.click()
        event = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#ev-12.hl"))
        assert "event text 12" in event.text
        assert "3 passed" in event.find_element(By.CSS_SELECTOR, ".cite").text
        assert _visible_in_pane(driver, event)
        assert driver.current_url.endswith(f"#/run/{ids['short-1']}/e/12")
        assert len(driver.find_elements(By.CSS_SELECTOR, ".ev.hl")) == 1


def test_fragment_takes_the_same_path_and_timelines_render_lazily(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.common.by import By

    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.get(f"{page.as_uri()}#/run/{ids['big-1']}")
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#timeline .ev"))
        assert len(driver.find_elements(By.CSS_SELECTOR, "#timeline .ev")) < BIG  # lazy
        assert not driver.find_elements(By.ID, "ev-900")
        driver.find_element(By.CSS_SELECTOR, 'a.ev-link[data-event="900"]').click()
        event = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#ev-900.hl"))
        assert "ran pytest -x" in event.text and _visible_in_pane(driver, event)
        # Opening the URL of an evidence link directly does exactly what the click did.
        driver.get("about:blank")
        driver.get(f"{page.as_uri()}#/run/{ids['short-1']}/e/12")
        event = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "#ev-12.hl"))
        assert "3 passed" in event.text and _visible_in_pane(driver, event)
        # A cited event that was never rendered says so instead of failing silently.
        driver.find_element(By.CSS_SELECTOR, 'a.ev-link[data-event="99"]').click()
        missing = "#99 is not in the stored timeline"
        notes = wait(
            driver,
            lambda d: [
                n for n in d.find_elements(By.CSS_SELECTOR, "#timeline .cite") if missing in n.text
            ],
        )
        assert len(notes) == 1


def test_index_filters_sort_and_trends(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    page, _ = _write_view(tmp_path)
    with browser() as driver:
        driver.get(page.as_uri())
        wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#index-body tr.row"))
        Select(driver.find_element(By.ID, "f-project")).select_by_value("beta")
        rows = driver.find_elements(By.CSS_SELECTOR, "#index-body tr.row")
        assert len(rows) == 1 and "beta" in rows[0].text
        driver.find_element(By.ID, "f-q").send_keys("no-such-session")
        assert "0 of 2" in driver.find_element(By.ID, "index-count").text
        driver.find_element(By.CSS_SELECTOR, 'header a[data-view="trends"]').click()
        plots = wait(driver, lambda d: d.find_elements(By.CSS_SELECTOR, "#trends .plot svg"))
        assert len(plots) == 7 and driver.find_element(By.ID, "trends").is_displayed()


def test_empty_store_says_so(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.common.by import By

    out = tmp_path / "empty.html"
    write_view(out)
    with browser() as driver:
        driver.get(out.as_uri())
        text = driver.find_element(By.ID, "empty").text
        assert "has no scored sessions" in text
        assert driver.get_log("browser") == []  # no script errors


def test_checklist_statuses_and_a_contradicting_goal_are_shown(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.common.by import By

    from scorer.models import RequirementCheck

    card = make_card(
        "checked-1",
        requirements=[
            RequirementCheck(requirement="write /app/out.txt", status="likely_met"),
            RequirementCheck(requirement="serve on port 3000", status="not_attempted"),
        ],
        meta={"checklist_conflict": "goal_achievement is complete but its checklist of "
              "2 requirements implies partial"},
    )  # fmt: skip
    card.attach_timeline([TimelineEvent(i, 0, f"#{i} event {i}") for i in range(1, 5)])
    with ScoreStore() as store:
        run_id = store.save(card)
    out = tmp_path / "view.html"
    write_view(out)
    with browser() as driver:
        driver.get(out.as_uri() + f"#/run/{run_id}")
        warn = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, ".card .conflict"))
        assert "implies partial" in warn.text
        items = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "li.req")]
        assert items == ["[likely met] write /app/out.txt", "[not attempted] serve on port 3000"]
        assert driver.get_log("browser") == []
