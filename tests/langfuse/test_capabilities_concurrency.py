"""Capability detection: one probe per host per process, also when threads start together
(issue 24: a v3-like server got 8 refused list POSTs in one process)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from scorer import langfuse_caps
from scorer.sinks.langfuse import push_scorecard
from scorer.sources.langfuse import LangfuseSource
from tests.langfuse.conftest import make_scorecard
from tests.langfuse.fake_v3 import FakeLangfuseV3
from tests.langfuse.plugin_fixture import convert_transcript

THREADS = 8


def together(work: Callable[[int], None]) -> list[BaseException]:
    """Run `work(i)` in THREADS threads released at the same moment."""
    gate, errors = threading.Barrier(THREADS), []

    def run(i: int) -> None:
        gate.wait()
        try:
            work(i)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def test_concurrent_first_reads_send_one_v2_probe(cc_projects):
    path = cc_projects / "-home-USER-projects-spotter" / "short.jsonl"
    observations = convert_transcript(path)
    sid = observations[0]["sessionId"]
    with FakeLangfuseV3(observations) as v3:
        client = v3.client()
        errors = together(lambda i: LangfuseSource(sid, client=client).load())
        assert errors == []
        assert v3.calls["observations"] == 1  # one 404; the other seven waited for it
        assert langfuse_caps.capabilities(client).observations_v2 is False


def test_concurrent_first_pushes_ask_the_version_once_and_are_never_refused():
    with FakeLangfuseV3() as v3:
        client = v3.client()
        errors = together(lambda i: push_scorecard(make_scorecard(f"s{i}"), client=client))
        assert errors == []
        assert (v3.calls["health"], v3.calls["scores"]) == (1, 0)
        assert v3.calls["ingestion"] == THREADS and len(v3.scores) == 7 * THREADS  # no p


def test_a_server_refusing_lists_refuses_one_even_under_concurrency():
    with FakeLangfuseV3(version="4.30.1") as odd:
        client = odd.client()
        errors = together(lambda i: push_scorecard(make_scorecard(f"s{i}"), client=client))
        assert errors == []
        lists = [b for b in odd.score_batches if len(b) > 1]
        assert odd.calls["health"] == 1 and lists == []
        refused = odd.calls["scores"] - 7 * THREADS
        assert refused == 1 and len(odd.scores) == 7 * THREADS
