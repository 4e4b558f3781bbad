"""Rich renderables shared by the commands (pure: they build tables, never print)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from scorer._text import plural
from scorer.cli.tables import pack
from scorer.judge.rubric import default_rubric
from scorer.models import DimensionScore, Scorecard

if TYPE_CHECKING:
    from scorer.prepare import Prepared
    from scorer.prepare.signals import Signals


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in list(value.items())[:12]) or "-"
    if isinstance(value, list):
        shown = ", ".join(str(v) for v in value[:12])
        return shown + (f" … (+{len(value) - 12})" if len(value) > 12 else "") if value else "-"
    return "-" if value is None else str(value)


def _wrapped(text: str, style: str = "") -> Text:
    """Text rich wraps between words at the console's width (the consoles soft-wrap)."""
    return Text(text, style=style, no_wrap=False, overflow="fold")


def _when(value: datetime | None) -> str:
    return f"{value:%Y-%m-%d %H:%M:%S} UTC" if value else "?"


def session_summary(prepared: Prepared) -> Panel:
    """The `--dry-run` panel: one fact per line, each wrapped between words inside it
    (a path longer than the panel is folded, never cut)."""
    s = prepared.session
    usage = s.usage
    task = (s.task_text or "(no task prompt found)").strip().replace("\n", " ")
    lines = [
        Text(s.session_id, style="bold") + Text(f"  ({s.source.value})"),
        _wrapped(f"origin: {s.origin or '-'}"),
        _wrapped(f"project: {s.project or '-'}   cwd: {s.cwd or '-'}"),
        _wrapped(f"branches: {_fmt(s.git_branches)}"),
        _wrapped(f"time: {_when(s.started_at)} → {_when(s.ended_at)}"),
        _wrapped(f"models: {_fmt(s.models)}"),
        _wrapped(
            f"events: {s.n_events}   tokens in/out/cache-read/cache-write: "
            f"{usage.input_tokens:,}/{usage.output_tokens:,}/{usage.cache_read_tokens:,}/"
            f"{usage.cache_write_tokens:,}"
        ),
        _wrapped(f"redactions: {prepared.redactions.total}"),
        *(_wrapped(f"input: {w}", style="yellow") for w in s.extra.get("warnings") or []),
        _wrapped(f"task: {task[:200]}{'…' if len(task) > 200 else ''}"),
    ]
    return Panel(Group(*lines), title="session", expand=False)


def signals_table(signals: Signals) -> Table:
    from scorer.prepare.signals_block import check_text  # `scores list` never needs prepare

    table = Table(title="signals", show_header=True, header_style="bold")
    table.add_column("signal")
    table.add_column("value", overflow="fold")
    readable = {
        "checks_after_edit": [check_text(c) for c in signals.checks_after_edit],
        "failed_before_edit": [check_text(c) for c in signals.failed_before_edit],
        "artefacts": [f"{a.kind} {a.name}: {a.note}" for a in signals.artefacts],
    }
    for key, value in signals.model_dump(mode="json").items():
        if key in readable:
            table.add_row(key, "\n".join(readable[key]) or "-")
        else:
            table.add_row(key, _requirements(value) if key == "requirements" else _fmt(value))
    return table


def _requirements(reqs: list[dict[str, Any]]) -> str:
    """`2/3 covered, 1 unchecked; untouched: <text>` for the requirements signal."""
    if not reqs:
        return "-"
    n = {k: sum(r["status"] == k for r in reqs) for k in ("covered", "uncovered", "unchecked")}
    head = f"{n['covered']}/{n['covered'] + n['uncovered']} covered, {n['unchecked']} unchecked"
    untouched = [r["text"][:80] for r in reqs if r["status"] == "uncovered"]
    return head + ("; untouched: " + " | ".join(untouched) if untouched else "")


def chunk_plan_table(prepared: Prepared) -> Table:
    table = Table(title=f"chunk plan (budget {prepared.budget:,} tokens)", header_style="bold")
    for col in ("chunk", "events", "tokens", "overlap", "truncated"):
        table.add_column(col, justify="right" if col != "events" else "left")
    for c in prepared.chunks:
        span = f"#{c.event_indices[0]}–#{c.event_indices[-1]}" if c.event_indices else "-"
        table.add_row(
            str(c.index),
            span,
            f"{c.tokens:,}",
            str(c.overlap),
            _fmt([f"#{i}" for i in c.truncated_events]),
        )
    return table


_STATUS_STYLE = {
    "met": "green",
    "likely_met": "green",
    "unmet": "red",
    "not_attempted": "red",
    "unverified": "yellow",  # cards judged before the likely_met / not_attempted split
}


def checklist_table(card: Scorecard) -> Table:
    """The LLM judge's requirement checklist: one row per explicit task requirement."""
    done = sum(c.status in ("met", "likely_met") for c in card.requirements)
    shown = sum(c.status == "met" for c in card.requirements)
    table = Table(
        title=f"requirements: {done}/{len(card.requirements)} done ({shown} shown working)",
        header_style="bold",
    )
    table.add_column("requirement", overflow="fold", ratio=3)
    table.add_column("status")
    table.add_column("evidence", overflow="fold", ratio=1)
    for check in card.requirements:
        refs = " ".join(f"#{e.event}" + ("" if e.valid else "?") for e in check.evidence[:6])
        status = Text(check.status.replace("_", " "), style=_STATUS_STYLE[check.status])
        label = check.requirement + ("" if check.core else " (detail)")
        table.add_row(Text(label), status, refs or "-")
    return table


def _judge_notes(card: Scorecard) -> list[Text]:
    """Which model answered, refusals met, and a goal that does not follow the checklist."""
    notes: list[Text] = []
    if card.judge == "llm":
        answered = card.answered_by or "-"
        notes.append(Text(f"answered by {answered} (requested {card.model}, effort {card.effort})"))
    for r in card.refusals:
        notes.append(
            Text(
                f"refused by {r.model} ({r.category or 'no category'}) on {r.call}", style="yellow"
            )
        )
    conflict = card.meta.get("checklist_conflict")
    if conflict:
        notes.append(Text(f"⚠ contradicts its own checklist: {conflict}", style="bold yellow"))
    confidence = card.meta.get("goal_confidence")
    if card.judge == "heuristic" and confidence is not None:
        rule = card.meta.get("goal_rule", "?")
        notes.append(
            Text(f"goal_achievement confidence {confidence:.2f} (rule {rule}, from the dev runs)")
        )
    return notes


def card_header(card: Scorecard, width: int = 200) -> Text:
    """The session first: its title, then id, project, agent model and start time, in
    lines of at most `width` broken between those facts (a date is never split)."""
    info = card.session
    facts = [card.session_id, info.project, info.agent_model]
    if info.started_at:
        facts.append(f"{info.started_at:%Y-%m-%d %H:%M} UTC")
    line = Text(pack([f for f in facts if f], width), style="dim")
    if not card.title:
        return line
    return _wrapped(card.title, style="bold") + Text("\n") + line


def _evidence(score: DimensionScore, limit: int = 4) -> Text:
    """`#12 “3 passed”` per cited event with the judge's quote (one line each), bare refs
    together on one line; `?` marks an event the timeline does not have."""
    quoted, bare = Text(), Text()
    for e in score.evidence[:limit]:
        ref = Text(f"#{e.event}" + ("" if e.valid else "?"), style="cyan" if e.valid else "red")
        quote = " ".join(e.quote.split())
        if not quote:
            bare.append_text(Text(" ") + ref if bare else ref)
            continue
        quote = quote if len(quote) <= 70 else quote[:69] + "…"
        quoted.append_text(Text("\n") + ref + Text(f" “{quote}”", style="dim"))
    more = len(score.evidence) - limit
    if more > 0:
        bare.append(f" (+{more} more)", style="dim")
    return quoted + (Text("\n") + bare if bare else Text())


def _usage_line(card: Scorecard, width: int) -> Text:
    recommendation = f"recommendation: {card.recommendation or '-'}"
    if card.judge == "heuristic":  # no model was called: no tokens, no cost
        parts = [recommendation, "judge: heuristic (offline rules, no model called)"]
    else:
        u = card.usage
        parts = [
            recommendation,
            plural(card.n_chunks, "chunk"),
            plural(u.requests, "request"),
            f"tokens in/out/cache-r/cache-w: {u.input_tokens:,}/{u.output_tokens:,}/"
            f"{u.cache_read_tokens:,}/{u.cache_write_tokens:,}",
            f"cost: ${card.cost_usd:.4f}",
        ]
    text = Text(pack(parts, width, sep="   "))
    text.highlight_words([recommendation.split(": ", 1)[1]], style="bold")
    return text


def scorecard_view(card: Scorecard, width: int = 200) -> Group:
    """The scorecard: the session's title, one row per dimension (rationale and the quoted
    evidence), then recommendation, usage and cost; lines of at most `width` (print it
    with `soft_wrap=False` so the prose lines wrap between words too)."""
    via = f" via {card.backend}" if card.backend and card.backend != "api" else ""
    judge = f"judge={card.judge}{via}" + (f" model={card.model}" if card.model else "")
    if card.status != "scored":
        return Group(
            card_header(card, width),
            Panel(
                Text.from_markup("[bold red]UNSCORED[/] ")
                + _wrapped(f"reason: {card.unscored_reason}"),
                title=judge,
            ),
            *_judge_notes(card),
        )
    table = Table(title=judge, header_style="bold")
    table.add_column("dimension")
    table.add_column("score", justify="right")
    table.add_column("rationale and evidence", overflow="fold", ratio=1)
    # stored cards from before the rubric order was fixed may list them differently
    for name, score in default_rubric().ordered(card.scores).items():
        value = score.label or (
            f"{score.value:.2f}" if name == "overall_quality" else f"{score.value:g}"
        )
        rationale = (score.rationale or "").strip().splitlines()
        table.add_row(name, value, Text(rationale[0] if rationale else "") + _evidence(score))
    parts: list[Any] = [card_header(card, width), table]
    if card.requirements:
        parts.append(checklist_table(card))
    parts.append(_usage_line(card, width))
    if card.summary:
        parts.append(_wrapped(card.summary))
    parts += _judge_notes(card)
    if card.unknown_refs:
        parts.append(Text(f"judge cited unknown events: {card.unknown_refs}", style="yellow"))
    for warning in card.meta.get("input_warnings") or []:
        parts.append(Text(f"input: {warning}", style="yellow"))
    return Group(*parts)
