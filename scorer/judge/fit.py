"""Does a judge request fit? The single-call ceiling and the prompt estimate of each chunk.

A mixin of `AnthropicJudge`: estimates come from the chunker's own token counts (no
re-tokenising), and only a request near the ceiling is confirmed with `count_tokens`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from scorer.judge import prompts as P
from scorer.judge.catalog import CallKind
from scorer.judge.client import ContextWindowExceeded, count_tokens
from scorer.judge.schema import ChunkNotes
from scorer.models import Chunk
from scorer.settings import DEFAULT_TOKEN_SAFETY

if TYPE_CHECKING:
    from scorer.judge.config import JudgeConfig
    from scorer.judge.prompts import PromptSet
    from scorer.judge.sdk import anthropic

NEAR_LIMIT = 0.85
"""Confirm a request with `count_tokens` only when its estimate passes this share of the room."""


class Counter(Protocol):
    """A token estimator (`prepare.tokens.TokenCounter`, or a test's stand-in)."""

    def count(self, text: str) -> int: ...


class RequestFit:
    """The fit checks of a judge (mixed into `AnthropicJudge`, which sets the attributes)."""

    config: JudgeConfig
    prompts: PromptSet
    context_window: int
    max_prompt_tokens: int | None
    _overhead: dict[str, int]
    _verify_tokens: bool

    @property
    def counter(self) -> Counter:
        raise NotImplementedError

    @property
    def system_text(self) -> str:
        raise NotImplementedError

    @property
    def client(self) -> anthropic.Anthropic:
        raise NotImplementedError

    def max_tokens(self, kind: CallKind) -> int:
        raise NotImplementedError

    def scoring_request(self, header: str, chunk: Chunk) -> dict[str, Any]:
        raise NotImplementedError

    def request_params(self, messages: list[dict], reply: Any, max_tokens: int) -> dict[str, Any]:
        raise NotImplementedError

    def _kind(self, chunks: Sequence[Chunk]) -> CallKind:
        return "score" if len(chunks) == 1 else "notes"

    def overhead(self, kind: CallKind) -> int:
        """Estimated tokens of the system prompt and template around one chunk (once)."""
        if kind not in self._overhead:
            empty = Chunk(index=0, text="", event_indices=[], tokens=0)
            if kind == "score":
                messages = P.single_scoring_messages(self.prompts, "", empty)
            else:
                messages = P.chunk_notes_messages(self.prompts, "", empty, 2)
            text = self.system_text + "".join(m["content"] for m in messages)
            self._overhead[kind] = self.counter.count(text)
        return self._overhead[kind]

    def estimate_chunk(
        self, chunk: Chunk, kind: CallKind, safety_factor: float = DEFAULT_TOKEN_SAFETY
    ) -> int:
        """Prompt tokens of `chunk`'s request from the chunker's own count (no re-tokenising).

        `safety_factor` is the one the chunker counted with: it comes off before the
        estimate factor goes on.
        """
        scale = self.config.estimate_factor / safety_factor
        return math.ceil(chunk.tokens * scale) + self.overhead(kind)

    def room(self, kind: CallKind) -> int:
        """The single-call ceiling: `SCORER_MAX_PROMPT_TOKENS`, within window − max_tokens."""
        room = self.context_window - self.max_tokens(kind)
        return min(room, self.max_prompt_tokens) if self.max_prompt_tokens else room

    def check_chunks(
        self, header: str, chunks: Sequence[Chunk], safety_factor: float = DEFAULT_TOKEN_SAFETY
    ) -> int:
        """The largest request's prompt tokens; raises ContextWindowExceeded when it cannot fit.

        Estimated from `Chunk.tokens` (counted at `safety_factor`); only a request near the
        ceiling is confirmed with `count_tokens` (when the judge has a client), so a normal
        session costs no extra call.
        """
        kind = self._kind(chunks)
        sizes = [self.estimate_chunk(c, kind, safety_factor) for c in chunks]
        largest = max(range(len(chunks)), key=sizes.__getitem__)
        tokens, room = sizes[largest], self.room(kind)
        if tokens > NEAR_LIMIT * room and self._verify_tokens:
            chunk = chunks[largest]
            if kind == "score":
                params = self.scoring_request(header, chunk)
            else:
                messages = P.chunk_notes_messages(self.prompts, header, chunk, len(chunks))
                params = self.request_params(messages, ChunkNotes, self.max_tokens("notes"))
            tokens = count_tokens(self.client, params) or tokens
        if tokens > room:
            raise ContextWindowExceeded(tokens, room, chunks[largest].index)
        return tokens
