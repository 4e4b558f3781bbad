"""Escalation picks and the Langfuse annotation queue (respx)."""

from __future__ import annotations

import json

import httpx
import respx
from langfuse.api import LangfuseAPI

from scorer.jobs.backfill import SessionResult
from scorer.jobs.escalation import enqueue, pick_escalations
from scorer.langfuse_client import LangfuseClient


def _r(sid, overall, rec="complete", outcome="scored"):
    return SessionResult(session_id=sid, outcome=outcome, overall=overall, recommendation=rec)


def test_pick_escalations_threshold_recommendation_and_calibration():
    results = [
        _r("a", 0.2),
        _r("b", 0.9, "escalate"),
        _r("c", 0.8),
        _r("d", 0.7),
        _r("e", 0.1, outcome="failed"),
    ]
    results += [_r(f"x{i}", 0.9) for i in range(10)]
    low, calib = pick_escalations(results, below=0.5, calibration=3, seed=1)
    assert low == ["a", "b"] and len(calib) == 3 and not set(calib) & {"a", "b", "e"}
    assert pick_escalations(results, below=0.5, calibration=3, seed=1) == (low, calib)
    assert pick_escalations(results, below=0.5, already={"a"})[0] == ["b"]


def test_enqueue_creates_queue_once_and_dedupes_items():
    queues, items = [], []
    page = {"page": 1, "limit": 100, "totalItems": 0, "totalPages": 1}

    def list_queues(request):
        return httpx.Response(
            200, json={"data": queues, "meta": {**page, "totalItems": len(queues)}}
        )

    def create_queue(request):
        body = json.loads(request.content)
        q = {
            "id": "q1",
            "name": body["name"],
            "scoreConfigIds": body["scoreConfigIds"],
            "createdAt": "2026-11-22T00:00:00Z",
            "updatedAt": "2026-11-22T00:00:00Z",
        }
        queues.append(q)
        return httpx.Response(200, json=q)

    def list_items(request, qid):
        return httpx.Response(200, json={"data": items, "meta": {**page, "totalItems": len(items)}})

    def create_item(request, qid):
        body = json.loads(request.content)
        item = {
            "id": f"i{len(items)}",
            "queueId": qid,
            "objectId": body["objectId"],
            "objectType": body["objectType"],
            "status": "PENDING",
            "createdAt": "2026-11-22T00:00:00Z",
            "updatedAt": "2026-11-22T00:00:00Z",
        }
        items.append(item)
        return httpx.Response(200, json=item)

    with respx.mock(base_url="https://lf.test") as mock:
        mock.get("/api/public/annotation-queues").mock(side_effect=list_queues)
        mock.post("/api/public/annotation-queues").mock(side_effect=create_queue)
        mock.get(url__regex=r".*/annotation-queues/(?P<qid>[^/]+)/items.*").mock(
            side_effect=list_items
        )
        mock.post(url__regex=r".*/annotation-queues/(?P<qid>[^/]+)/items$").mock(
            side_effect=create_item
        )
        api = LangfuseClient.wrap(
            LangfuseAPI(base_url="https://lf.test", username="pk", password="sk")
        )
        enqueue(api, "review", ["s1", "s2"], config_ids=["c1", "c2"])
        enqueue(api, "review", ["s2", "s3"], config_ids=["c1", "c2"])
    assert len(queues) == 1 and queues[0]["scoreConfigIds"] == ["c1", "c2"]
    assert [i["objectId"] for i in items] == ["s1", "s2", "s3"] and {
        i["objectType"] for i in items
    } == {"SESSION"}
