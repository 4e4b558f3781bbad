"""Every format of the secret corpus is redacted where agents print it, and the corpus is
big enough to mean something."""

from __future__ import annotations

import json

import pytest

from scorer.prepare.redact import redact_session, redact_text
from scorer.prepare.render import render_timeline
from scorer.sources.claude_code import ClaudeCodeSource
from tests.secret_corpus import CORPUS, Case, leaked, write_transcript


def test_corpus_has_at_least_40_formats_in_every_place() -> None:
    assert len(CORPUS) >= 40
    assert len({c.kind for c in CORPUS}) >= 28
    assert {c.where for c in CORPUS} == {"prompt", "command", "output"}


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_text_is_redacted_as_its_kind(case: Case) -> None:
    out, counts = redact_text(case.text)
    assert not leaked(case, out), out
    assert counts[case.kind] >= 1, (counts, out)


@pytest.mark.parametrize("case", CORPUS, ids=[c.name for c in CORPUS])
def test_transcript_is_redacted_raw_and_parsed(case: Case, tmp_path) -> None:
    path = write_transcript(case, tmp_path)
    raw_out, _ = redact_text(path.read_text())  # the raw JSONL (JSON-escaped text)
    assert not leaked(case, raw_out)
    session = ClaudeCodeSource(path).load()
    assert leaked(case, session.model_dump_json())  # the secret really is in there
    clean, report = redact_session(session)
    assert not leaked(case, clean.model_dump_json())
    assert not leaked(case, render_timeline(clean))
    assert report.by_kind.get(case.kind, 0) >= 1


def test_no_false_positive_on_ordinary_commands() -> None:
    ordinary = [
        "mysql -u root -p app < dump.sql",
        "mkdir -p build && docker run -p 8080:80 app",
        "curl -u $API_USER:$API_PASS https://x",
        "docker login -u bob --password-stdin registry",
        "see https://example.com:8080/path?email=a@b.com",
        "ssh://git@github.com:22/org/repo.git",
        "Authorization: Basic <credentials>",
        "uses basic auth with the login form",
        "TASK-SK01 disk usage",
        json.dumps({"auth": "oauth", "auths": {}}),
    ]
    for text in ordinary:
        out, counts = redact_text(text)
        assert out == text and not counts, (text, out)


def test_secret_dict_keys_are_redacted_whole() -> None:
    from scorer.prepare.redact import redact_value

    config = {
        "auths": {"ghcr.io": {"auth": "Ym9iOmdocF9zZWNyZXQ="}},
        "credHelpers": {"gcr.io": "gcloud"},
        "authorization": "Digest abcdef0123456789",
        "private_key": "MIIEvQIBADANBgkqhkiG9w0",
        "author": "bob",
    }
    out, counts = redact_value(config)
    assert out["auths"]["ghcr.io"]["auth"] == "[REDACTED:assignment]"
    assert out["authorization"] == "[REDACTED:assignment]"
    assert out["private_key"] == "[REDACTED:assignment]"
    assert out["credHelpers"] == {"gcr.io": "gcloud"} and out["author"] == "bob"
    assert counts["assignment"] == 3
