"""`publish`: one failure policy for every path from a scorecard to its sinks."""

from __future__ import annotations

import pytest

from scorer.errors import CredentialsError, SinkError
from scorer.sinks.base import ScoreSink, publish
from scorer.sinks.langfuse import LangfuseSink
from scorer.sinks.store import ScoreStore
from tests.langfuse.conftest import make_scorecard


class FakeRemote:
    """An in-memory remote sink with a queue of failures."""

    name = "fake"
    remote = True

    def __init__(self, *failures: Exception) -> None:
        self.failures = list(failures)
        self.cards: list[str] = []

    def write(self, card):
        if self.failures:
            raise self.failures.pop(0)
        self.cards.append(card.session_id)
        return f"https://fake/{card.session_id}"


def test_both_real_sinks_satisfy_the_protocol():
    sinks: list[ScoreSink] = [ScoreStore(), LangfuseSink()]
    assert [(s.name, s.remote) for s in sinks] == [("store", False), ("langfuse", True)]


def test_local_first_then_remote_then_push_recorded():
    store, remote, order = ScoreStore(), FakeRemote(), []
    card = make_scorecard("s1")
    done = publish(card, [remote, store], on_stored=lambda: order.append(remote.cards[:]))
    assert done.ok and done.written == ["store", "fake"]
    assert order == [[]]  # on_stored ran before the remote write
    assert done.locations[-1] == "https://fake/s1"
    assert store.unpushed() == []


def test_a_remote_failure_is_reported_recorded_and_retried_later():
    store, card = ScoreStore(), make_scorecard("s2")
    done = publish(card, [store, FakeRemote(SinkError("boom"))])
    assert not done.ok and done.errors == {"fake": "boom"} and done.fatal is None
    assert [c.session_id for c in store.unpushed()] == ["s2"]


def test_an_unstored_card_is_kept_when_its_push_fails():
    done = publish(make_scorecard("s3"), [FakeRemote(CredentialsError("no key"))])
    assert isinstance(done.fatal, CredentialsError)
    assert [c.session_id for c in ScoreStore().unpushed()] == ["s3"]


def test_a_local_failure_raises_and_nothing_is_pushed():
    class Broken(FakeRemote):
        remote = False

    remote = FakeRemote()
    with pytest.raises(SinkError):
        publish(make_scorecard("s4"), [Broken(SinkError("disk full")), remote])
    assert remote.cards == []
