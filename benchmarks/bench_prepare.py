"""Whole in-process prep ÷ a bare cl100k encode of the rendered text, linearity, peak RSS.

Usage:
    .venv/bin/python benchmarks/bench_prepare.py [--repeats 5] [--quick]

"Whole prep" is everything from the transcript file to the chunk plan, in one timer:
parse (`ClaudeCodeSource.load`) + redact + signals + render + chunk (`prepare`). The
baseline is one `encode_ordinary` of the rendered text (header + events, as the chunker
sees it), timed in the same process right after, so each pair shares the machine's
load; the figure is the median of the per-pair ratios. The cl100k encoding is loaded
before both timers (its load is a per-process cost, measured by `bench_cli.py`).

Cases: the real 2.7 MB session (1×) and synthetic 3× (~8 MB) and 10× (~27 MB) copies of
it with fresh ids, written to a temp dir. Each case runs in its own subprocess, so its
peak RSS (`getrusage`) is its own. Goals (issue 13): ratio ≤ 2, linear 1×→10× (the
10× ratio within 1.25× of the 1× ratio: the encode is linear, so this is prep's growth,
paired), peak RSS ≤ 300 MB on the 27 MB session.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, big_session, load_note, make_synthetic, median, peak_rss_mb, row, verdict

RATIO_GOAL = 2.0
LINEAR_GOAL = 1.25
RSS_GOAL = 300.0


def run_case(path: Path, repeats: int) -> dict[str, float | int]:
    """Time whole prep and the bare encode in pairs (runs inside the child process)."""
    from scorer.jobs.score import prepare
    from scorer.prepare.tokens import encoding
    from scorer.sources.claude_code import ClaudeCodeSource

    t0 = time.perf_counter()
    enc = encoding()
    load_encoding = time.perf_counter() - t0
    preps: list[float] = []
    encodes: list[float] = []
    info: dict[str, float | int] = {}
    # With several repeats the first pair is a warm-up (tiktoken's regex and the
    # allocator warm up on their first pass over a text) and is not counted.
    for attempt in range(repeats + (1 if repeats > 1 else 0)):
        gc.collect()
        t0 = time.perf_counter()
        prepared = prepare(ClaudeCodeSource(path).load())
        t_prep = time.perf_counter() - t0
        rendered = "\n".join([prepared.header, *(e.text for e in prepared.events)]) + "\n"
        t0 = time.perf_counter()
        n_tokens = len(enc.encode_ordinary(rendered))
        t_encode = time.perf_counter() - t0
        if attempt or repeats == 1:
            preps.append(t_prep)
            encodes.append(t_encode)
        info = {
            "events": len(prepared.events),
            "chunks": len(prepared.chunks),
            "rendered_mb": round(len(rendered) / 1e6, 2),
            "rendered_tokens": n_tokens,
        }
        del prepared, rendered
    ratios = [p / e for p, e in zip(preps, encodes, strict=True)]
    return {
        "file_mb": round(path.stat().st_size / 1e6, 2),
        **info,
        "load_encoding_s": round(load_encoding, 3),
        "prep_s": round(median(preps), 3),
        "encode_s": round(median(encodes), 3),
        "ratio": round(median(ratios), 2),
        "pairs": len(ratios),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def child(path: Path, repeats: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", str(path), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if proc.returncode:
        sys.exit(f"prep child failed on {path}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(results: dict[str, dict]) -> None:
    print(f"== whole prep (parse + redact + signals + render + chunk) — {load_note()}")
    for name, res in results.items():
        detail = ", ".join(f"{k}={v}" for k, v in res.items())
        print(f"  {name}: {detail}")
    for name, res in results.items():
        label = f"prep ÷ bare encode_ordinary, {name}"
        print(row(label, f"{res['ratio']:.2f}×", f"≤ {RATIO_GOAL:g}×", verdict(res["ratio"], 2)))
    one, ten = results["1× real"], results["10× synthetic"]
    # The bare encode is linear in the text, so the ratio of paired ratios measures
    # prep's growth without comparing timings taken at different moments of load.
    growth = ten["ratio"] / one["ratio"]
    label = "linearity: (prep ÷ encode) at 10× ÷ at 1×"
    print(row(label, f"{growth:.2f}", f"≤ {LINEAR_GOAL:g}", verdict(growth, LINEAR_GOAL)))
    per_mb = (ten["prep_s"] / ten["file_mb"]) / (one["prep_s"] / one["file_mb"])
    print(f"  (unpaired: prep s/MB at 10× ÷ at 1× = {per_mb:.2f}, sensitive to load)")
    rss = ten["peak_rss_mb"]
    print(
        row(
            "peak RSS, 10× (27 MB) session",
            f"{rss:.0f} MB",
            f"≤ {RSS_GOAL:g} MB",
            verdict(rss, RSS_GOAL),
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed pairs per case")
    parser.add_argument("--quick", action="store_true", help="one pair per case, no warm-up")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    repeats = 1 if args.quick else args.repeats
    if args.child:
        print(json.dumps(run_case(args.child, repeats)))
        return
    real = big_session()
    results = {"1× real": child(real, repeats)}
    with tempfile.TemporaryDirectory(prefix="bench-prep-") as tmp:
        for copies in (3, 10):
            folder = Path(tmp) / f"x{copies}"
            folder.mkdir()
            results[f"{copies}× synthetic"] = child(make_synthetic(real, folder, copies), repeats)
    report(results)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
