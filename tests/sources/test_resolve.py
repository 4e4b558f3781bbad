"""`resolve(arg)`: paths, session ids, forced formats and the errors in between."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from scorer.errors import ConfigError, SourceError
from scorer.models import SourceKind
from scorer.sources import ClaudeCodeSource, StreamJsonSource, resolve, sniff_format
from tests.conftest import FIXTURES

HERE = FIXTURES / "sources"
SID = "22222222-3333-4444-8555-666666666666"
META_ROOT = HERE / "meta_link"


def test_path_is_sniffed() -> None:
    assert isinstance(resolve(str(HERE / "split_replay.jsonl")), ClaudeCodeSource)
    assert isinstance(resolve(str(HERE / "stream_truncated.jsonl")), StreamJsonSource)
    assert sniff_format(HERE / "user_kinds.jsonl") == "claude-code"


def test_session_id_is_found_under_projects_root() -> None:
    source = resolve(SID, projects_root=META_ROOT)
    assert isinstance(source, ClaudeCodeSource)
    assert source.load().session_id == SID


def test_session_id_prefix_and_env_default(monkeypatch: pytest.MonkeyPatch) -> None:
    from scorer.settings import get_settings

    monkeypatch.setenv("SCORER_CLAUDE_PROJECTS", str(META_ROOT))
    get_settings.cache_clear()
    source = resolve("22222222-3333")
    assert source.load().session_id == SID


def test_unknown_id_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=str(tmp_path)):
        resolve("99999999-0000-4000-8000-000000000000", projects_root=tmp_path)


def test_missing_projects_root_and_non_id(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="does not exist"):
        resolve("99999999-0000", projects_root=tmp_path / "nope")
    with pytest.raises(SourceError, match="no such file"):
        resolve("some/missing/file.jsonl", projects_root=tmp_path)


def test_forced_source_and_unknown_source(tmp_path: Path) -> None:
    copy = tmp_path / "run.jsonl"
    shutil.copy(HERE / "stream_truncated.jsonl", copy)
    source = resolve(str(copy), source="stream-json", task="do it")
    assert source.kind == SourceKind.STREAM_JSON and source.load().task == "do it"
    with pytest.raises(
        ConfigError,
        match="choose one of: asciinema, claude-code, langfuse, stream-json, terminal, tmux",
    ):
        resolve(str(copy), source="bogus")


def test_langfuse_and_tmux_register_in_resolve(tmp_path: Path, monkeypatch) -> None:
    from scorer.settings import get_settings
    from scorer.sources import SourceOptions
    from scorer.sources.langfuse import LangfuseSource
    from scorer.sources.tmux import TmuxSource

    opts = SourceOptions(repo=tmp_path, lines=10, task="t")
    tmux = resolve("work", source="tmux", options=opts)
    assert isinstance(tmux, TmuxSource)
    lf = resolve("abc", source="langfuse", options=SourceOptions(enrich_local=True))
    assert isinstance(lf, LangfuseSource) and lf.enrich_local
    # auto: a local miss is an error without Langfuse, and a Langfuse session with it
    with pytest.raises(SourceError):
        resolve("abcdef12", projects_root=tmp_path)
    monkeypatch.setenv("LANGFUSE_PUBLIC_KEY", "pk")
    monkeypatch.setenv("LANGFUSE_SECRET_KEY", "sk")
    get_settings.cache_clear()
    auto = resolve("abcdef12", projects_root=tmp_path)
    assert isinstance(auto, LangfuseSource) and auto.session_id == "abcdef12"


@pytest.mark.parametrize("name", ["array.json", "other_jsonl.jsonl", "binary.jsonl"])
def test_unrecognised_files_are_source_errors(name: str) -> None:
    with pytest.raises(SourceError):
        resolve(str(HERE / name)).load()


def test_empty_file_resolves_then_reports_empty() -> None:
    from scorer.errors import EmptySessionError

    with pytest.raises(EmptySessionError, match="empty"):
        resolve(str(HERE / "empty.jsonl")).load()


def test_directory_is_rejected() -> None:
    with pytest.raises(SourceError, match="directory"):
        resolve(str(HERE))
