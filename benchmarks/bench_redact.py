"""Benchmark redaction on the largest real session (2.7 MB).

Usage:
    .venv/bin/python benchmarks/bench_redact.py [--repeat 7] [--copies 10] [--path FILE]

Prints the best-of-N CPU time of:
- `redact_text` on the raw JSONL (and on it repeated `--copies` times, ~27 MB);
- `redact_session` on the parsed session (what `score-session` runs);
- the prefilter alone: the one-pass Aho-Corasick automaton over every rule trigger, and,
  as the baseline measured in the same run, a separate substring scan per trigger (how
  the rules were gated before), with their ratio.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
BIG = (
    REPO
    / ".."
    / "shared/data/claude-code-projects/-home-USER-projects-spotter"
    / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
).resolve()


def best(fn: Callable[[], Any], repeat: int) -> float:
    """Best CPU seconds of `repeat` runs (CPU time: robust to a busy machine)."""
    times = []
    for _ in range(repeat):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--path", type=Path, default=BIG, help="The transcript to redact.")
    args = parser.parse_args()
    if not args.path.exists():
        raise SystemExit(f"real data not available: {args.path}")

    from scorer.prepare import redact
    from scorer.prepare.secrets.rules import RULES
    from scorer.prepare.secrets.scan import triggers_in
    from scorer.sources.claude_code import ClaudeCodeSource

    raw = args.path.read_text(encoding="utf-8")
    big = raw * args.copies
    session = ClaudeCodeSource(args.path).load()
    triggers = sorted({t for rule in RULES for t in rule.triggers})

    def per_trigger_scan(text: str) -> set[str]:
        return {t for t in triggers if t in text}

    rows = [
        (
            f"redact_text raw {len(raw) / 1e6:.1f} MB",
            best(lambda: redact.redact_text(raw), args.repeat),
        ),
        (
            f"redact_text raw x{args.copies} ({len(big) / 1e6:.0f} MB)",
            best(lambda: redact.redact_text(big), max(1, args.repeat // 3)),
        ),
        ("redact_session (parsed)", best(lambda: redact.redact_session(session), args.repeat)),
    ]
    automaton = best(lambda: triggers_in(raw), args.repeat)
    baseline = best(lambda: per_trigger_scan(raw), args.repeat)
    rows += [
        (f"prefilter: one pass over {len(triggers)} triggers", automaton),
        (f"baseline: {len(triggers)} substring scans", baseline),
    ]
    for name, seconds in rows:
        print(f"{name:<45} {seconds * 1000:8.1f} ms")
    print(f"{'prefilter / baseline ratio':<45} {automaton / baseline:8.2f}")


if __name__ == "__main__":
    main()
