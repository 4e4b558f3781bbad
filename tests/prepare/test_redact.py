"""Secrets redaction: every format, planted inside real transcripts, plus false-positive guards.

Fake secrets are assembled from pieces so this file does not trip secret scanners.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from scorer.models import Event, EventKind, Session, SourceKind
from scorer.prepare.redact import RedactionReport, redact_session, redact_text, redact_value
from tests.conftest import BIG_SESSION, SPOTTER, TERMINAL_BENCH, require

A36 = "aB3dE5fG7hJ9kL2mN4pQ6rS8tU0vW1xY3zA5"  # 36 mixed alnum
HEX40 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"

# (kind, text as it would appear, the secret that must disappear)
CORPUS: list[tuple[str, str, str]] = [
    ("anthropic_key", "ANTHROPIC_KEY is sk-" + "ant-api03-" + A36 + "-Qz9_x", "ant-api03-" + A36),
    ("openai_key", "client = OpenAI(key='sk-" + "proj-" + A36 + "_T3BlbkFJ')", "proj-" + A36),
    ("openai_key", "legacy: sk-" + A36 + "Zx81kPq0Lm2N", A36 + "Zx81kPq0Lm2N"),
    (
        "langfuse_key",
        "LF secret sk-" + "lf-" + "1c2b3a4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
        "1c2b3a4d-5e6f-7a8b-9c0d",
    ),
    (
        "langfuse_key",
        "public pk-" + "lf-" + "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d ok",
        "0a1b2c3d-4e5f-6a7b-8c9d",
    ),
    ("aws_access_key_id", "aws id AKIA" + "Q7ZR2XW5NB4KJ8LD in config", "Q7ZR2XW5NB4KJ8LD"),
    ("aws_access_key_id", "session ASIA" + "Y6TP3MV9CH2LQ4RE.", "Y6TP3MV9CH2LQ4RE"),
    (
        "aws_secret_key",
        "[default]\naws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "Zq8Lm4Np2K",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY",
    ),
    ("github_token", "git clone https://ghp" + "_" + A36 + "@github.com/o/r.git", "_" + A36),
    ("github_token", "GH_TOKEN_CI gho" + "_" + A36 + "x done", A36 + "x"),
    ("github_token", "pat github" + "_pat_" + "11ABCDEFG0" + A36 + "_" + A36, "11ABCDEFG0" + A36),
    ("gitlab_token", "remote uses glpat" + "-" + "xY9-kL2mN4pQ6rS8tU0v", "xY9-kL2mN4pQ6rS8tU0v"),
    ("slack_token", "bot xoxb" + "-" + "1234567890-0987654321-" + A36[:24], A36[:24]),
    ("slack_token", "app token xapp" + "-1-" + "A0B1C2D3E4-" + "5566778899-" + A36[:20], A36[:20]),
    (
        "slack_webhook",
        "curl -X POST https://hooks." + "slack.com/services/" + "T0ABC1DEF/B0GHI2JKL/" + A36[:24],
        "T0ABC1DEF/B0GHI2JKL/",
    ),
    ("stripe_key", "stripe.api_key = sk" + "_live_" + "51H" + A36[:24], "51H" + A36[:24]),
    ("stripe_key", "restricted rk" + "_live_" + "51J" + A36[:21], "51J" + A36[:21]),
    ("google_api_key", "maps?key=AI" + "za" + "SyD" + A36[:32] + "&x=1", "SyD" + A36[:32]),
    (
        "jwt",
        "Cookie: session=ey"
        + "JhbGciOiJIUzI1NiJ9.ey"
        + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N",
    ),
    (
        "private_key",
        "-----BEGIN OPENSSH "
        + "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz\n"
        "c2gtZWQyNTUxOQAAACBf8Q2w\n-----END OPENSSH " + "PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ),
    (
        "private_key",
        "key.pem:\n-----BEGIN RSA "
        + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq98zR2x0Qe1KxV4nV3Q\n-----END RSA "
        + "PRIVATE KEY-----\n",
        "MIIEpAIBAAKCAQEA7bq98zR2x0Qe1KxV4nV3Q",
    ),
    (
        "url_password",
        "DATABASE_URL postgres://admin:" + "Pg5ecret!42" + "@db.internal:5432/app",
        "Pg5ecret!42",
    ),
    ("assignment", "export DB_PASS" + "WORD=hunter2" + "xK9", "hunter2xK9"),
    (
        "assignment",
        '{"client_sec' + 'ret": "' + "cs_9Qm2Lx7Vb4Np" + '", "id": 3}',
        "cs_9Qm2Lx7Vb4Np",
    ),
    ("assignment", "settings.yaml:\n  api_key: " + "a1b2c3d4e5f6g7h8" + "\n", "a1b2c3d4e5f6g7h8"),
    ("assignment", "SLACK_SIGNING_SEC" + "RET='" + "8f7e6d5c4b3a2918" + "'", "8f7e6d5c4b3a2918"),
    ("bearer_token", "Authorization: Bear" + "er " + "tok_" + A36, "tok_" + A36),
    ("huggingface_token", "HF login hf" + "_" + A36[:34], A36[:34]),
]

FALSE_POSITIVES = [
    f"commit {HEX40} Merge branch 'main'",
    "session 0f8fad5b-d9cb-469f-a165-70867728950e started",
    "client.messages.create(model=m, max_tokens=4096, messages=msgs)",
    '"usage": {"input_tokens": 1234, "cache_read_input_tokens": 98765, "output_tokens": 77}',
    'token = os.environ["GITHUB_TOKEN"]',
    "def login(api_key=api_key, password: str = None):",
    "PASSWORD=${DB_PASSWORD} ./run.sh",
    "password: <your-password>",
    'export OPENAI_API_KEY="$OPENAI_API_KEY"',
    "API_KEY=",
    'tokenizer = "cl100k_base"',
    "ls /home/USER/.ssh/id_rsa.pub /etc/ssl/private/server.key",
    "docker pull python@sha256:" + HEX40 + HEX40[:24],
    "run mkdir -p /tmp/task-abcdefghijklmnopqrstuvwxyz01234",
    "see https://github.com/org/repo/blob/main/README.md#install",
    "ssh git@github.com:org/repo.git",
    "meta-llama-3-8B.tiktoken:ID09PT09PT09PT09PT09PT09PT09PT09",
    "seed=124-tokens=8232325120_heavy.json",
    "contact [REDACTED_EMAIL] about [REDACTED_SIGNATURE]",
]


@pytest.mark.parametrize(
    ("kind", "text", "secret"), CORPUS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(CORPUS)]
)
def test_each_format_is_redacted(kind: str, text: str, secret: str) -> None:
    out, counts = redact_text(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out
    assert counts == Counter({kind: 1})


def test_corpus_covers_at_least_15_formats() -> None:
    assert len({k for k, _, _ in CORPUS}) >= 15


@pytest.mark.parametrize("text", FALSE_POSITIVES)
def test_false_positive_guards(text: str) -> None:
    out, counts = redact_text(text)
    assert out == text
    assert not counts


def test_redaction_keeps_context() -> None:
    out, _ = redact_text("postgres://admin:" + "Pg5ecret!42" + "@db.internal:5432/app")
    assert out == "postgres://admin:[REDACTED:url_password]@db.internal:5432/app"
    out, _ = redact_text('{"client_sec' + 'ret": "cs_9Qm2Lx7Vb4Np"}')
    assert out == '{"client_secret": "[REDACTED:assignment]"}'


def test_specific_kind_wins_over_assignment_and_counts_once() -> None:
    out, counts = redact_text("export OPENAI_API_KEY=sk-" + "proj-" + A36)
    assert out == "export OPENAI_API_KEY=[REDACTED:openai_key]"
    assert counts == Counter({"openai_key": 1})


def test_private_key_without_end_line_is_still_cut() -> None:
    text = (
        "-----BEGIN EC "
        + "PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oR\n(truncated)"
    )
    out, counts = redact_text(text)
    assert "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oR" not in out
    assert out.endswith("(truncated)")
    assert counts["private_key"] == 1


def test_redact_value_walks_json_and_never_mutates() -> None:
    value = {
        "env": {"API_KEY": "a1b2c3d4e5f6", "HOME": "/root", "retries": 3},
        "cmds": ["echo hi", "curl -H 'Authorization: Bearer " + "tok_" + A36 + "'"],
        "max_tokens": 4096,
        "token": "",
    }
    before = json.dumps(value)
    out, counts = redact_value(value)
    assert json.dumps(value) == before
    assert out["env"] == {"API_KEY": "[REDACTED:assignment]", "HOME": "/root", "retries": 3}
    assert A36 not in json.dumps(out)
    assert out["max_tokens"] == 4096 and out["token"] == ""
    assert counts == Counter({"assignment": 1, "bearer_token": 1})


# ---- planted into real transcripts ---------------------------------------------------


def _plant(records: list[dict], texts: list[str]) -> list[dict]:
    """Put a third of the texts into the first prompt, tool input and tool result each."""
    thirds = [texts[0::3], texts[1::3], texts[2::3]]
    prompt = next(
        r for r in records if r.get("type") == "user" and isinstance(r["message"]["content"], str)
    )
    prompt["message"]["content"] += "\n" + "\n".join(thirds[0])
    tool_use = next(
        b
        for r in records
        if r.get("type") == "assistant"
        for b in r["message"]["content"]
        if b.get("type") == "tool_use"
    )
    tool_use["input"]["env_dump"] = "\n".join(thirds[1])
    result = next(
        b
        for r in records
        if r.get("type") == "user" and isinstance(r["message"]["content"], list)
        for b in r["message"]["content"]
        if b.get("type") == "tool_result"
    )
    planted = "\n".join(thirds[2])
    if isinstance(result["content"], str):
        result["content"] += "\n" + planted
    else:
        result["content"].append({"type": "text", "text": planted})
    return records


@pytest.fixture
def planted_transcript(tmp_path: Path) -> Path:
    source = require(SPOTTER / "tool_heavy.jsonl")
    records = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    records = _plant(records, [text for _, text, _ in CORPUS] + FALSE_POSITIVES)
    out = tmp_path / "planted.jsonl"
    out.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    return out


def _expected() -> Counter[str]:
    return Counter(kind for kind, _, _ in CORPUS)


def test_planted_raw_jsonl_is_fully_redacted(planted_transcript: Path) -> None:
    raw = planted_transcript.read_text()
    out, counts = redact_text(raw)
    for _, _, secret in CORPUS:
        assert json.dumps(secret)[1:-1] not in out
    assert counts == _expected()
    for line in out.splitlines():  # still valid JSON lines
        json.loads(line)
    print(f"\nraw JSONL redactions: {RedactionReport.from_counts(counts)}")


def _session_from(path: Path) -> Session:
    try:
        from scorer.sources.claude_code import ClaudeCodeSource
    except ImportError:  # pragma: no cover - the source is written in parallel
        pytest.skip("scorer.sources.claude_code not available")
    return ClaudeCodeSource(path).load()


def test_planted_parsed_session_is_fully_redacted(planted_transcript: Path) -> None:
    session = _session_from(planted_transcript)
    before = session.model_dump_json()
    assert all(secret.split("\n")[0] in before for _, _, secret in CORPUS)
    clean, report = redact_session(session)
    dumped = clean.model_dump_json()
    for _, _, secret in CORPUS:
        assert secret not in dumped
    assert session.model_dump_json() == before  # the input was not touched
    assert clean.n_events == session.n_events
    # Each planted secret sits in exactly one event of the parsed session.
    assert report.by_kind == dict(sorted(_expected().items()))
    assert report.total == len(CORPUS)
    for false_positive in FALSE_POSITIVES:
        assert json.dumps(false_positive)[1:-1] in dumped
    print(f"\nparsed session redactions: {report.total} {report.by_kind}")


def test_hand_built_session_redacts_every_field() -> None:
    gh = "ghp" + "_" + A36
    child = Event(index=3, kind=EventKind.TOOL_RESULT, text="token in child " + gh)
    session = Session(
        session_id="s1",
        source=SourceKind.CLAUDE_CODE,
        title="fix " + gh,
        task="deploy with " + gh,
        origin="https://bob:" + "Hunter2Pass" + "@git.example.com/x",
        extra={"env": {"GITHUB_TOKEN": gh}, "n": 3},
        events=[
            Event(index=1, kind=EventKind.PROMPT, text="use " + gh),
            Event(
                index=2,
                kind=EventKind.SUBAGENT,
                tool_input={"prompt": "clone with " + gh, "nested": [{"k": gh}]},
                meta={"note": gh},
                children=[child],
            ),
        ],
    )
    clean, report = redact_session(session)
    assert gh not in clean.model_dump_json()
    assert "Hunter2Pass" not in clean.model_dump_json()
    assert clean.origin == "https://bob:[REDACTED:url_password]@git.example.com/x"
    assert clean.events[1].children[0].text == "token in child [REDACTED:github_token]"
    assert report.by_kind == {"github_token": 8, "url_password": 1}
    assert report.total == 9
    assert session.events[1].children[0].text.endswith(gh)  # input untouched


def test_real_terminal_bench_secrets_task_is_redacted() -> None:
    """A real run whose repo held fake credentials: they must not survive."""
    hits = [
        p
        for p in sorted(require(TERMINAL_BENCH).glob("*/session.jsonl"))
        if "AKIA" in p.read_text()
    ]
    if not hits:
        pytest.skip("no terminal-bench session with AWS keys")
    raw = hits[0].read_text()
    out, counts = redact_text(raw)
    assert "AKIA1234567890123456" in raw and "AKIA1234567890123456" not in out
    assert "ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789" not in out
    assert counts["aws_access_key_id"] >= 1 and counts["github_token"] >= 1


def test_27mb_transcript_is_redacted_at_both_ends() -> None:
    """Correctness on a 27 MB text; its speed is benchmarks/bench_redact.py's (goal and
    baseline printed side by side), not a timed unit test that fails on a busy machine."""
    base = require(BIG_SESSION).read_text()
    text = base * (27_000_000 // len(base) + 1)
    planted = "ghp" + "_" + A36
    text = planted + text + planted
    out, counts = redact_text(text)
    assert planted not in out
    assert counts["github_token"] == 2


def test_secret_wrapped_over_two_pane_lines_is_redacted_whole() -> None:
    token = "ghp_" + A36 + "Xy"
    line = "cd /srv/app/releases/2026-11-25 && export GITHUB_TOKEN=" + token + " && git push"
    pane = "\n".join(line[i : i + 80] for i in range(0, len(line), 80)) + "\n$ "
    assert len(pane.split("\n")[0]) == 80 and token[-12:] not in pane.split("\n")[0]
    session = Session(
        session_id="s",
        source=SourceKind.TERMINAL,
        events=[Event(index=1, kind=EventKind.TERMINAL, text=pane)],
    )
    clean, report = redact_session(session)
    text = clean.events[0].text
    assert token[:20] not in text and token[-10:] not in text, text
    assert report.total == 1 and text.endswith("&& git push\n$ ")


def test_unwrapped_only_when_something_is_redacted() -> None:
    pane = "x" * 80 + "\n" + "continued output\n$ "
    session = Session(
        session_id="s",
        source=SourceKind.TERMINAL,
        events=[Event(index=1, kind=EventKind.TERMINAL, text=pane)],
    )
    clean, report = redact_session(session)
    assert clean.events[0].text == pane and report.total == 0
