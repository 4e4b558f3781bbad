"""Benchmark the LLM judge's own CPU per session: the pre-flight fit check and the output
schema, against what they replaced, measured in the same process.

Usage:
    .venv/bin/python benchmarks/bench_judge_overhead.py [--repeat 5]

    fit check   `AnthropicJudge.check_chunks` (the chunker's counts + a per-process
                overhead) vs re-tokenising every request's prompt with tiktoken
    schema      the cached `output_config` vs `transform_schema` of the reply model per call

Uses the largest real transcript in ../shared/data; nothing is sent anywhere.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
BIG = (
    REPO
    / ".."
    / "shared/data/claude-code-projects/-home-USER-projects-spotter"
    / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl"
).resolve()


def best(fn, repeat: int) -> float:
    """The fastest of `repeat` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    if not BIG.exists():
        sys.exit(f"real data not available: {BIG}")

    from anthropic import transform_schema

    from scorer.judge.anthropic import AnthropicJudge
    from scorer.judge.schema import output_config
    from scorer.prepare import prepare
    from scorer.sources import resolve

    prepared = prepare(resolve(str(BIG)).load())
    judge = AnthropicJudge(None, verify_tokens=False)
    chunks, header = prepared.chunks, prepared.header
    judge.check_chunks(header, chunks)  # the per-process overhead count, paid once

    def retokenise() -> None:
        requests = (
            [judge.scoring_request(header, chunks[0])]
            if len(chunks) == 1
            else judge.notes_requests(header, chunks)
        )
        for params in requests:
            judge.counter.count(judge.system_text + params["messages"][0]["content"])

    fit_new = best(lambda: judge.check_chunks(header, chunks), args.repeat)
    fit_old = best(retokenise, args.repeat)
    model = judge.reply_model
    calls = len(chunks) + 1
    schema_new = best(lambda: [output_config(model) for _ in range(calls)], args.repeat)
    schema_old = best(lambda: [transform_schema(model) for _ in range(calls)], args.repeat)

    print(f"session: {BIG.name}, {len(chunks)} chunks, {calls} requests")
    print(f"fit check: {fit_new * 1e3:.3f} ms  vs re-tokenising: {fit_old * 1e3:.1f} ms  "
          f"(ratio {fit_new / fit_old:.4f})")  # fmt: skip
    print(f"schema:    {schema_new * 1e3:.3f} ms  vs per request: {schema_old * 1e3:.1f} ms  "
          f"(ratio {schema_new / schema_old:.4f})")  # fmt: skip


if __name__ == "__main__":
    main()
