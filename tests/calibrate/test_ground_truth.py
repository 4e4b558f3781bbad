"""Ground-truth loaders: Terminal-Bench outcomes, CSV/JSONL files, Langfuse annotations."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime

import httpx
import pytest
import respx
from langfuse.api import LangfuseAPI
from langfuse.api.core.pydantic_utilities import parse_obj_as
from langfuse.api.scores.types.get_scores_v3response import GetScoresV3Response

from scorer.calibrate.ground_truth import (
    load_file,
    load_langfuse_annotations,
    load_terminal_bench,
    outcome_label,
)
from scorer.errors import ConfigError, CredentialsError, SourceError
from scorer.langfuse_client import LangfuseClient
from tests.conftest import FIXTURES

FIX = FIXTURES / "calibrate"
BASE = "https://langfuse.test"


# --- Terminal-Bench --------------------------------------------------------------------


def _expected_outcomes(root):
    """Count outcomes straight from the files, independently of the loader."""
    counts = {"complete": 0, "partial": 0, "failed": 0}
    for f in root.glob("*/label.json"):
        d = json.loads(f.read_text())
        if d["is_resolved"] is True:
            counts["complete"] += 1
        elif "passed" in (d["parser_results"] or {}).values():
            counts["partial"] += 1
        else:
            counts["failed"] += 1
    return counts


def test_terminal_bench_counts(terminal_bench):
    labels = load_terminal_bench(terminal_bench)
    assert len(labels) == 80
    got = {k: sum(lab.label == k for lab in labels) for k in ("complete", "partial", "failed")}
    assert got["complete"] == 30
    assert got == _expected_outcomes(terminal_bench)
    assert got == {"complete": 30, "partial": 24, "failed": 26}
    assert {lab.value for lab in labels if lab.label == "partial"} == {1.0}
    assert {(lab.dimension, lab.annotator, lab.source) for lab in labels} == {
        ("goal_achievement", "execution", "terminal-bench")
    }


def test_terminal_bench_session_ids_match_stream_init(terminal_bench):
    labels = {lab.meta["task_id"]: lab for lab in load_terminal_bench(terminal_bench)}
    maze = labels["blind-maze-explorer-5x5"]
    first = json.loads(
        (terminal_bench / "blind-maze-explorer-5x5" / "session.jsonl").open().readline()
    )
    assert (first["type"], first["subtype"]) == ("system", "init")
    assert maze.session_id == first["session_id"] == "e2b8481a-d160-489d-b171-ee1d5e37ecda"
    assert maze.meta["session_path"].endswith("blind-maze-explorer-5x5/session.jsonl")
    assert maze.meta["instruction"].startswith("You are placed in a blind maze")
    # the one task without a stream falls back to its backend and task id
    no_stream = labels["extract-safely"]
    assert no_stream.session_id == "claude_code_coder/extract-safely"
    assert no_stream.meta["session_path"] is None
    assert len({lab.session_id for lab in labels.values()}) == 80
    assert sum(lab.meta["stream_complete"] is False for lab in labels.values()) >= 1
    # is_resolved null + parser_results null (parse_error) counts as failed
    assert labels["cron-broken-network"].label == "failed"


def test_terminal_bench_loads_every_backend_from_their_parent(terminal_bench_all):
    labels = load_terminal_bench(terminal_bench_all)
    assert Counter(lab.meta["backend"] for lab in labels) == {
        "claude_code_coder": 80,
        "claude_code_gpt5": 80,
    }
    gpt5 = [lab for lab in labels if lab.meta["backend"] == "claude_code_gpt5"]
    assert Counter(lab.label for lab in gpt5) == {"complete": 23, "partial": 24, "failed": 33}
    assert Counter(lab.label for lab in gpt5) == _expected_outcomes(
        terminal_bench_all / "claude_code_gpt5"
    )
    assert sum(bool(lab.meta["session_path"]) for lab in gpt5) == 76
    # one id per run: extract-safely has no stream in either backend
    assert len({lab.session_id for lab in labels}) == 160
    assert {lab.session_id for lab in labels if lab.meta["task_id"] == "extract-safely"} == {
        "claude_code_coder/extract-safely",
        "claude_code_gpt5/extract-safely",
    }
    one = load_terminal_bench(terminal_bench_all / "claude_code_gpt5")
    assert [lab.model_dump() for lab in one] == [lab.model_dump() for lab in gpt5]


def test_terminal_bench_ground_truth_defaults_to_every_backend(terminal_bench_all, monkeypatch):
    from scorer.jobs.calibrate import default_terminal_bench, load_ground_truth
    from scorer.settings import get_settings

    assert default_terminal_bench() == terminal_bench_all
    assert len(load_ground_truth("terminal-bench")) == 160
    assert len(load_ground_truth(f"terminal-bench:{terminal_bench_all}")) == 160
    coder = terminal_bench_all / "claude_code_coder"
    assert len(load_ground_truth(f"terminal-bench:{coder}")) == 80
    for setting, n in ((terminal_bench_all, 160), (coder, 80)):
        monkeypatch.setenv("SCORER_TERMINAL_BENCH", str(setting))
        get_settings.cache_clear()
        assert len(load_ground_truth("terminal-bench")) == n


def test_outcome_label_rules():
    assert outcome_label({"is_resolved": True, "parser_results": {"a": "failed"}}) == "complete"
    assert (
        outcome_label({"is_resolved": False, "parser_results": {"a": "failed", "b": "passed"}})
        == "partial"
    )
    assert outcome_label({"is_resolved": False, "parser_results": {"a": "failed"}}) == "failed"
    assert outcome_label({"is_resolved": None, "parser_results": None}) == "failed"


def test_terminal_bench_missing_root(tmp_path):
    with pytest.raises(SourceError, match=r"no \*/label\.json"):
        load_terminal_bench(tmp_path / "nope")
    (tmp_path / "empty" / "backend" / "task").mkdir(parents=True)
    with pytest.raises(SourceError, match="nor under its subfolders"):
        load_terminal_bench(tmp_path / "empty")


# --- files -----------------------------------------------------------------------------


def test_load_csv_maps_categories_and_numbers():
    labels = load_file(FIX / "labels.csv")
    assert [
        (lab.session_id, lab.dimension, lab.value, lab.label, lab.annotator) for lab in labels
    ] == [
        ("s1", "goal_achievement", 2.0, "complete", "alice"),
        ("s1", "goal_achievement", 2.0, "complete", "bob"),
        ("s2", "goal_achievement", 1.0, "partial", "alice"),  # case-insensitive label
        ("s2", "output_quality", 4.0, None, "alice"),
        ("s3", "error_handling", 2.0, "recovered", "bob"),
    ]
    assert labels[0].source == "file:labels.csv"
    assert labels[0].meta == {"line": 2, "note": "looks done"}


def test_load_jsonl_skips_blank_lines_and_defaults_annotator():
    labels = load_file(FIX / "labels.jsonl")
    assert [(lab.session_id, lab.value, lab.label, lab.annotator) for lab in labels] == [
        ("s1", 0.0, "failed", "carol"),
        ("s2", 3.5, None, "human"),
    ]
    assert labels[1].meta["line"] == 3


def test_bad_category_names_the_line():
    with pytest.raises(
        ConfigError, match=r"bad_value\.csv:3: unknown goal_achievement category 'finished'"
    ):
        load_file(FIX / "bad_value.csv")


def test_out_of_range_names_the_line():
    with pytest.raises(
        ConfigError, match=r"bad_range\.jsonl:3: output_quality value 9 outside 1..5"
    ):
        load_file(FIX / "bad_range.jsonl")


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("x.csv", "session_id,value\ns1,2\n", "x.csv:1: missing column"),
        (
            "x.csv",
            "session_id,dimension,value\ns1,nonsense,2\n",
            "x.csv:2: unknown dimension 'nonsense'",
        ),
        (
            "x.csv",
            "session_id,dimension,value\n,goal_achievement,2\n",
            "x.csv:2: missing session_id",
        ),
        ("x.jsonl", '{"session_id": "s"\n', "x.jsonl:1: not valid JSON"),
        ("x.jsonl", "[1, 2]\n", "x.jsonl:1: expected a JSON object"),
        (
            "x.jsonl",
            '{"session_id": "s", "dimension": "goal_achievement", "value": 5}\n',
            "not a category value",
        ),
        ("x.txt", "", "must be .csv or .jsonl"),
    ],
)
def test_bad_files(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="cannot read label file"):
        load_file(tmp_path / "absent.csv")


# --- Langfuse --------------------------------------------------------------------------


def _score(i, name, data_type, value, subject, author="u-alice", **extra):
    return {
        "id": f"sc-{i}",
        "projectId": "p1",
        "name": name,
        "dataType": data_type,
        "value": value,
        "source": "ANNOTATION",
        "timestamp": "2026-11-20T10:00:00Z",
        "environment": "default",
        "createdAt": "2026-11-20T10:00:00Z",
        "updatedAt": "2026-11-20T10:00:00Z",
        "comment": None,
        "configId": None,
        "metadata": {},
        "authorUserId": author,
        "queueId": "q1",
        "subject": subject,
        **extra,
    }


PAGE1 = {
    "data": [
        _score(
            1, "goal_achievement", "CATEGORICAL", "partial", {"kind": "session", "id": "sess-1"}
        ),
        _score(2, "output_quality", "NUMERIC", 4, {"kind": "trace", "id": "tr-9"}, author="u-bob"),
        _score(3, "notes", "TEXT", "free text", {"kind": "trace", "id": "tr-9"}),
    ],
    "meta": {"limit": 100, "cursor": "Y3Vyc29yLTI"},
}
PAGE2 = {
    "data": [
        _score(
            4,
            "goal_achievement",
            "CATEGORICAL",
            "complete",
            {"kind": "observation", "id": "obs-1", "traceId": "tr-7"},
        ),
        _score(5, "goal_achievement", "CATEGORICAL", "bogus", {"kind": "session", "id": "sess-2"}),
        _score(
            6, "goal_achievement", "CATEGORICAL", "failed", {"kind": "experiment", "id": "run-1"}
        ),
    ],
    "meta": {"limit": 100},
}


def _api():
    return LangfuseClient.wrap(
        LangfuseAPI(base_url=BASE, username="pk-lf-test", password="sk-lf-test")
    )


def test_fake_pages_parse_with_sdk_types():
    for page in (PAGE1, PAGE2):
        # the same parse the SDK applies to a real response body
        parsed = parse_obj_as(GetScoresV3Response, page)
        assert [s.data_type for s in parsed.data][:2] in (
            ["CATEGORICAL", "NUMERIC"],
            ["CATEGORICAL"] * 2,
        )
        assert all(s.subject is not None and s.author_user_id for s in parsed.data)


@respx.mock
def test_langfuse_annotations_paging_and_mapping():
    def answer(request: httpx.Request) -> httpx.Response:
        cursor = request.url.params.get("cursor")
        return httpx.Response(200, json=PAGE2 if cursor == "Y3Vyc29yLTI" else PAGE1)

    route = respx.get(f"{BASE}/api/public/v3/scores").mock(side_effect=answer)
    since = datetime(2026, 11, 1, tzinfo=UTC)
    labels = load_langfuse_annotations(_api(), since=since)

    assert route.call_count == 2
    first, second = (call.request.url.params for call in route.calls)
    assert first["source"] == "ANNOTATION"
    assert first["fields"] == "details,subject,annotation"
    assert first["limit"] == "100"
    assert first["fromTimestamp"].startswith("2026-11-01T00:00:00")
    assert "goal_achievement" in first["name"].split(",")
    assert "cursor" not in first and second["cursor"] == "Y3Vyc29yLTI"

    # TEXT score, unknown category and experiment subject are dropped
    assert [
        (lab.session_id, lab.dimension, lab.value, lab.label, lab.annotator) for lab in labels
    ] == [
        ("sess-1", "goal_achievement", 1.0, "partial", "u-alice"),
        ("tr-9", "output_quality", 4.0, None, "u-bob"),
        ("tr-7", "goal_achievement", 2.0, "complete", "u-alice"),
    ]
    assert labels[2].meta["subject_kind"] == "trace"
    assert labels[0].meta["score_id"] == "sc-1" and labels[0].source == "langfuse"


@respx.mock
def test_langfuse_names_filter_is_sent():
    route = respx.get(f"{BASE}/api/public/v3/scores").mock(
        return_value=httpx.Response(200, json={"data": [], "meta": {"limit": 100}})
    )
    assert load_langfuse_annotations(_api(), names=["goal_achievement"]) == []
    assert route.calls.last.request.url.params["name"] == "goal_achievement"


@respx.mock
def test_langfuse_rejected_keys():
    respx.get(f"{BASE}/api/public/v3/scores").mock(
        return_value=httpx.Response(401, json={"message": "no"})
    )
    with pytest.raises(CredentialsError, match="LANGFUSE_PUBLIC_KEY"):
        load_langfuse_annotations(_api())


@respx.mock
def test_langfuse_network_error():
    respx.get(f"{BASE}/api/public/v3/scores").mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(SourceError, match="ConnectError"):
        load_langfuse_annotations(_api())


@respx.mock
def test_langfuse_annotations_use_the_shared_retry_policy(fast_retry_waits):
    """A 429 waits for its Retry-After and a 503 backs off, like every Langfuse read."""
    route = respx.get(f"{BASE}/api/public/v3/scores").mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "6"}, json={"message": "slow"}),
            httpx.Response(503, json={"message": "busy"}),
            httpx.Response(200, json={"data": [], "meta": {"limit": 100}}),
        ]
    )
    assert load_langfuse_annotations(_api()) == []
    assert route.call_count == 3 and fast_retry_waits.langfuse == [6.0, 2.0]


def test_terminal_bench_ids_join_with_stream_json_source(terminal_bench):
    from scorer.sources.stream_json import StreamJsonSource

    labels = {lab.meta["task_id"]: lab for lab in load_terminal_bench(terminal_bench)}
    for task in ("blind-maze-explorer-5x5", "path-tracing"):
        session = StreamJsonSource(terminal_bench / task / "session.jsonl").load()
        assert session.session_id == labels[task].session_id
