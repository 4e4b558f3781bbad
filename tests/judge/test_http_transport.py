"""The LLM judge over plain HTTP (`judge.http_transport`), what a hook's worker uses so it
never imports the SDK: the same requests and the same card as the SDK's client, streamed
when the budget is long, and every failure mapped onto the same rules. Against a
loopback Messages API (`tests/fakes/anthropic.py`, replies checked against the SDK's own
types)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from scorer.errors import CredentialsError, JudgeError
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.config import JudgeConfig
from scorer.judge.http_transport import MessagesFailure, MessagesTransport, assemble
from scorer.judge.retry import classify
from scorer.prepare import prepare
from scorer.retry import RetryKind
from scorer.sources import resolve
from tests.conftest import REPO
from tests.fakes.anthropic import (
    FakeAnthropic,
    error_response,
    message_response,
    refusal_response,
    serve,
    sse_response,
    valid_scoring_payload,
)

DEMO = REPO / "examples" / "demo-session.jsonl"


def demo():
    return prepare(resolve(str(DEMO)).load())


def via_http(url: str, **config) -> AnthropicJudge:
    return AnthropicJudge(
        None, JudgeConfig(**config), transport=MessagesTransport("sk-ant-test", base_url=url)
    )


def replies() -> list:
    return [message_response(valid_scoring_payload(), thinking="Checking.", output_tokens=900)]


def comparable(card) -> dict:
    return card.model_dump(mode="json", exclude={"created_at"})


def test_the_same_request_and_card_as_the_sdk_client():
    sdk, plain = FakeAnthropic(replies()), FakeAnthropic(replies())
    by_sdk = AnthropicJudge(sdk.client(), JudgeConfig(), verify_tokens=False).judge(demo())
    with serve(plain) as url:
        by_http = via_http(url).judge(demo())
    assert comparable(by_http) == comparable(by_sdk)
    assert by_http.status == "scored" and by_http.backend == "api"
    assert plain.message_bodies == sdk.message_bodies  # byte for byte the same request
    (call,) = [r for r in plain.history if r.path == "/v1/messages"]
    assert call.headers["x-api-key"] == "sk-ant-test"
    assert call.headers["anthropic-version"] == "2023-06-01"


def test_a_long_budget_is_streamed_and_assembled():
    fake = FakeAnthropic(replies())
    with serve(fake) as url:
        card = via_http(url, effort="high").judge(demo())  # max_tokens 24,000: streamed
    (body,) = fake.message_bodies
    assert body["stream"] is True and body["max_tokens"] > 21_333
    assert card.status == "scored" and card.usage.output_tokens == 900


def test_a_refusal_goes_to_the_fallback_model_as_with_the_sdk():
    fake = FakeAnthropic([refusal_response("cyber"), *replies()])
    with serve(fake) as url:
        card = via_http(url).judge(demo())
    assert [b["model"] for b in fake.message_bodies] == ["claude-sonnet-5-5", "claude-sonnet-4-6"]
    assert card.status == "scored" and card.refusals[0].category == "cyber"


@pytest.mark.parametrize(
    ("status", "message", "error"),
    [
        (401, "invalid x-api-key", CredentialsError),
        (403, "forbidden", CredentialsError),
        (404, "model: claude-nope", JudgeError),
    ],
)
def test_a_rejection_is_typed_and_not_retried(status, message, error, fast_retry_waits):
    fake = FakeAnthropic([error_response(status, message=message)])
    with serve(fake) as url, pytest.raises(error, match=message):
        via_http(url).judge(demo())
    assert len(fake.message_bodies) == 1 and not fast_retry_waits.anthropic


def test_rate_limits_and_overloads_are_retried_with_the_servers_wait(fast_retry_waits):
    limited = error_response(429, headers={"retry-after": "7"}, message="slow down")
    fake = FakeAnthropic([limited, error_response(529), error_response(500), *replies()])
    with serve(fake) as url:
        card = via_http(url).judge(demo())
    assert card.status == "scored" and len(fake.message_bodies) == 4
    assert fast_retry_waits.anthropic[0] == 7.0 and len(fast_retry_waits.anthropic) == 3


def test_too_long_re_chunks_the_session():
    too_long = error_response(400, message="prompt is too long: 1300000 tokens > 1000000")
    fake = FakeAnthropic([too_long, *replies()])
    with serve(fake) as url:
        card = via_http(url).judge(demo())
    assert card.status == "scored" and "re-chunked" in card.meta["notes"][0]


def test_an_unreachable_api_is_a_transient_failure(fast_retry_waits):
    transport = MessagesTransport("k", base_url="http://127.0.0.1:9")  # discard port: refused
    params = {"model": "m", "max_tokens": 10, "messages": []}
    with pytest.raises(MessagesFailure, match="cannot reach the Messages API") as caught:
        transport(params)
    assert classify(caught.value).kind is RetryKind.TRANSIENT


def test_a_stream_adds_up_to_its_message_and_an_error_in_it_is_transient():
    message = json.loads(replies()[0].content)
    raw = sse_response(message).content.decode()
    events = []
    for part in raw.strip().split("\n\n"):
        name, data = part.split("\n")
        events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    assert assemble(iter(events)) | {"id": "msg_fake"} == message | {"stop_sequence": None}
    overloaded = [events[0], ("error", {"error": {"type": "overloaded_error", "message": "busy"}})]
    with pytest.raises(MessagesFailure, match="busy") as caught:
        assemble(iter(overloaded))
    assert classify(caught.value).kind is RetryKind.TRANSIENT


def test_judging_over_http_never_loads_the_sdk(tmp_path):
    fake = FakeAnthropic(replies())
    with serve(fake) as url:
        script = (
            "import sys\n"
            "from scorer.judge.anthropic import AnthropicJudge\n"
            "from scorer.judge.http_transport import MessagesTransport\n"
            "from scorer.prepare import prepare\nfrom scorer.sources import resolve\n"
            f"t = MessagesTransport('k', base_url={url!r})\n"
            f"card = AnthropicJudge(None, transport=t).judge(prepare(resolve({str(DEMO)!r}).load()))\n"
            "print(card.status, sorted(m for m in ('anthropic', 'httpx2', 'httpx') if m in sys.modules))\n"
        )  # fmt: skip
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path)  # fmt: skip
    assert done.stdout.strip() == "scored []", done.stderr[-2000:]
