"""The viewer for daily review, in headless Chromium (issue 26, item 5): two runs of one
session side by side, two cohorts with per-dimension differences, filters and selection
that survive a reload, a summary row, timeline filters and folded long outputs, real
line breaks, the checklist with its conflict and evidence, and a page that fits 800 px
without breaking ids or dates."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from statistics import mean

import pytest

from scorer.judge.rubric import OVERALL
from scorer.models import EvidenceRef, RequirementCheck, Scorecard, SessionInfo, TimelineEvent
from scorer.sinks.store import ScoreStore
from tests.sinks.cards import make_card
from tests.view.helpers import browser, css, require_browser, wait, write_view

pytestmark = pytest.mark.slow

LONG_OUTPUT = "\n".join(f"line {i} of the test log" for i in range(1, 41))
TIMELINE = [
    TimelineEvent(1, 0, "#1 USER: fix the date parser and keep the CLI flags"),
    TimelineEvent(2, 0, "#2 Bash: cd app ⏎ pytest -x tests/test_dates.py"),
    TimelineEvent(3, 0, "#3 ↳ result of #2 (exit 1) ERROR:\nFAILED tests/test_dates.py::test_iso"),
    TimelineEvent(4, 0, "#4 Edit src/dates.py (-3 +5 lines)"),
    TimelineEvent(5, 0, "#5 Bash: pytest -q"),
    TimelineEvent(6, 0, f"#6 ↳ result of #5:\n{LONG_OUTPUT}"),
    TimelineEvent(7, 0, '#7 mcp__db__query {"sql": "select 1\\nfrom t"}'),
    TimelineEvent(8, 0, "#8 ASSISTANT: The parser is fixed; all 40 checks pass."),
]


COHORTS = [(2, "model-a", "failed"), (3, "model-a", "partial"), (9, "model-b", "complete"),
           (10, "model-b", "complete")]  # fmt: skip
"""Day of November 2026 (2026-W45 and 2026-W46), agent model and goal of four sessions."""


def _card(session_id: str, **kw) -> Scorecard:
    card = make_card(session_id, **kw)
    card.attach_timeline(TIMELINE)
    return card


def _store() -> dict[str, int]:
    """Two runs of one session (heuristic, then LLM with a checklist), and four sessions
    over two weeks and two agent models for the cohorts."""
    info = SessionInfo(
        title="Fix the date parser",
        project="dates",
        agent_model="claude-opus-4-6",
        started_at=datetime(2026, 11, 9, 10, tzinfo=UTC),
    )
    first = _card(
        "sess-cmp",
        judge="heuristic",
        model=None,
        values={"goal_achievement": "partial", "tool_efficiency": 2},
        rationale="one failing test left at #3",
        session=info,
        created_at=datetime(2026, 11, 20, tzinfo=UTC),
    )
    second = _card(
        "sess-cmp",
        rationale="the tests pass at #6",
        session=info,
        created_at=datetime(2026, 11, 21, tzinfo=UTC),
    )
    second.scores["tool_efficiency"].evidence = [EvidenceRef(event=2, quote="cd app ⏎ pytest -x")]
    second.scores["goal_achievement"].evidence = [EvidenceRef(event=6, quote="line 33 of the test")]
    second.requirements = [
        RequirementCheck(
            requirement="fix the date parser",
            status="met",
            evidence=[EvidenceRef(event=6, quote="40 checks pass")],
        ),
        RequirementCheck(requirement="keep the CLI flags", status="unmet", core=False),
    ]
    second.meta["checklist_conflict"] = "goal is complete but a requirement is unmet"
    ids = {}
    with ScoreStore() as store:
        ids["first"], ids["second"] = store.save(first), store.save(second)
        for i, (week_day, model, goal) in enumerate(COHORTS):
            start = datetime(2026, 11, week_day, 9, tzinfo=UTC)  # 2026-W45 and 2026-W46
            card = _card(
                f"cohort-{i}",
                values={"goal_achievement": goal, "output_quality": 2 + i},
                session=SessionInfo(
                    title=f"cohort task {i}",
                    project="billing",
                    agent_model=model,
                    started_at=start,
                ),
            )
            ids[f"cohort-{i}"] = store.save(card)
    return ids


def _write_view(tmp_path: Path) -> tuple[str, dict[str, int]]:
    ids = _store()
    out = tmp_path / "view.html"
    write_view(out)
    return out.as_uri(), ids


def _row_scores(table) -> dict[str, list[str]]:
    from selenium.webdriver.common.by import By

    rows = table.find_elements(By.CSS_SELECTOR, "tr[data-score]")
    return {
        r.get_attribute("data-score"): [td.text for td in r.find_elements(By.TAG_NAME, "td")]
        for r in rows
    }


def _norm(card_values: dict, name: str) -> float:
    return make_card("x", values=card_values).scores[name].normalized


def test_two_runs_of_one_session_side_by_side_from_a_selection_kept_in_the_url(
    clean_env, tmp_path
) -> None:
    require_browser()
    page, ids = _write_view(tmp_path)
    a, b = str(ids["first"]), str(ids["second"])
    with browser() as driver:
        driver.get(page)
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        assert not css(driver, "#compare-go")[0].is_enabled()
        for run in (a, b):
            css(driver, f'input.pick[data-run="{run}"]')[0].click()
        assert driver.current_url.endswith(f"#/?sel={a}%2C{b}")
        driver.refresh()  # the selection survives a reload (and a shared link)
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        assert all(css(driver, f'input.pick[data-run="{r}"]')[0].is_selected() for r in (a, b))
        css(driver, "#compare-go")[0].click()
        table = wait(driver, lambda d: css(d, "#compare table.cmp")[0])
        assert driver.current_url.endswith(f"#/compare/{a}/{b}")
        assert "Two runs of “Fix the date parser”" in css(driver, "#compare h2")[0].text
        scores = _row_scores(table)
        assert scores["goal_achievement"][1:3] == ["partial", "complete"]
        goal = _norm({}, "goal_achievement") - _norm(
            {"goal_achievement": "partial"}, "goal_achievement"
        )
        assert scores["goal_achievement"][3] == f"+{goal:.2f}"
        tools = _norm({}, "tool_efficiency") - _norm({"tool_efficiency": 2}, "tool_efficiency")
        assert scores["tool_efficiency"][3] == f"+{tools:.2f}"
        assert scores["context_efficiency"][3] == "±0.00"
        why = css(driver, "#why-tool_efficiency")[0].text
        assert "one failing test left at #3" in why and "the tests pass at #6" in why
        # the quote's flattened newline (⏎) is a real line break
        assert "cd app\npytest -x" in why
        link = css(driver, '#why-tool_efficiency a.ev-link[data-event="2"]')[0]
        link.click()
        event = wait(driver, lambda d: css(d, "#ev-2.hl")[0])
        assert driver.current_url.endswith(f"#/run/{b}/e/2")
        # the session page offers the other run for comparison
        other = css(driver, "#other-runs a.cmp-link")[0]
        assert "heuristic" in css(driver, "#other-runs")[0].text
        other.click()
        wait(driver, lambda d: css(d, "#compare table.cmp"))
        assert driver.current_url.endswith(f"#/compare/{b}/{a}")
        assert event is not None and driver.get_log("browser") == []


def test_two_cohorts_with_per_dimension_differences(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.support.ui import Select

    page, _ = _write_view(tmp_path)
    goals = ["failed", "partial", "complete", "complete"]
    cards = [make_card("x", values={"goal_achievement": g, "output_quality": 2 + i}) for i, g in enumerate(goals)]  # fmt: skip
    with browser() as driver:
        driver.get(f"{page}#/?project=billing")
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        Select(css(driver, "#c-by")[0]).select_by_value("agent")
        assert Select(css(driver, "#c-a")[0]).first_selected_option.text == "model-a"
        assert Select(css(driver, "#c-b")[0]).first_selected_option.text == "model-b"
        css(driver, "#c-go")[0].click()
        table = wait(driver, lambda d: css(d, "#cohorts table.cmp")[0])
        assert "by=agent&a=model-a&b=model-b" in driver.current_url
        assert "project=billing" in driver.current_url  # the index filters apply
        scores = _row_scores(table)
        for name in (OVERALL, "goal_achievement", "output_quality"):
            mean_a = mean(c.scores[name].normalized for c in cards[:2])
            mean_b = mean(c.scores[name].normalized for c in cards[2:])
            row = scores[name]
            assert row[1:5] == [f"{mean_a:.2f}", "2", f"{mean_b:.2f}", "2"], (name, row)
            sign = "+" if mean_b > mean_a else "−"
            assert row[5] == f"{sign}{abs(mean_b - mean_a):.2f}", (name, row)
        assert scores["goal_achievement"][7] == "failed 1 · partial 1"
        assert scores["goal_achievement"][8] == "complete 2"
        # the same comparison by week, opened from its URL
        driver.get(f"{page}#/cohorts?by=week&a=2026-W45&b=2026-W46&project=billing")
        table = wait(driver, lambda d: css(d, "#cohorts table.cmp")[0])
        assert _row_scores(table)[OVERALL][2] == "2"
        assert "2026-W45 vs 2026-W46" in css(driver, "#cohorts h2")[0].text
        # two rubric-like cohorts over the same session are paired
        driver.get(f"{page}#/cohorts?by=judge&a=heuristic&b=llm%20claude-sonnet-5-5&project=dates")
        table = wait(driver, lambda d: css(d, "#cohorts table.cmp")[0])
        assert _row_scores(table)["tool_efficiency"][6].endswith("(1)")
        assert driver.get_log("browser") == []


def test_filters_sort_and_summary_row_survive_a_reload(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.support.ui import Select

    page, _ = _write_view(tmp_path)
    with browser() as driver:
        driver.get(page)
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        Select(css(driver, "#f-project")[0]).select_by_value("billing")
        css(driver, 'th[data-sort="overall_quality"]')[0].click()  # descending first
        css(driver, 'th[data-sort="overall_quality"]')[0].click()  # then ascending
        url = driver.current_url
        assert url.endswith("#/?project=billing&sort=overall_quality&asc=1"), url
        before = [r.text for r in css(driver, "#index-body tr.row")]
        driver.get("about:blank")
        driver.get(url)
        wait(driver, lambda d: css(d, "#index-body tr.row"))
        assert [r.text for r in css(driver, "#index-body tr.row")] == before
        assert Select(css(driver, "#f-project")[0]).first_selected_option.text == "billing"
        assert (
            css(driver, 'th[data-sort="overall_quality"]')[0].get_attribute("class") == "sorted asc"
        )
        assert len(before) == 4 and "cohort task 0" in before[0]  # the lowest first
        summary = css(driver, "#index-summary")[0]
        assert "4 runs" in summary.text
        goals = ["failed", "partial", "complete", "complete"]
        cards = [make_card("x", values={"goal_achievement": g, "output_quality": 2 + i}) for i, g in enumerate(goals)]  # fmt: skip
        cell = css(driver, f'#index-summary td[data-score="{OVERALL}"]')[0]
        assert cell.text == f"{mean(c.scores[OVERALL].normalized for c in cards):.2f}"
        css(driver, "#f-q")[0].send_keys("task 3")
        assert driver.current_url.endswith("&q=task+3") or "q=task+3" in driver.current_url
        assert "1 run" in css(driver, "#index-summary")[0].text
        assert "1 of 6 runs" in css(driver, "#index-count")[0].text


def test_timeline_filters_folded_outputs_line_breaks_and_checklist(clean_env, tmp_path) -> None:
    require_browser()
    from selenium.webdriver.support.ui import Select

    page, ids = _write_view(tmp_path)
    run = ids["second"]
    shown = lambda d: [e.get_attribute("data-event") for e in css(d, "#timeline .ev")]  # noqa: E731
    with browser() as driver:
        driver.get(f"{page}#/run/{run}")
        wait(driver, lambda d: len(shown(d)) == 8)
        css(driver, '#tl-tools button[data-filter="errors"]')[0].click()
        assert shown(driver) == ["3"]
        assert driver.current_url.endswith(f"#/run/{run}?show=errors")
        css(driver, '#tl-tools button[data-filter="tools"]')[0].click()
        assert shown(driver) == ["2", "4", "5", "7"]
        Select(css(driver, "#tl-dim")[0]).select_by_value("ev:tool_efficiency")
        assert shown(driver) == ["2"]
        driver.get("about:blank")
        driver.get(f"{page}#/run/{run}?show=errors")  # the filter is in the URL
        wait(driver, lambda d: shown(d) == ["3"])
        # real line breaks: a tool call's flattened newlines and a JSON input's `\n`
        css(driver, '#tl-tools button[data-filter="tools"]')[0].click()
        assert "cd app ⏎\n" in css(driver, "#ev-2 pre")[0].text
        assert '"select 1\nfrom t"' in css(driver, "#ev-7 pre")[0].text.replace("    ", "")
        # an evidence link to an event the filter hides shows everything again
        css(driver, '#score-goal_achievement a.ev-link[data-event="6"]')[0].click()
        event = wait(driver, lambda d: css(d, "#ev-6.hl")[0])
        assert len(shown(driver)) == 8
        # ... and unfolds the long output the quote is in
        assert "line 33 of the test log" in event.text
        assert "▴ collapse" in event.text
        event.find_element("css selector", "button.fold").click()
        pre = event.find_element("css selector", "pre")
        assert "line 9 of" in pre.text and "line 10 of" not in pre.text  # the first 10 lines
        assert "▾ show 31 more lines" in event.text
        css(driver, "#tl-expand")[0].click()
        assert "line 40 of the test log" in css(driver, "#ev-6")[0].text
        # the checklist: statuses, the conflict and the evidence with its quote
        checklist = css(driver, "#checklist")[0].text
        assert "requirement checklist (1/2 met)" in checklist
        assert "checklist conflict: goal is complete but a requirement is unmet" in checklist
        assert "[met] fix the date parser" in checklist
        assert "[unmet] keep the CLI flags (detail)" in checklist
        assert "#6 40 checks pass" in checklist
        assert "does not follow the checklist" in css(driver, "#score-goal_achievement")[0].text
        css(driver, '#checklist a.ev-link[data-event="6"]')[0].click()
        cite = wait(driver, lambda d: css(d, "#ev-6.hl .cite")[0])
        assert "requirement “fix the date parser” (met)" in cite.text
        assert driver.get_log("browser") == []


@pytest.mark.parametrize("width", [800, 1400])
def test_every_page_fits_the_width_without_breaking_ids_or_dates(
    clean_env, tmp_path, width
) -> None:
    require_browser()
    page, ids = _write_view(tmp_path)
    fragments = [
        "#/",
        f"#/run/{ids['second']}",
        f"#/compare/{ids['first']}/{ids['second']}",
        "#/cohorts?by=week&a=2026-W45&b=2026-W46",
        "#/trends",
    ]
    with browser() as driver:
        driver.set_window_size(width, 900)
        for fragment in fragments:
            driver.get("about:blank")
            driver.get(page + fragment)
            wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")
            wait(driver, lambda d: css(d, "main section:not(.hidden) *"))
            sideways = driver.execute_script(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
            )
            assert sideways <= 0, (fragment, width, sideways)
            broken = driver.execute_script(
                "return [...document.querySelectorAll('section:not(.hidden) .tok')]"
                ".filter(t => t.offsetParent && t.getClientRects().length !== 1)"
                ".map(t => t.textContent)"
            )
            tokens = driver.execute_script(
                "return document.querySelectorAll('section:not(.hidden) .tok').length"
            )
            assert tokens and broken == [], (fragment, width, broken)
            # nothing sticks out of its table (a cut cell)
            wide = driver.execute_script(
                "return [...document.querySelectorAll('section:not(.hidden) .table-wrap')]"
                ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
            )
            assert wide == 0, (fragment, width)
        assert driver.get_log("browser") == []
