"""Judge validity without a key: packets of the exact judge requests, verdicts, figures.

Usage (from the checkout; see docs/validity.md):
    .venv/bin/python benchmarks/validity.py split [--write]
    .venv/bin/python benchmarks/validity.py packets [DIR] [--side dev|test|all]
    .venv/bin/python benchmarks/validity.py ingest [DIR] (--from REVIEWS | --api)
    .venv/bin/python benchmarks/validity.py report [DIR] [--compare BEFORE] [--n-boot N]

DIR defaults to $SCORER_VALIDITY_DIR or /work/validity/current. The runs are the
Terminal-Bench runs with a stream under ../shared/data (or $SCORER_TERMINAL_BENCH);
the split is benchmarks/validity_split.json (`dev` may be tuned on, `test` never).
Exit codes: 0 done, 1 bad input (one line on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPLIT_FILE = REPO / "benchmarks" / "validity_split.json"
sys.path.insert(0, str(REPO))

from scorer.errors import ScorerError  # noqa: E402


def _default_dir() -> Path:
    return Path(os.environ.get("SCORER_VALIDITY_DIR") or "/work/validity/current")


def _bench_root() -> Path:
    from scorer.jobs.calibrate import default_terminal_bench

    return default_terminal_bench()


def _runs(side: str = "all"):
    from scorer.calibrate.validity.runs import load_runs
    from scorer.calibrate.validity.split import load_split

    runs, notes = load_runs(_bench_root(), load_split(SPLIT_FILE))
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return [r for r in runs if side == "all" or r.side == side]


def _commit() -> str | None:
    import subprocess

    try:
        done = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip() or None


def cmd_split(args: argparse.Namespace) -> int:
    """Recompute the split from the labels and compare it with the committed file."""
    from scorer.calibrate.validity.runs import outcomes
    from scorer.calibrate.validity.split import dump_split, load_split, make_split

    fresh = make_split(outcomes(_bench_root()))
    if args.write:
        SPLIT_FILE.write_text(dump_split(fresh), encoding="utf-8")
        print(f"wrote {SPLIT_FILE}: {len(fresh.dev)} dev, {len(fresh.test)} test")
        return 0
    committed = load_split(SPLIT_FILE)
    same = committed.model_dump() == fresh.model_dump()
    print(f"{SPLIT_FILE.name}: {len(committed.dev)} dev, {len(committed.test)} test tasks; "
          f"{'matches' if same else 'DOES NOT match'} its rules ({committed.method})")  # fmt: skip
    return 0 if same else 1


def cmd_packets(args: argparse.Namespace) -> int:
    from scorer.calibrate.validity.workspace import write_packets
    from scorer.judge.anthropic import AnthropicJudge

    runs = _runs(args.side)
    judge = AnthropicJudge(verify_tokens=False)
    manifest = write_packets(args.dir, runs, judge, commit=_commit())
    for side in ("dev", "test"):
        entries = [r for r in manifest.runs if r.side == side]
        packets = sum(len(r.requests) for r in entries)
        print(f"{side}: {len(entries)} runs, {packets} packets in {args.dir / side}")
    print(f"prompt {manifest.prompt_version} ({manifest.prompt_hash}), rubric "
          f"{manifest.rubric_version}, {manifest.heuristic_version}; manifest {args.dir / 'manifest.json'}")  # fmt: skip
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from scorer.calibrate.validity.verdicts import ingest_api, ingest_files
    from scorer.calibrate.validity.workspace import read_manifest, read_notes, write_packets
    from scorer.judge.anthropic import AnthropicJudge

    manifest = read_manifest(args.dir)
    if args.api:
        done = ingest_api(args.dir, manifest, _runs(), AnthropicJudge())
    else:
        done = ingest_files(args.dir, manifest, args.source)
        chunked = [r for r in manifest.runs if all(q.stage == "notes" for q in r.requests)]
        ready = {r.run for r in chunked if read_notes(args.dir, r.run, r.n_chunks) is not None}
        if ready:  # every chunk's notes are in: write their final packets
            write_packets(
                args.dir,
                [r for r in _runs() if r.run_id in ready],
                AnthropicJudge(verify_tokens=False),
                commit=_commit(),
            )
            done.notes += [
                f"{run}: chunk notes in; its final packet is written" for run in sorted(ready)
            ]
    print(f"verdicts written: {len(done.written)}; missing: {len(done.missing)}; "
          f"invalid: {len(done.invalid)}" + (f"; API cost ${done.cost_usd:.2f}" if args.api else ""))  # fmt: skip
    for name, why in done.invalid:
        print(f"  invalid {name}: {why}")
    for note in done.notes:
        print(f"  {note}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from scorer.calibrate.validity.report import collect, dimension_shift, render, rule_accuracy
    from scorer.calibrate.validity.workspace import read_manifest
    from scorer.judge.rubric import default_rubric

    rubric, runs = default_rubric(), _runs()
    manifest = read_manifest(args.dir)
    rows = collect(args.dir, manifest, runs, rubric)
    print(f"{args.dir}: prompt {manifest.prompt_version}, rubric {manifest.rubric_version}, "
          f"{manifest.heuristic_version}")  # fmt: skip
    print(render(rows, n_boot=args.n_boot), end="")
    print("\n" + rule_accuracy(rows, "dev"), end="")
    if args.compare:
        before = collect(args.compare, read_manifest(args.compare), runs, rubric)
        print(f"\n== before ({args.compare}) ==")
        print(render(before, n_boot=args.n_boot, backends=False), end="")
        print("\n== per dimension, before → after ==")
        for judge in ("heuristic", "llm"):
            print(dimension_shift(before, rows, judge), end="")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="validity.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split", help="check (or --write) the committed dev/test split")
    s.add_argument("--write", action="store_true", help="rewrite the split file from its rules")
    s.set_defaults(run=cmd_split)
    k = sub.add_parser("packets", help="write the judge packets, requests and heuristic cards")
    k.add_argument("dir", nargs="?", type=Path, default=_default_dir())
    k.add_argument("--side", choices=("dev", "test", "all"), default="all")
    k.set_defaults(run=cmd_packets)
    i = sub.add_parser("ingest", help="take verdicts from reviewers' files or the real API")
    i.add_argument("dir", nargs="?", type=Path, default=_default_dir())
    how = i.add_mutually_exclusive_group(required=True)
    how.add_argument("--from", dest="source", type=Path, help="folder of <name>.json answers")
    how.add_argument("--api", action="store_true", help="send each packet's request (needs a key)")
    i.set_defaults(run=cmd_ingest)
    r = sub.add_parser("report", help="print agreement with outcomes per split and backend")
    r.add_argument("dir", nargs="?", type=Path, default=_default_dir())
    r.add_argument("--compare", type=Path, help="a 'before' folder: per-dimension shift")
    r.add_argument("--n-boot", type=int, default=2000)
    r.set_defaults(run=cmd_report)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.run(args))
    except ScorerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
