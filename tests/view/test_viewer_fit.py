"""The viewer's index at laptop and narrow widths with real-looking data, and links to
runs the file does not hold (issue 33 item 9), in headless Chromium.

The data is what the shared Terminal-Bench and tmux runs put in a store: a model id of
38 characters without a space (`openai/app-dsw4xd-…`), a long project name, the widest
labels of every score and recommendation. At 1280 px the index used to be wider than
the window (its `errors`, `output` and `rec.` columns cut off at the edge) because the
model id never wrapped.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from scorer.models import SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card
from tests.view.helpers import browser, css, require_browser, wait, write_view

pytestmark = pytest.mark.slow

LONG_MODEL = "openai/app-dsw4xd-1757654301803448727"
WIDEST = {"goal_achievement": "exceeded", "error_handling": "struggled"}
ROWS = [
    ("You are placed in a blind maze exploration challenge. Your goal is to fully…", LONG_MODEL,
     "decommissioning-service-with-sensitive-data", "stream-json", "escalate"),
    ("/handgemacht:create-beads websearch to learn how to fastest setup credo…",
     "claude-haiku-4-5-20251001", "spotter-4te", "terminal", "retry"),
    ("mix phx.server doesnt seem to start", "claude-opus-4-6", "spotter", "claude-code",
     "complete"),
]  # fmt: skip


def _write_view(tmp_path: Path) -> tuple[str, list[int]]:
    ids = []
    with ScoreStore() as store:
        for i, (title, model, project, source, rec) in enumerate(ROWS):
            card = make_card(
                f"e2b8481a-d160-489d-b171-ee1d5e37ec{i:02d}",
                source=source,
                values=WIDEST,
                recommendation=rec,
                session=SessionInfo(
                    title=title,
                    project=project,
                    agent_model=model,
                    agent_models=[model],
                    started_at=datetime(2025, 11, 9, 6 + i, 12, tzinfo=UTC),
                ),
            )
            card.attach_timeline([TimelineEvent(1, 0, "#1 USER: explore the maze")])
            ids.append(store.save(card))
    out = tmp_path / "view.html"
    write_view(out)
    return out.as_uri(), ids


OVERFLOW = """
const vw = document.documentElement.clientWidth;
const shown = (e) => e.offsetParent !== null && e.getClientRects().length > 0;
const cells = [...document.querySelectorAll('#index th, #index td')].filter(shown);
const inner = [...document.querySelectorAll('#index td *')].filter((e) => shown(e) && e.clientWidth);
const name = (e) => (e.textContent || '').trim().slice(0, 40);
return {
  page: document.documentElement.scrollWidth - vw,
  wraps: [...document.querySelectorAll('#index .table-wrap')]
    .filter((w) => w.scrollWidth > w.clientWidth + 1).length,
  beyond: cells.filter((e) => e.getBoundingClientRect().right > vw + 0.5).map(name),
  cut: [...cells, ...inner].filter((e) => e.scrollWidth > e.clientWidth + 1).map(name),
};
"""


@pytest.mark.parametrize("width", [1280, 1251, 1024, 800])
def test_the_index_fits_and_long_model_ids_wrap(clean_env, tmp_path, width) -> None:
    require_browser()
    page, _ = _write_view(tmp_path)
    with browser() as driver:
        driver.set_window_size(width, 900)
        driver.get(page)
        wait(driver, lambda d: len(css(d, "#index-body tr.row")) == 3)
        found = driver.execute_script(OVERFLOW)
        assert found == {"page": 0, "wraps": 0, "beyond": [], "cut": []}, (width, found)
        # the model id is there whole, inside its cell and the window: on several lines
        # where the column is narrower than the id (its agent column at 1280 px)
        shown = driver.execute_script(
            "const vw = document.documentElement.clientWidth;"
            "return [...document.querySelectorAll('#index-body .agent')]"
            ".filter((e) => e.offsetParent !== null && e.textContent === arguments[0])"
            ".map((e) => { const r = e.getBoundingClientRect(),"
            " cell = e.closest('td').getBoundingClientRect();"
            " const text = e.matches('td') ? e.firstElementChild : e;"
            " return [r.right <= Math.min(vw, cell.right) + 0.5,"
            " new Set([...text.getClientRects()].map((x) => Math.round(x.top))).size]; })",
            LONG_MODEL,
        )
        assert len(shown) == 1 and shown[0][0], (width, shown)
        if width == 1280:
            assert shown[0][1] > 1, shown
        # every column's header is on screen, the last one included
        heads = [th.text for th in css(driver, "#index-head th") if th.is_displayed()]
        assert heads[-1] in ("rec.", "out"), heads
        assert driver.get_log("browser") == []


@pytest.mark.parametrize(
    ("fragment", "says"),
    [
        ("#/run/99", "There is no run 99 in this file"),
        ("#/run/99/e/3", "There is no run 99 in this file"),
        ("#/compare/{a}/99", "There is no run 99 in this file"),
        ("#/compare/98/99", "There are no runs 98 and 99 in this file"),
        ("#/runs/1", "There is no page #/runs/1 in this file"),
    ],
)
def test_a_link_to_a_run_the_file_does_not_hold_says_so(clean_env, tmp_path, fragment, says):
    require_browser()
    page, ids = _write_view(tmp_path)
    with browser() as driver:
        driver.set_window_size(1280, 900)
        driver.get(page + fragment.format(a=ids[0]))
        note = wait(
            driver, lambda d: next((e for e in css(d, "#missing") if e.is_displayed()), None)
        )
        assert says in note.text
        assert "3 runs" in note.text and "scorer view" in note.text  # what it holds, how to redo
        assert not css(driver, "#index")[0].is_displayed()
        note.find_element("css selector", "a").click()  # back to the index
        wait(driver, lambda d: css(d, "#index")[0].is_displayed())
        assert len(css(driver, "#index-body tr.row")) == 3
        # a run that is there still opens
        driver.get(f"{page}#/run/{ids[1]}")
        wait(driver, lambda d: css(d, "#session")[0].is_displayed())
        assert not css(driver, "#missing")[0].is_displayed()
        assert driver.get_log("browser") == []
