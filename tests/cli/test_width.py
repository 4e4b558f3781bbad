"""Every table and panel at 80 and 120 columns, on a store of the real sessions.

The store holds the Claude Code transcripts (long prompts as titles), ten runs of each
terminal-bench agent (long agent model ids), the three tmux pane captures and a cast
(`terminal:…` ids that share a long prefix). Each command runs through the CLI with
`COLUMNS` set; the checks fail on a line over the width, a cut or empty table header, and
on any id, date or number that is not shown whole: every shown id must be a token that
`scorer scores show` takes back (the whole id, or a prefix only one stored session has).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len
from rich.console import Console
from typer.testing import CliRunner

from scorer.cli.main import app
from scorer.sinks.store import ScoreStore
from tests.conftest import CC_PROJECTS, SHARED_DATA, TERMINAL_BENCH, require

runner = CliRunner()
WIDTHS = (80, 120)
PANES = SHARED_DATA / "tmux-panes"
CAST = SHARED_DATA / "terminal-bench" / "casts" / "blind-maze-explorer-5x5.agent.cast"
GPT5 = SHARED_DATA / "terminal-bench" / "claude_code_gpt5"


def _cli(name: str, *args: str, home: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LANGFUSE_"))}
    env.update(SCORER_HOME=str(home), SCORER_PREP_PROCESSES="0")
    exe = Path(sys.executable).parent / name
    done = subprocess.run([str(exe), *args], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.fixture(scope="module")
def real_home(tmp_path_factory) -> Path:
    """A `SCORER_HOME` whose store holds the real sessions (heuristic judge)."""
    for path in (CC_PROJECTS, TERMINAL_BENCH, GPT5, PANES, CAST):
        require(path)
    home = tmp_path_factory.mktemp("real-home")
    some = ("--judge", "heuristic", "--from", "2000-01-01", "--no-progress", "-q")
    _cli("score-backfill", "--projects-root", str(CC_PROJECTS), *some, home=home)
    for bench in (TERMINAL_BENCH, GPT5):
        _cli("score-backfill", "--projects-root", str(bench), "--sample", "10", *some, home=home)
    for capture in (*sorted(PANES.glob("*.txt")), CAST):
        _cli("score-session", str(capture), "--judge", "heuristic", "-q", home=home)
    return home


@pytest.fixture
def home(real_home, monkeypatch) -> Path:
    monkeypatch.setenv("SCORER_HOME", str(real_home))
    return real_home


def run(width: int, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def as_json(*args: str):
    return json.loads(run(200, *args, "--json"))


# --- the checks ---------------------------------------------------------------------


def assert_fits(text: str, width: int) -> None:
    """No line over `width`; every box-table header cell present and whole."""
    long = [line for line in text.splitlines() if cell_len(line) > width]
    assert long == [], f"lines over {width} columns:\n" + "\n".join(long)
    for line in text.splitlines():
        if "┃" in line:
            cells = [c.strip() for c in line.strip().strip("┃").split("┃")]
            assert all(cells) and not any("…" in c for c in cells), line


_TOKEN = re.compile(r"[^\s\[\]·│┃(),]+")


def shown_ids(text: str, sessions: list[str], known: list[str]) -> dict[str, str]:
    """For each session, the token of `text` that names it (the whole id or a prefix of
    at least 8 characters), checked to be one `scorer scores show` takes back."""
    tokens = set(_TOKEN.findall(text))
    found: dict[str, str] = {}
    for sid in sessions:
        names = [t for t in tokens if t == sid or (len(t) >= 8 and sid.startswith(t))]
        assert names, f"{sid} is not shown whole or as a prefix:\n{text}"
        token = max(names, key=len)
        others = set(known) | set(sessions)  # a failed session is not stored: unique anyway
        assert token == sid or [k for k in others if k.startswith(token)] == [sid], token
        found[sid] = token
    return found


def line_with(text: str, token: str) -> str:
    lines = [line for line in text.splitlines() if token in _TOKEN.findall(line)]
    assert lines, token
    return lines[0]


def stored_ids() -> list[str]:
    with ScoreStore() as store:
        return store.session_ids()


# --- scorer scores list / show --------------------------------------------------------


@pytest.mark.parametrize("limit", ["40", "1"])
@pytest.mark.parametrize("width", WIDTHS)
def test_scores_list_shows_every_id_date_and_number_whole(home, width, limit):
    """`--limit 1` lists the cast alone: its prefix must still be unique in the store."""
    text = run(width, "scores", "list", "--limit", limit)
    assert_fits(text, width)
    runs = as_json("scores", "list", "--limit", limit)
    ids = shown_ids(text, [r["session_id"] for r in runs], stored_ids())
    for r in runs:
        assert f"{r['overall']:.2f}" in text
        if r["session"]["started_at"]:
            assert r["session"]["started_at"][:10] in text  # the date in full
    terminal = [sid for sid in ids if sid.startswith("terminal:")]
    assert len(terminal) >= (3 if limit == "40" else 1)  # ids sharing a long prefix
    for sid in terminal:
        shown = as_json("scores", "show", ids[sid])
        assert shown["session_id"] == sid


@pytest.mark.parametrize("width", WIDTHS)
def test_scores_show_header_never_splits_a_fact(home, width):
    """Title, then id · project · agent model · start: broken between facts only."""
    runs = [r for r in as_json("scores", "list", "--limit", "200") if r["session"]["started_at"]]
    run_ = max(runs, key=lambda r: len(r["session"]["agent_model"] or ""))
    text = run(width, "scores", "show", run_["session_id"])
    assert_fits(text, width)
    when = run_["session"]["started_at"][:16].replace("T", " ") + " UTC"
    for fact in (run_["session_id"], run_["session"]["agent_model"], when):
        assert any(fact in line for line in text.splitlines()), fact


# --- scorer trends ------------------------------------------------------------------------


@pytest.mark.parametrize("by", ["week", "day"])
@pytest.mark.parametrize("width", WIDTHS)
def test_trends_show_periods_means_and_lowest_sessions_whole(home, width, by):
    text = run(width, "trends", "--by", by)
    assert_fits(text, width)
    data = as_json("trends", "--by", by)
    lows = [(p, low) for p in data["periods"] for low in p["lowest"]]
    ids = shown_ids(text, [low["session_id"] for _, low in lows], stored_ids())
    for period, low in lows:
        line = line_with(text, ids[low["session_id"]])
        assert period["label"] in line and f"{low['overall']:.2f}" in line
        assert (low["goal"] or "-") in line
    for period in data["periods"]:
        row = line_with(text, period["label"])
        assert str(period["n_sessions"]) in row.split()
        for stat in period["stats"].values():
            assert f"{stat['mean']:.2f}" in text


# --- score-session and score-backfill -------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_score_session_card_and_dry_run_panel(home, width, monkeypatch):
    """A terminal-bench run with the longest agent model id: the header, the card and
    the `--dry-run` panel keep the id, models, dates and counts whole."""
    path = GPT5 / "swe-bench-astropy-2" / "session.jsonl"
    card = json.loads(run(width, "session", str(path), "--no-store", "--json"))
    text = run(width, "session", str(path), "--no-store")
    assert_fits(text, width)
    overall = f"{card['scores']['overall_quality']['value']:.2f}"
    for fact in (card["session_id"], card["session"]["agent_model"], overall):
        assert any(fact in line for line in text.splitlines()), fact
    panel = run(width, "session", str(path), "--dry-run")
    assert_fits(panel, width)
    words = {w.strip("│,") for w in panel.split()}
    for model in card["session"]["agent_models"] or [card["session"]["agent_model"]]:
        assert model in words, model  # `models: claude` was cut at the panel's edge
    assert card["session_id"] in words


@pytest.mark.parametrize("width", WIDTHS)
def test_llm_card_usage_line_and_checklist_fit(width):
    """The LLM judge's card: checklist table, and the usage line with its token counts
    and cost broken between items, never inside a number."""
    from scorer.cli.views import scorecard_view
    from scorer.jobs.score import score_session
    from scorer.sources.claude_code import ClaudeCodeSource
    from tests.fakes.anthropic import FakeAnthropic, message_response, valid_scoring_payload

    reply = valid_scoring_payload(
        requirements=[("Start the Phoenix server in the background and check it", "met")] * 3
    )
    fake = FakeAnthropic([message_response(reply)])
    source = ClaudeCodeSource(require(CC_PROJECTS) / "-home-USER-projects-spotter/short.jsonl")
    card = score_session(source, judge="llm", sinks=[], client=fake.client()).card
    console = Console(width=width, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    console.print(scorecard_view(card, width), soft_wrap=False)
    text = console.export_text()
    assert_fits(text, width)
    u = card.usage
    for number in (f"{u.input_tokens:,}", f"{u.output_tokens:,}", f"${card.cost_usd:.4f}"):
        assert number in _TOKEN.findall(text.replace("/", " ")), number


def test_backfill_results_table_at_80_and_120(tmp_path, monkeypatch):
    """The results table: each session's title (shortened) and its id prefix, whole; a
    failure's reason in full under the table."""
    root = tmp_path / "projects"
    real = require(CC_PROJECTS)
    for src in real.rglob("*.jsonl"):
        dest = root / src.relative_to(real)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(src.read_bytes())
    broken = root / "-home-USER-projects-spotter" / "0badc0de-aaaa-bbbb-cccc-dddddddddddd.jsonl"
    broken.write_text("{ not json\n" * 3)
    args = ["backfill", "--projects-root", str(root), "--judge", "heuristic", "--no-progress"]
    args += ["--from", "2000-01-01"]
    summary = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    known = stored_ids()
    for width in WIDTHS:
        result = runner.invoke(app, [*args, "--rescore"], env={"COLUMNS": str(width)})
        text = result.stderr
        assert_fits(text, width)
        ids = shown_ids(text, [s["session_id"] for s in summary["sessions"]], known)
        for s in summary["sessions"]:
            line = line_with(text, ids[s["session_id"]])
            if s["overall"] is not None:
                assert f"{s['overall']:.2f}" in line and s["goal"] in line
        for failure in summary["failures"]:  # whole, maybe over several lines (a long path)
            assert "".join(failure["reason"].split()) in "".join(text.split())


# --- score-calibrate, configs, the hook report ---------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_calibration_tables_keep_every_statistic(home, width, tmp_path):
    from scorer.calibrate.report import STATS, format_stat

    labels = tmp_path / "labels.csv"
    rows = ["session_id,dimension,value"]
    runs = as_json("scores", "list", "--limit", "200")
    for i, r in enumerate(runs):
        rows.append(
            f"{r['session_id']},goal_achievement,{['failed', 'partial', 'complete'][i % 3]}"
        )
        rows.append(f"{r['session_id']},tool_efficiency,{1 + i % 5}")
    labels.write_text("\n".join(rows) + "\n")
    args = ["calibrate", "--ground-truth", str(labels), "--n-boot", "0", "--judge", "heuristic"]
    args += ["--out", str(tmp_path / "report")]
    text = run(width, *args)
    assert_fits(text, width)
    data = json.loads(run(200, *args, "--json"))
    for header, _ in STATS:
        assert header.split(" ")[0] in text
    for a in data["agreements"]:
        assert a["dimension"] in text and str(a["n"]) in text
        for _, field in STATS:
            assert format_stat(a[field]) in text


@pytest.mark.parametrize("width", WIDTHS)
def test_configs_report_lines_fit(width, monkeypatch):
    from tests.langfuse.fake_server import HOST, PUBLIC_KEY, SECRET_KEY, FakeLangfuse

    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", PUBLIC_KEY)
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", SECRET_KEY)
    monkeypatch.setenv("LANGFUSE_BASE_URL", HOST)
    with FakeLangfuse() as fake:
        fake.add_config(name="goal_achievement", dataType="NUMERIC")  # a conflict, explained
        for i in range(3):
            fake.add_config(
                name=f"a_much_longer_score_config_name_from_elsewhere_{i}", dataType="NUMERIC"
            )
        result = runner.invoke(app, ["configs", "sync"], env={"COLUMNS": str(width)})
    assert result.exit_code == 1  # the conflict
    assert_fits(result.stdout, width)
    words = result.stdout.split()
    for i in range(3):
        assert f"a_much_longer_score_config_name_from_elsewhere_{i}:" in words


def test_hook_report_shows_the_id_and_every_score_whole(home):
    """`scorer hook --now` prints Markdown for a Claude Code conversation: nothing is cut
    to a width there; the whole id, every score and the cost are in it."""
    from scorer.cli.hook_report import render_card

    with ScoreStore() as store:
        sid = next(s for s in store.session_ids() if s.startswith("terminal:"))
        card = store.latest(sid)
    assert card is not None
    text = render_card(card)
    assert f"`{card.session_id}`" in text and f"${card.cost_usd:.4f}" in text
    for name, score in card.scores.items():
        value = score.label or (
            f"{score.value:.2f}" if name == "overall_quality" else f"{score.value:g} / 5"
        )
        assert f"| {name} | {value} |" in text
