"""The bulk fast paths of the native parser agree with the plain per-line rules they replace.

Each reference below is the straightforward per-line version (the code before the fast
path); the inputs are the cases where a shortcut could go wrong.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scorer.models import TokenUsage
from scorer.sources._common import UsageLedger, parse_ts
from scorer.sources._envelope import dedupe, order_segments, read_envelope, time_span
from scorer.sources._jsonl import JsonLines, parse_json_line, read_jsonl


def _span_reference(stamps: list[Any]) -> tuple[datetime | None, datetime | None]:
    started = ended = None
    for value in stamps:
        ts = parse_ts(value)
        if ts:
            if started is None or ts < started:
                started = ts
            if ended is None or ts > ended:
                ended = ts
    return started, ended


def test_time_span_of_canonical_stamps_out_of_order() -> None:
    stamps = ["2025-01-02T00:00:00.000Z", "2025-01-01T23:59:59.999Z", "2025-01-03T00:00:00.001Z"]
    assert time_span(stamps) == (
        datetime(2025, 1, 1, 23, 59, 59, 999000, tzinfo=UTC),
        datetime(2025, 1, 3, 0, 0, 0, 1000, tzinfo=UTC),
    )


def test_time_span_with_an_offset_stamp_compares_instants_not_strings() -> None:
    # As strings the offset stamp sorts first; as an instant it is the latest (00:30Z).
    stamps = ["2025-01-01T00:00:00.000Z", "2024-12-31T23:30:00-01:00"]
    started, ended = time_span(stamps)
    assert started == datetime(2025, 1, 1, tzinfo=UTC)
    assert ended == datetime(2025, 1, 1, 0, 30, tzinfo=UTC)
    assert (started, ended) == _span_reference(stamps)


def test_time_span_skips_a_canonically_shaped_stamp_that_does_not_parse() -> None:
    stamps = ["2025-00-01T00:00:00.000Z", "2025-01-02T00:00:00.000Z", "2025-99-01T00:00:00.000Z"]
    day = datetime(2025, 1, 2, tzinfo=UTC)
    assert time_span(stamps) == (day, day)


def test_time_span_ignores_junk_and_stamps_holding_newlines() -> None:
    joined = "2020-01-01T00:00:00.000Z\n2030-01-01T00:00:00.000Z"
    stamps = [joined, "2025-01-01T00:00:00.000Z", 17, "", "soon"]
    day = datetime(2025, 1, 1, tzinfo=UTC)
    assert time_span(stamps) == (day, day)
    assert time_span([]) == (None, None)


_STAMPS = st.one_of(
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)).map(
        lambda d: d.strftime("%Y-%m-%dT%H:%M:%S.") + f"{d.microsecond // 1000:03d}Z"
    ),
    st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2099, 1, 1)).map(
        lambda d: d.isoformat() + "+02:00"
    ),
    st.sampled_from(["", "2025-13-01T00:00:00.000Z", "x", "2025-01-01T00:00:00Z"]),
    st.integers(),
)


@given(st.lists(_STAMPS, max_size=12))
def test_time_span_matches_a_parse_per_stamp(stamps: list[Any]) -> None:
    assert time_span([s for s in stamps if s]) == _span_reference(stamps)


def test_dedupe_keeps_the_first_of_each_string_uuid_only() -> None:
    records = [
        {"uuid": "a", "n": 1},
        {"n": 2},
        {"uuid": "a", "n": 3},
        {"n": 4},
        {"uuid": 5, "n": 5},
        {"uuid": 5, "n": 6},  # not a string: never a duplicate
        {"uuid": ["x"], "n": 7},  # unhashable: kept, no crash
        {"uuid": True, "n": 8},
        {"uuid": 1, "n": 9},  # equal to True as a set member, still kept
    ]
    kept, dropped = dedupe(records)
    assert [r["n"] for r in kept] == [1, 2, 4, 5, 6, 7, 8, 9]
    assert dropped == 1


def test_dedupe_counts_repeats_among_lines_without_uuids() -> None:
    records = [{"uuid": "a", "n": 1}, {"n": 2}, {"uuid": "a", "n": 3}, {"uuid": None, "n": 4}]
    kept, dropped = dedupe(records)
    assert ([r["n"] for r in kept], dropped) == ([1, 2, 4], 1)


def test_dedupe_without_repeats_keeps_everything() -> None:
    records = [{"uuid": "a"}, {}, {}, {"uuid": "b"}, {"uuid": 3}]
    assert dedupe(records) == (records, 0)


def test_order_segments_only_reorders_with_two_boundaries() -> None:
    boundary = {"type": "system", "subtype": "compact_boundary"}
    one = [{"timestamp": "3"}, {**boundary, "timestamp": "2"}, {"timestamp": "1"}]
    assert order_segments(one) == one
    late = [{**boundary, "timestamp": "9"}, {"n": 1}]
    early = [{**boundary, "timestamp": "5"}, {"n": 2}]
    assert order_segments([{"n": 0}, *late, *early]) == [{"n": 0}, *early, *late]
    # The subtype alone is not a boundary: only system lines split segments.
    fake = [{"type": "user", "subtype": "compact_boundary", "timestamp": t} for t in "91"]
    assert order_segments([{"n": 0}, *fake, *late]) == [{"n": 0}, *fake, *late]


def test_read_envelope_first_last_and_distinct_in_order() -> None:
    records: list[dict[str, Any]] = [
        {"sessionId": 7, "cwd": ["unhashable"], "gitBranch": ""},
        {"sessionId": "s1", "cwd": "/b", "version": "1", "slug": "x", "gitBranch": "main"},
        {"sessionId": "s2", "cwd": "/a", "version": 2, "gitBranch": {"odd": 1}},
        {"cwd": "/b", "version": "3", "slug": None, "gitBranch": "dev"},
        {"cwd": "", "timestamp": "2025-01-01T00:00:00.000Z"},
    ]
    envelope = read_envelope(records)
    assert envelope.session_id == "s1"
    assert envelope.cwds == ["/b", "/a"]
    assert envelope.git_branches == ["main", "dev"]
    assert (envelope.version, envelope.slug) == ("3", "x")
    assert envelope.started_at == envelope.ended_at == datetime(2025, 1, 1, tzinfo=UTC)


def _read_reference(path: Path) -> JsonLines:
    out = JsonLines()
    for raw in path.read_bytes().splitlines():
        if not raw.strip():
            continue
        out.n_lines += 1
        obj = parse_json_line(raw, out)
        if isinstance(obj, dict):
            out.records.append(obj)
        else:
            out.bad_lines += 1
    return out


def test_read_jsonl_resumes_after_refused_lines_in_order(tmp_path: Path) -> None:
    deep = "[" * 300 + "]" * 300
    lines = [
        b'{"n": 0}',
        b'{"n": 1, "x": ' + deep.encode() + b"}",  # orjson loads it; the guard drops it
        b'{"n": 2',  # truncated
        b'{"n": 3, "v": NaN}',  # only the standard library takes NaN
        b'{"n": 4, "v": NaN, "x": ' + deep.encode() + b"}",  # lenient and too deep: once
        b'{"n": 5, "s": "caf\xe9"}',  # not UTF-8
        b"[1, 2]",  # not an object
        b"   ",
        b'{"n": 6, "s": "\\ud800"}',  # lone surrogate
        b'{"n": 7, "x": ' + json.dumps([[[[1]]]] * 60).encode() + b"}",  # many brackets, shallow
        b'{"n": 8',
    ]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    got, want = read_jsonl(path), _read_reference(path)
    assert [r["n"] for r in got.records] == [0, 3, 5, 6, 7]
    assert got == want and got.modified is not None
    assert (got.bad_lines, got.deep_lines, got.non_utf8_lines, got.n_lines) == (5, 2, 2, 10)


def test_read_jsonl_splits_like_splitlines_with_and_without_carriage_returns(
    tmp_path: Path,
) -> None:
    lf, crlf, cr = (tmp_path / n for n in ("lf.jsonl", "crlf.jsonl", "cr.jsonl"))
    lf.write_bytes(b'{"n": 0}\n\n  \n{"n": 1}\n{"n": 2')
    crlf.write_bytes(b'{"n": 0}\r\n\r\n{"n": 1}\r\n')
    cr.write_bytes(b'{"n": 0}\r{"n": 1}\n{"n": 2}')  # a bare CR ends a line too
    for path in (lf, crlf, cr):
        assert read_jsonl(path) == _read_reference(path)
    assert [r["n"] for r in read_jsonl(cr).records] == [0, 1, 2]
    assert (read_jsonl(lf).n_lines, read_jsonl(lf).bad_lines) == (3, 1)


def test_usage_ledger_sums_the_last_snapshot_of_each_message() -> None:
    ledger = UsageLedger()
    ledger.record("m1", {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 9}, "a")
    ledger.record(
        "m1", {"input_tokens": 6, "output_tokens": "7", "cache_read_input_tokens": True}, "a"
    )
    ledger.record("m2", {"output_tokens": 3, "cache_creation_input_tokens": 2.5}, "b")
    ledger.record("m3", "not a dict", None)
    assert ledger.n_messages == 2
    assert ledger.total() == TokenUsage(input_tokens=6, output_tokens=3, cache_read_tokens=1)
    assert UsageLedger().total() == TokenUsage()
