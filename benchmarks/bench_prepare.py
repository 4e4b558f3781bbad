"""Benchmark the prepare stage: parse + render + chunk of a real and a synthetic session.

Usage:
    .venv/bin/python benchmarks/bench_prepare.py [--copies 10] [--budget 70000]

Each case runs in a fresh subprocess so its peak RSS is its own. The synthetic case is
the largest real transcript repeated with fresh uuids / message / tool ids (~27 MB).
The ratio compares render + chunk time with one bare `encode_ordinary` of the same
rendered text, measured in the same process: targets are ratio <= 2 and peak RSS
<= 300 MB for the synthetic session.
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIG = (
    REPO
    / ".."
    / "shared/data/claude-code-projects/-home-USER-projects-spotter"
    / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
).resolve()
_UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ID_RE = re.compile(r"\b(toolu_|msg_|req_)([A-Za-z0-9]+)")


def make_synthetic(src: Path, dest: Path, copies: int) -> Path:
    """Write `copies` renumbered copies of `src` into one session file under `dest`."""
    lines = src.read_text(encoding="utf-8").splitlines()
    session_id = src.stem
    out = dest / f"{session_id}.jsonl"
    with out.open("w", encoding="utf-8") as fh:
        for k in range(copies):
            fresh: dict[str, str] = {}

            def new_uuid(m: re.Match[str], fresh: dict[str, str] = fresh) -> str:
                old = m.group(0)
                if old == session_id:
                    return old
                return fresh.setdefault(old, str(uuid.uuid4()))

            def new_id(m: re.Match[str], k: int = k) -> str:
                return f"{m.group(1)}{m.group(2)}c{k}"

            for line in lines:
                fh.write(_ID_RE.sub(new_id, _UUID_RE.sub(new_uuid, line)) + "\n")
    return out


def run_case(path: Path, budget: int) -> dict[str, float | int | str]:
    """Time each stage on one transcript (runs inside the child process)."""
    from scorer.prepare import chunk_events, compute_signals, render_events, render_header
    from scorer.prepare.tokens import TokenCounter, encoding
    from scorer.sources.claude_code import ClaudeCodeSource

    t0 = time.perf_counter()
    enc = encoding()
    counter = TokenCounter()
    t_load_enc = time.perf_counter() - t0

    t0 = time.perf_counter()
    session = ClaudeCodeSource(path).load()
    t_parse = time.perf_counter() - t0

    t0 = time.perf_counter()
    header = render_header(session)
    events = render_events(session)
    t_render = time.perf_counter() - t0

    # tiktoken's regex engine warms up on its first pass over a text; give the
    # bare encode and the chunker the same warm start.
    rendered = "\n".join([header, *(e.text for e in events)]) + "\n"
    enc.encode_ordinary(rendered)

    t0 = time.perf_counter()
    chunks = chunk_events(header, events, budget=budget, overlap=4, counter=counter)
    t_chunk = time.perf_counter() - t0

    t0 = time.perf_counter()
    signals = compute_signals(session)
    t_signals = time.perf_counter() - t0

    t0 = time.perf_counter()
    n_tokens = len(enc.encode_ordinary(rendered))
    t_encode = time.perf_counter() - t0

    return {
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "events": len(events),
        "tool_calls": signals.tool_calls,
        "rendered_mb": round(len(rendered) / 1e6, 2),
        "rendered_tokens": n_tokens,
        "chunks": len(chunks),
        "load_encoding_s": round(t_load_enc, 3),
        "parse_s": round(t_parse, 3),
        "render_s": round(t_render, 3),
        "chunk_s": round(t_chunk, 3),
        "signals_s": round(t_signals, 3),
        "bare_encode_s": round(t_encode, 3),
        "ratio_render_chunk_vs_encode": round((t_render + t_chunk) / t_encode, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def _child(path: Path, budget: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--budget", str(budget)],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=10)
    parser.add_argument("--budget", type=int, default=70_000)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child, args.budget)))
        return
    if not BIG.exists():
        sys.exit(f"real data not found: {BIG}")
    results = {"real (2.7 MB)": _child(BIG, args.budget)}
    with tempfile.TemporaryDirectory() as tmp:
        synthetic = make_synthetic(BIG, Path(tmp), args.copies)
        results[f"synthetic (x{args.copies})"] = _child(synthetic, args.budget)
    for name, res in results.items():
        print(f"== {name}")
        for key, value in res.items():
            print(f"  {key:30} {value}")
    synth = results[f"synthetic (x{args.copies})"]
    ok = synth["ratio_render_chunk_vs_encode"] <= 2 and synth["peak_rss_mb"] <= 300
    print(f"targets (ratio <= 2, peak RSS <= 300 MB on synthetic): {'met' if ok else 'MISSED'}")


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
