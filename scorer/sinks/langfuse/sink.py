"""`LangfuseSink`: the Langfuse `ScoreSink` (a partial push is a failed push)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from scorer.errors import SinkError
from scorer.models import Scorecard
from scorer.sinks.langfuse.push import PushResult, push_scorecard

if TYPE_CHECKING:
    from scorer.langfuse_client import LangfuseClient


class LangfuseSink:
    """Pushes a scorecard's seven scores (and its goal probability) to Langfuse (`push_scorecard`).

    Args:
        client: The Langfuse project, or None to build one from the settings.
        target: Session-level scores, or scores on the session's first trace.
    """

    name = "langfuse"
    remote = True

    def __init__(
        self,
        client: LangfuseClient | None = None,
        *,
        target: Literal["session", "trace"] = "session",
    ):
        self.client, self.target = client, target

    def write(self, card: Scorecard) -> str | None:
        """Push the card; returns the session's Langfuse URL.

        Raises:
            SinkError: The API failed, or Langfuse rejected some scores (a 207 that stayed
                partial after the transient items were re-sent).
            CredentialsError: The keys are missing or rejected.
        """
        result = push_scorecard(card, client=self.client, target=self.target)
        if not result.ok:
            raise SinkError(push_problem(result))
        return result.url


def push_problem(result: PushResult) -> str:
    """One line naming the scores Langfuse rejected."""
    bits = [f"{name}: {msg}" for name, msg in result.rejected.items()]
    bits += result.unattributed_errors
    return f"Langfuse rejected scores of session {result.session_id}: " + "; ".join(bits)
