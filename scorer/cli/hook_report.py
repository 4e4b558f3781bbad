"""What `scorer hook --now` / `--wait` print: plain Markdown, because `/score` puts it into
a Claude Code conversation (no terminal, no colours), or one JSON object with `--json`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scorer.jobs.hook.worker import Outcome
    from scorer.models import Scorecard

_HEADLINES = {
    "unchanged": "already scored, and the transcript has not changed since",
    "busy": "another process is scoring this session right now; ask again in a minute",
    "submitted": "this session is in a Message Batch (SCORER_HOOK_MODE=batch); its card "
    "comes with the next hook run or `scorer hook --collect`",
}


def _value(name: str, card: Scorecard) -> str:
    score = card.scores[name]
    if score.label:
        return score.label
    return f"{score.value:.2f}" if name == "overall_quality" else f"{score.value:g} / 5"


def _first_line(text: str | None, limit: int = 160) -> str:
    line = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    line = line.replace("|", "\\|")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def render_card(card: Scorecard) -> str:
    """The scorecard as a Markdown table plus its summary and recommendation."""
    from scorer.goal_note import probability_note
    from scorer.judge.rubric import default_rubric

    judge = card.judge + (f" ({card.model})" if card.model else "")
    head = f"**Session `{card.session_id}`**, scored by {judge}, cost ${card.cost_usd:.4f}"
    if card.status != "scored":
        return f"{head}\n\nNot scored: {card.unscored_reason}"
    rows = ["| score | value | why |", "|---|---|---|"]
    for name, score in default_rubric().ordered(card.scores).items():
        rows.append(f"| {name} | {_value(name, card)} | {_first_line(score.rationale)} |")
        if name == "goal_achievement" and card.goal_probability is not None:
            why = "; ".join(probability_note(card)).replace("|", "\\|")
            rows.append(f"| goal_probability | {card.goal_probability:.2f} | {why} |")
    parts = [head, "\n".join(rows)]
    if card.summary:
        parts.append(f"Summary: {card.summary.strip()}")
    if card.recommendation:
        parts.append(f"Recommendation: {card.recommendation}")
    return "\n\n".join(parts)


def render_outcome(outcome: Outcome, card: Scorecard | None, *, full: bool) -> str:
    """`--now`: the card (or why there is none); `--wait`: one line."""
    if not full:
        overall = f" overall {card.overall:.2f}" if card is not None and card.overall else ""
        return f"{outcome.session_id or '-'}: {outcome.state}{overall} {outcome.reason}".strip()
    lines = []
    headline = _HEADLINES.get(outcome.state)
    if headline:
        lines.append(f"({headline})")
    elif card is None:
        who = f"Session {outcome.session_id}" if outcome.session_id else "The session"
        lines.append(f"{who} was not scored: {outcome.reason}")
    if card is not None:
        lines.append(render_card(card))
    for url in outcome.pushed:
        lines.append(f"Langfuse: {url}")
    if outcome.push_error:
        lines.append(f"Langfuse push failed ({outcome.push_error}); `scorer scores push` retries")
    return "\n\n".join(lines)


def outcome_payload(outcome: Outcome, card: Scorecard | None) -> dict[str, Any]:
    """`--json`: the outcome and the scorecard JSON (see `scorer schema`)."""
    return {
        "state": outcome.state,
        "reason": outcome.reason,
        "session_id": outcome.session_id,
        "pushed": outcome.pushed,
        "push_error": outcome.push_error,
        "scorecard": card.model_dump(mode="json") if card is not None else None,
    }
