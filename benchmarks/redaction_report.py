"""Redaction figures for docs/security.md: recall on the secret sets (in the judge request),
and what is redacted in the shared real sessions (false positives, leaks).

Usage:
    .venv/bin/python benchmarks/redaction_report.py [--samples 30] [--dump FILE]

- Recall: every case of the tuning corpus (tests/secret_corpus.py), of the retired
  held-out sets v1 and v2 (tuning data now) and of held-out v3 (tests/secret_heldout*.py;
  v3's 95% goal: tests/prepare/test_secret_heldout.py), planted where
  agents print it and loaded by its real source; caught when no 12-character fragment of
  its secrets is in the LLM judge's request.
- Real sessions: every Claude Code transcript, terminal-bench stream and tmux pane in
  ../shared/data. These were recorded by other people and sanitised by their publisher,
  so a redaction there is a false positive unless the sample shows a real credential
  (terminal-bench tasks plant some on purpose). Printed: redactions per 1,000 events,
  by kind, a sample with 40 characters of context (`--dump` writes every one, for a
  before/after diff), and the leaks: a value redacted in one place of a session that
  is still visible in another place of its judge timeline.
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
from scorer.prepare.render import render_timeline
from scorer.sources.claude_code import ClaudeCodeSource
from scorer.sources.stream_json import StreamJsonSource
from scorer.sources.terminal import TerminalFileSource
from tests.prepare.test_secret_heldout import judge_request_text, measure
from tests.secret_corpus import CORPUS, leaked, write_transcript
from tests.secret_heldout import HELDOUT
from tests.secret_heldout_v2 import V2
from tests.secret_heldout_v3 import V3

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


def redacted_values(before: str, after: str) -> list[str]:
    """What was cut out of `before` to give `after` (each marker's original text), found
    by locating the text between markers in order."""
    pieces = _MARK.split(after)[::2]  # split keeps the kinds at odd positions
    values, at = [], len(pieces[0])
    if not before.startswith(pieces[0]):
        return []
    last = len(pieces) - 1
    for i, piece in enumerate(pieces[1:], 1):
        if not piece and i < last:
            continue  # two markers side by side: one value as far as we can tell
        end = before.find(piece, at + 1) if piece else len(before)
        if end == -1:
            return values
        values.append(before[at:end])
        at = end + len(piece)
    return values


def false_positives(samples: int, dump: Path | None) -> None:
    sessions = real_sessions()
    events = sum(s.n_events for _, s in sessions)
    kinds: Counter[str] = Counter()
    contexts: list[str] = []
    leaks: list[str] = []
    seconds = 0.0
    for name, session in sessions:
        start = time.process_time()
        clean, report = redact_session(session)
        seconds += time.process_time() - start
        kinds.update(report.by_kind)
        short = name.split("/")[-2]
        for text in _texts(clean):
            for m in _MARK.finditer(text):
                snippet = text[max(0, m.start() - 40) : m.end() + 20].replace("\n", "⏎")
                contexts.append(f"{short}: …{snippet}…")
        rendered = render_timeline(clean)
        values = {
            v
            for a, b in zip(_texts(session), _texts(clean), strict=True)
            if a != b
            for v in redacted_values(a, b)
            if len(v) >= 12
        }
        leaks += [f"{short}: {v[:6]}…" for v in sorted(values) if v in rendered]
    total = sum(kinds.values())
    print(f"real sessions: {len(sessions)}, events: {events:,}, redactions: {total}")
    print(f"  redactions per 1,000 events: {1000 * total / max(events, 1):.2f}")
    print(f"  by kind: {dict(kinds.most_common())}")
    print(f"  redact_session CPU over all of them: {seconds:.2f} s")
    print(f"  values redacted in one place and visible in another: {len(leaks)} {leaks[:10]}")
    if dump:
        dump.write_text("\n".join(sorted(contexts)) + "\n", encoding="utf-8")
    random.Random(25).shuffle(contexts)
    for line in sorted(contexts[:samples]):
        print("   ", line)


def recall(folder: Path) -> None:
    sets = {"v1 (tuning now)": HELDOUT, "v2 (tuning now)": V2, "held-out v3": V3}
    for i, (label, cases) in enumerate(sets.items()):
        (folder / str(i)).mkdir()
        caught, missed = measure(folder / str(i), cases)
        n = len(cases)
        print(f"{label} (judge request): {len(caught)}/{n} = {len(caught) / n:.1%}")
        print(f"  missed: {[c.name for c in missed]}")
    tuned = 0
    for i, case in enumerate(CORPUS):
        sub = folder / f"tuning-{i}"
        sub.mkdir(parents=True)
        request = judge_request_text(ClaudeCodeSource(write_transcript(case, sub)).load())
        tuned += not leaked(case, request)
    print(f"tuning corpus (judge request): {tuned}/{len(CORPUS)} = {tuned / len(CORPUS):.1%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--dump", type=Path, help="write every redaction with its context")
    parser.add_argument("--no-recall", action="store_true", help="real sessions only")
    args = parser.parse_args()
    if not args.no_recall:
        with tempfile.TemporaryDirectory() as tmp:
            recall(Path(tmp))
    if DATA.exists():
        false_positives(args.samples, args.dump)
    else:
        print(f"real data not available: {DATA}")


if __name__ == "__main__":
    main()
