"""Redaction figures for docs/security.md: recall on the held-out and tuning sets (in the
judge request), and what is redacted in the shared real sessions (false positives).

Usage:
    .venv/bin/python benchmarks/redaction_report.py [--samples 30]

- Held-out recall: tests/secret_heldout.py, each case planted where agents print it and
  loaded by its real source; caught when no 12-character fragment of its secrets is in
  the LLM judge's request (goal >= 95%).
- Tuning recall: tests/secret_corpus.py, measured the same way.
- Real sessions: every Claude Code transcript, terminal-bench stream and tmux pane in
  ../shared/data. These were recorded by other people and sanitised by their publisher,
  so a redaction there is a false positive unless the sample shows a real credential
  (terminal-bench tasks plant some on purpose). Printed: redactions per 1,000 events,
  by kind, and a sample with 40 characters of context.
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scorer.models import Session
from scorer.prepare.redact import redact_session
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.stream_json import StreamJsonSource
from scorer.sources.terminal import TerminalFileSource
from tests.prepare.test_secret_heldout import judge_request_text, load_case, measure
from tests.secret_corpus import CORPUS, leaked, write_transcript
from tests.secret_heldout import HELDOUT

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
_MARK = re.compile(r"\[REDACTED:(\w+)\]")


def real_sessions() -> list[tuple[str, Session]]:
    out: list[tuple[str, Session]] = []
    for path in sorted((DATA / "claude-code-projects").rglob("*.jsonl")):
        out.append((str(path.relative_to(DATA)), ClaudeCodeSource(path).load()))
    for path in sorted((DATA / "terminal-bench").rglob("session.jsonl")):
        try:
            out.append((str(path.relative_to(DATA)), StreamJsonSource(path).load()))
        except Exception:
            continue
    for path in sorted((DATA / "tmux-panes").glob("*.txt")):
        out.append((str(path.relative_to(DATA)), TerminalFileSource(path).load()))
    return out


def _texts(session: Session) -> list[str]:
    return [e.text + " " + str(e.tool_input or "") for _, e in session.iter_events()]


def false_positives(samples: int) -> None:
    sessions = real_sessions()
    events = sum(s.n_events for _, s in sessions)
    kinds: Counter[str] = Counter()
    contexts: list[str] = []
    seconds = 0.0
    for name, session in sessions:
        start = time.process_time()
        clean, report = redact_session(session)
        seconds += time.process_time() - start
        kinds.update(report.by_kind)
        for text in _texts(clean):
            for m in _MARK.finditer(text):
                snippet = text[max(0, m.start() - 40) : m.end() + 20].replace("\n", "⏎")
                contexts.append(f"{name.split('/')[-2]}: …{snippet}…")
    total = sum(kinds.values())
    print(f"real sessions: {len(sessions)}, events: {events:,}, redactions: {total}")
    print(f"  redactions per 1,000 events: {1000 * total / max(events, 1):.2f}")
    print(f"  by kind: {dict(kinds.most_common())}")
    print(f"  redact_session CPU over all of them: {seconds:.2f} s")
    random.Random(25).shuffle(contexts)
    for line in sorted(contexts[:samples]):
        print("   ", line)


def recall(folder: Path) -> None:
    caught, missed = measure(folder / "heldout")
    n = len(HELDOUT)
    print(
        f"held-out recall (judge request): {len(caught)}/{n} = {len(caught) / n:.1%} (goal >= 95%)"
    )
    print(f"  missed: {[c.name for c in missed]}")
    tuned = 0
    for i, case in enumerate(CORPUS):
        sub = folder / f"tuning-{i}"
        sub.mkdir(parents=True)
        request = judge_request_text(ClaudeCodeSource(write_transcript(case, sub)).load())
        tuned += not leaked(case, request)
    print(f"tuning-set recall (judge request): {tuned}/{len(CORPUS)} = {tuned / len(CORPUS):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "heldout").mkdir()
        recall(Path(tmp))
    assert load_case  # the held-out loader is the test's own
    if DATA.exists():
        false_positives(args.samples)
    else:
        print(f"real data not available: {DATA}")


if __name__ == "__main__":
    main()
