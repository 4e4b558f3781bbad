"""Split a rendered timeline into chunks that fit the judge's token budget.

Chunks break only between events, repeat the task header, and overlap the last few
events of the previous chunk so the judge keeps local context. Nothing is dropped
silently: an event larger than the budget is cut with a visible marker and recorded.

Tokens are counted once per event. Each event is counted together with the newline
that joins it to the next one; every event starts with `#N` (or indentation before it),
so cl100k's pre-tokenizer always splits at that newline and the chunk's token count is
exactly the sum of its parts. `Chunk.tokens` therefore equals `counter.count(chunk.text)`
without encoding every chunk again.
"""

from __future__ import annotations

from scorer.errors import ConfigError
from scorer.models import Chunk, Session
from scorer.prepare.fence import QUOTED_LINE_MARK, looks_structural
from scorer.prepare.render import (
    DEFAULT_MAX_OUTPUT_CHARS,
    RenderedEvent,
    render_events,
    render_header,
)
from scorer.prepare.tokens import TokenCounter

MIN_EVENT_TOKENS = 256
"""The budget must leave at least this many (raw) tokens for events after the header."""
_MARKER_RESERVE = 48
"""Raw tokens kept free for the truncation marker line."""
_HEAD_SHARE = 0.6


def _max_raw(budget: int, counter: TokenCounter) -> int:
    """The largest raw token count whose scaled count still fits the budget."""
    raw = int(budget / counter.safety_factor)
    while raw > 0 and counter.scale(raw) > budget:
        raw -= 1
    while counter.scale(raw + 1) <= budget:
        raw += 1
    return raw


def _truncate(event: RenderedEvent, text: str, cap: int, counter: TokenCounter) -> tuple[str, int]:
    """Cut an oversized event to at most `cap` raw tokens, keeping head and tail."""
    tokens = counter.encode(text)
    keep = cap - _MARKER_RESERVE
    while keep > 0:
        head_n = int(keep * _HEAD_SHARE)
        head = counter.decode(tokens[:head_n])
        tail = _quote_cut_line(counter.decode(tokens[len(tokens) - (keep - head_n) :]))
        marker = (
            f"[… event #{event.index} truncated: {counter.scale(keep):,} of "
            f"{counter.scale(len(tokens)):,} tokens shown …]"
        )
        new_text = f"{head}\n{marker}\n{tail}\n"
        raw = counter.raw(new_text)
        if raw <= cap:
            return new_text, raw
        keep -= max(raw - cap, 8)  # decode/re-encode drift at the cut edges
    marker = (
        f"[… event #{event.index} truncated: 0 of {counter.scale(len(tokens)):,} tokens shown …]"
    )
    return f"#{event.index} {marker}\n", counter.raw(f"#{event.index} {marker}\n")


def _quote_cut_line(tail: str) -> str:
    """The tail of a cut event: its first line starts mid-line, so it may now read like an
    event header (`…x#92 ↳` cut before `#92`); quote it as the renderer would."""
    tail = tail.rstrip("\n")
    first = tail.split("\n", 1)[0]
    return QUOTED_LINE_MARK + tail if looks_structural(first) else tail


def _validate(header_raw: int, budget: int, overlap: int, max_raw: int) -> None:
    if overlap < 0:
        raise ConfigError(f"overlap must be >= 0, got {overlap}")
    if max_raw - header_raw < MIN_EVENT_TOKENS:
        raise ConfigError(
            f"token budget {budget:,} is too small: the task header alone needs "
            f"~{header_raw:,} raw tokens and at least {MIN_EVENT_TOKENS} more are needed"
        )


def _prepare(
    events: list[RenderedEvent], cap: int, counter: TokenCounter
) -> tuple[list[str], list[int], set[int]]:
    """Event texts (newline included), their raw counts, and the positions truncated."""
    texts = [e.text + "\n" for e in events]
    raws = counter.raw_many(texts)
    truncated: set[int] = set()
    for pos, raw in enumerate(raws):
        if raw > cap:
            texts[pos], raws[pos] = _truncate(events[pos], texts[pos], cap, counter)
            truncated.add(pos)
    return texts, raws, truncated


def _overlap_size(raws: list[int], start: int, wanted: int, cap: int) -> int:
    """How many events before `start` can repeat, leaving room for `raws[start]`.

    The overlap never takes more than half of the event budget, so every chunk still
    moves the timeline forward by a useful amount.
    """
    k, used = 0, 0
    while k < wanted:
        nxt = used + raws[start - k - 1]
        if nxt > cap // 2 or nxt + raws[start] > cap:
            break
        used, k = nxt, k + 1
    return k


def chunk_events(
    header: str,
    events: list[RenderedEvent],
    *,
    budget: int = 70_000,
    overlap: int = 4,
    counter: TokenCounter | None = None,
) -> list[Chunk]:
    """Split rendered events into chunks of at most `budget` estimated tokens.

    Args:
        header: Task context repeated at the top of every chunk.
        events: Rendered events in timeline order.
        budget: Maximum estimated tokens per chunk, header included.
        overlap: How many trailing events of a chunk to repeat at the start of the
            next one. Shrunk for a chunk when the budget cannot hold them.
        counter: Token counter (default: `TokenCounter()` with its safety factor).

    Returns:
        The chunks in order; a session without events gives one header-only chunk.

    Raises:
        ConfigError: When the budget cannot hold the header plus a minimal event.
    """
    counter = counter or TokenCounter()
    header_text = header + "\n"
    header_raw = counter.raw(header_text)
    max_raw = _max_raw(budget, counter)
    _validate(header_raw, budget, overlap, max_raw)
    cap = max_raw - header_raw
    texts, raws, truncated = _prepare(events, cap, counter)

    chunks: list[Chunk] = []
    start, prev_first = 0, 0
    while start < len(events) or not chunks:
        k = _overlap_size(raws, start, min(overlap, start - prev_first), cap) if chunks else 0
        first = start - k
        used = sum(raws[first:start])
        end = start
        while end < len(events) and used + raws[end] <= cap:
            used += raws[end]
            end += 1
        chunks.append(
            Chunk(
                index=len(chunks),
                text=header_text + "".join(texts[first:end]),
                event_indices=[e.index for e in events[first:end]],
                overlap=k,
                tokens=counter.scale(header_raw + used),
                truncated_events=[events[p].index for p in range(first, end) if p in truncated],
            )
        )
        prev_first, start = first, end
    return chunks


def chunk_session(
    session: Session,
    *,
    budget: int = 70_000,
    overlap: int = 4,
    safety_factor: float = 1.25,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> list[Chunk]:
    """Render a session and split it into chunks (see `chunk_events`)."""
    return chunk_events(
        render_header(session),
        render_events(session, max_output_chars=max_output_chars),
        budget=budget,
        overlap=overlap,
        counter=TokenCounter(safety_factor),
    )
