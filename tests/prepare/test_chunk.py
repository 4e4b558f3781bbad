from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scorer.errors import ConfigError
from scorer.prepare import RenderedEvent, TokenCounter, chunk_events, chunk_session
from scorer.sources.claude_code import ClaudeCodeSource
from tests.prepare.sessions import sample_session

COUNTER = TokenCounter()
HEADER = "TASK:\nFix the bug.\nSESSION: source claude-code\n=== TIMELINE ==="


def make_events(specs: list[tuple[int, str, int]]) -> list[RenderedEvent]:
    events = []
    for i, (depth, piece, repeat) in enumerate(specs, start=1):
        body = f"#{i} " + (piece or "x") * repeat
        events.append(
            RenderedEvent(i, depth, "  " * depth + body.replace("\n", "\n" + "  " * depth))
        )
    return events


event_specs = st.lists(
    st.tuples(st.integers(0, 2), st.text(max_size=40), st.integers(1, 300)), max_size=40
)


def new_events(chunks) -> list[int]:
    return [i for c in chunks for i in c.event_indices[c.overlap :]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    specs=event_specs,
    budget=st.integers(500, 4_000),
    overlap=st.integers(0, 5),
    factor=st.sampled_from([1.0, 1.25, 1.6]),
)
def test_chunker_invariants(specs, budget, overlap, factor):
    counter = TokenCounter(factor)
    events = make_events(specs)
    chunks = chunk_events(HEADER, events, budget=budget, overlap=overlap, counter=counter)
    assert [c.index for c in chunks] == list(range(len(chunks)))
    for c in chunks:
        assert c.text.startswith(HEADER + "\n")
        assert c.tokens == counter.count(c.text) <= budget  # exact, not just estimated
        assert c.overlap <= overlap
    assert new_events(chunks) == [e.index for e in events]  # each once, in order
    for prev, cur in itertools.pairwise(chunks):
        if cur.overlap:
            assert cur.event_indices[: cur.overlap] == prev.event_indices[-cur.overlap :]
    for c in chunks:
        for idx in c.truncated_events:
            assert f"[… event #{idx} truncated:" in c.text


@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 60), overlap=st.integers(0, 4))
def test_overlap_is_exact_when_budget_permits(n, overlap):
    events = make_events([(0, "word ", 30)] * n)  # ~30 tokens each
    chunks = chunk_events(HEADER, events, budget=900, overlap=overlap, counter=COUNTER)
    assert len(chunks) >= 1
    for prev, cur in itertools.pairwise(chunks):
        assert cur.overlap == min(overlap, len(prev.event_indices))


def test_oversized_event_is_truncated_visibly():
    big = "\n".join(f"line {i}: " + "lorem ipsum " * 5 for i in range(3_000))
    events = [
        RenderedEvent(1, 0, "#1 small"),
        RenderedEvent(2, 0, "#2 " + big),
        RenderedEvent(3, 0, "#3 after"),
    ]
    chunks = chunk_events(HEADER, events, budget=2_000, overlap=2, counter=COUNTER)
    assert new_events(chunks) == [1, 2, 3]
    holder = next(c for c in chunks if 2 in c.event_indices)
    assert holder.truncated_events == [2]
    assert "[… event #2 truncated:" in holder.text
    assert "line 0: lorem" in holder.text and "line 2999: lorem" in holder.text
    assert all(c.tokens <= 2_000 for c in chunks)


def test_empty_event_list_gives_one_header_chunk():
    (chunk,) = chunk_events(HEADER, [], budget=1_000, counter=COUNTER)
    assert chunk.text == HEADER + "\n" and chunk.event_indices == [] and chunk.tokens > 0


def test_bad_arguments_raise_config_error():
    events = make_events([(0, "a", 3)])
    with pytest.raises(ConfigError, match="too small"):
        chunk_events(HEADER, events, budget=100, counter=COUNTER)
    with pytest.raises(ConfigError, match="overlap"):
        chunk_events(HEADER, events, budget=5_000, overlap=-1, counter=COUNTER)
    with pytest.raises(ConfigError, match="safety_factor"):
        TokenCounter(0)


def test_token_counter():
    assert COUNTER.raw("hello world") == 2
    assert COUNTER.count("hello world") == 3  # ceil(2 x 1.25)
    assert COUNTER.raw("<|endoftext|>") > 1  # special-token text is ordinary text


def test_chunk_session_on_sample():
    chunks = chunk_session(sample_session(), budget=1_500, overlap=2)
    assert len(chunks) > 1
    assert new_events(chunks) == list(range(1, 23))
    assert all(c.text.startswith("TASK:\nFix the failing test") for c in chunks)


def test_real_big_session_chunks(big_session):
    session = ClaudeCodeSource(big_session).load()
    chunks = chunk_session(session, budget=20_000, overlap=4)
    assert len(chunks) >= 5
    assert new_events(chunks) == [e.index for _, e in session.iter_events()]
    assert all(c.tokens == COUNTER.count(c.text) <= 20_000 for c in chunks)
    assert all(c.overlap == 4 for c in chunks[1:])
