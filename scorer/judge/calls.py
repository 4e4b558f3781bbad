"""One structured-output call, seen through to a usable reply or a typed ending.

What each `stop_reason` leads to (every follow-up happens at most once per call):

    end_turn                         validate the JSON; invalid → one repair call with the
                                     error; invalid again → Unscored("invalid_output")
    max_tokens                       the same request again with a larger budget (thinking
                                     ate the answer; no repair prompt); still cut → repair
    refusal                          recorded (model + category); the same request on the
                                     fallback model; refused again → Unscored("refused")
    model_context_window_exceeded    ContextWindowExceeded: the session is re-chunked

Shared by the direct judge and the Message Batches path (`jobs.batches`), which hands in
a batch result as the first response.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scorer.judge import prompts as P
from scorer.judge.catalog import grown_budget, max_output
from scorer.judge.client import ContextWindowExceeded
from scorer.judge.reply import InvalidReply, M, Unscored, UsageTally, reply_text, validate_reply
from scorer.models import Refusal

log = logging.getLogger(__name__)

Send = Callable[[dict[str, Any]], Any]


def refusal_of(response: Any, label: str) -> Refusal:
    """The refusal a response carries (`stop_details` has the category when known)."""
    details = getattr(response, "stop_details", None)
    return Refusal(
        model=response.model,
        category=getattr(details, "category", None),
        explanation=getattr(details, "explanation", None),
        call=label,
    )


def _describe(refusals: list[Refusal]) -> str:
    return " and ".join(f"{r.model} ({r.category or 'no category'})" for r in refusals)


class CallSettler:
    """Follows one request's reply through the table in the module doc.

    Args:
        send: Makes one call (with retries) and returns the `Message`.
        tally: Where every follow-up call's usage, model and refusals go.
        fallback_model: Retries a refusal there; None or the same model: no fallback.
        context_window: For ContextWindowExceeded raised from a reply.
    """

    def __init__(
        self, send: Send, tally: UsageTally, fallback_model: str | None, context_window: int
    ) -> None:
        self.send, self.tally = send, tally
        self.fallback_model = fallback_model or None
        self.context_window = context_window

    def call(self, params: dict[str, Any], reply: type[M], label: str) -> M:
        """Send `params` and see the reply through."""
        response = self.send(params)
        self.tally.add(response.usage)
        return self.settle(params, response, reply, label)

    def settle(
        self,
        params: dict[str, Any],
        response: Any,
        reply: type[M],
        label: str,
        tried: frozenset[str] = frozenset(),
    ) -> M:
        """The validated reply to `params` given its (already counted) `response`.

        Raises:
            Unscored: Refused on the fallback too, or invalid after one repair.
            ContextWindowExceeded: The model ran out of context window.
            anthropic.APIError: A follow-up call failed after retries.
        """
        self.tally.answered(response.model)
        stop = response.stop_reason
        if stop == "model_context_window_exceeded":
            used = response.usage.input_tokens + (response.usage.cache_read_input_tokens or 0)
            raise ContextWindowExceeded(used or None, self.context_window, None)
        if stop == "refusal":
            return self._refused(params, response, reply, label, tried)
        if stop == "max_tokens" and "grow" not in tried:
            bigger = grown_budget(params["max_tokens"], params["model"])
            if bigger is not None:
                log.info("%s: cut off at max_tokens=%d, retrying with %d", label, params["max_tokens"], bigger)  # fmt: skip
                return self._again({**params, "max_tokens": bigger}, reply, label, tried | {"grow"})
        raw = reply_text(response)
        if getattr(response, "no_repair", False):  # the transport already asked again
            tried |= {"repair"}
        try:
            return validate_reply(stop, raw, reply)
        except InvalidReply as e:
            if "repair" in tried:
                raise Unscored(
                    f"{label}: invalid structured output after one repair: {e}", raw
                ) from e
            log.info("%s: invalid reply (%s), asking for a repair", label, e)
            messages = P.repair_messages(params["messages"], raw, str(e))
            return self._again({**params, "messages": messages}, reply, label, tried | {"repair"})

    def _again(
        self, params: dict[str, Any], reply: type[M], label: str, tried: frozenset[str]
    ) -> M:
        response = self.send(params)
        self.tally.add(response.usage)
        return self.settle(params, response, reply, label, tried)

    def _refused(
        self,
        params: dict[str, Any],
        response: Any,
        reply: type[M],
        label: str,
        tried: frozenset[str],
    ) -> M:
        self.tally.refused(refusal_of(response, label))
        fallback = self.fallback_model
        if "fallback" in tried or fallback is None or fallback == params["model"]:
            mine = [r for r in self.tally.refusals if r.call == label]
            raise Unscored(f"refused: {label} declined by {_describe(mine)}", code="refused")
        log.warning("%s: refused by %s, retrying on %s", label, response.model, fallback)
        budget = min(params["max_tokens"], max_output(fallback))
        retry = {**params, "model": fallback, "max_tokens": budget}
        return self._again(retry, reply, label, tried | {"fallback"})
