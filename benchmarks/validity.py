"""Judge validity without a key: packets of the exact judge requests, verdicts, figures.

Usage (from the checkout; see docs/validity.md):
    .venv/bin/python benchmarks/validity.py split [--write [--reference BACKEND]]
    .venv/bin/python benchmarks/validity.py packets DIR [--side dev|test|all]
    .venv/bin/python benchmarks/validity.py ingest DIR (--from REVIEWS | --api)
    .venv/bin/python benchmarks/validity.py report DIR [--compare BEFORE] [--n-boot N]
                                                [--verdict first|second-K] [--plots PLOTS]
    .venv/bin/python benchmarks/validity.py features DIR [--out FILE] [--verdict ...]
    .venv/bin/python benchmarks/validity.py fit DIR --version V [--out FILE]    (dev only)
    .venv/bin/python benchmarks/validity.py seconds DIR [--side dev|test|all]

DIR is a folder outside the repository; it may be left out when $SCORER_VALIDITY_DIR
names it. The runs are the Terminal-Bench runs with a stream of every backend under
../shared/data/terminal-bench (or $SCORER_TERMINAL_BENCH); the split is
benchmarks/validity_split.json (`dev` may be tuned on, `test` never).
Exit codes: 0 done, 1 bad input (one line on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SPLIT_FILE = REPO / "benchmarks" / "validity_split.json"
sys.path.insert(0, str(REPO))

from scorer.errors import ConfigError, ScorerError  # noqa: E402

NO_DIR = "no packet folder: give DIR or set SCORER_VALIDITY_DIR"


class UsageError(Exception):
    """A command line that cannot run (exit 2)."""


def _folder(value: Path | None) -> Path:
    """DIR, else $SCORER_VALIDITY_DIR; there is no default folder."""
    if value is not None:
        return value
    configured = os.environ.get("SCORER_VALIDITY_DIR")
    if not configured:
        raise UsageError(NO_DIR)
    return Path(configured)


def _bench_root() -> Path:
    from scorer.jobs.calibrate import default_terminal_bench

    return default_terminal_bench()


def _runs(side: str = "all"):
    from scorer.calibrate.validity.runs import load_runs
    from scorer.calibrate.validity.split import load_split

    split = load_split(SPLIT_FILE)
    runs, notes = load_runs(_bench_root(), split)
    found = {r.backend for r in runs}
    notes += [f"the split holds runs of {b}, not found under {_bench_root()}"
              for b in sorted(set(split.runs) - found)]  # fmt: skip
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
    from scorer.calibrate.validity.split import build_split, dump_split, load_split

    committed = None if args.write and args.reference else load_split(SPLIT_FILE)
    reference = args.reference or (committed.reference if committed else "")
    if not reference:
        raise UsageError("the split names no reference backend: give --write --reference BACKEND")
    found = outcomes(_bench_root())
    absent = sorted(set(committed.runs if committed else ()) - set(found))
    if absent and not args.write:
        raise ConfigError(
            f"the split holds runs of {', '.join(absent)}, not under {_bench_root()}: point "
            "SCORER_TERMINAL_BENCH at the folder holding every backend"
        )
    fresh = build_split(found, reference)
    if args.write:
        SPLIT_FILE.write_text(dump_split(fresh), encoding="utf-8")
        print(f"wrote {SPLIT_FILE}: {len(fresh.dev)} dev, {len(fresh.test)} test tasks; "
              f"runs {_run_counts(fresh)}")  # fmt: skip
        return 0
    assert committed is not None  # loaded above unless writing
    same = committed.model_dump() == fresh.model_dump()
    print(f"{SPLIT_FILE.name}: {len(committed.dev)} dev, {len(committed.test)} test tasks "
          f"(placed by {committed.reference}); runs {_run_counts(committed)}; "
          f"{'matches' if same else 'DOES NOT match'} its rules ({committed.method})")  # fmt: skip
    return 0 if same else 1


def _run_counts(split) -> str:
    return ", ".join(
        f"{backend} {len(sides.get('dev', []))} dev / {len(sides.get('test', []))} test"
        for backend, sides in split.runs.items()
    )


def cmd_packets(args: argparse.Namespace) -> int:
    from scorer.calibrate.validity.workspace import write_packets
    from scorer.judge.anthropic import AnthropicJudge

    runs = _runs(args.side)
    judge = AnthropicJudge(verify_tokens=False)
    manifest = write_packets(args.dir, runs, judge, commit=_commit())
    _print_sizes(args.dir, manifest)
    print(f"prompt {manifest.prompt_version} ({manifest.prompt_hash}), rubric "
          f"{manifest.rubric_version}, {manifest.heuristic_version}; manifest {args.dir / 'manifest.json'}")  # fmt: skip
    return 0


def _print_sizes(folder: Path, manifest) -> None:
    from scorer.calibrate.validity.workspace import packet_sizes

    sizes = packet_sizes(folder, manifest)
    backends = {s.backend for s in sizes} - {"all backends"}
    print(f"{'split':<5} {'backend':<18} {'runs':>4} {'packets':>7} {'chars median':>12} "
          f"{'max':>8} {'total':>10}  chunks per run")  # fmt: skip
    for s in sizes:
        if s.backend == "all backends" and len(backends) < 2:
            continue
        chunks = ", ".join(f"{n} chunk{'s' if n > 1 else ''}: {k}" for n, k in s.chunks.items())
        median = int(statistics.median(s.chars)) if s.chars else 0
        print(f"{s.side:<5} {s.backend:<18} {s.runs:>4} {s.packets:>7} {median:>12,} "
              f"{max(s.chars, default=0):>8,} {sum(s.chars):>10,}  {chunks}")  # fmt: skip


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
    from scorer.calibrate.validity.report import (
        COMBINED,
        collect,
        dimension_shift,
        reliability_plots,
        render,
        rule_accuracy,
    )
    from scorer.calibrate.validity.verdicts import check_opinion
    from scorer.calibrate.validity.workspace import read_manifest
    from scorer.judge.rubric import default_rubric

    opinion = COMBINED if args.verdict == COMBINED else check_opinion(args.verdict)
    rubric, runs = default_rubric(), _runs(args.side)
    manifest = read_manifest(args.dir)
    rows = collect(args.dir, manifest, runs, rubric, opinion=opinion)
    print(f"{args.dir}: prompt {manifest.prompt_version}, rubric {manifest.rubric_version}, "
          f"{manifest.heuristic_version}")  # fmt: skip
    print(render(rows, n_boot=args.n_boot, opinion=opinion), end="")
    print("\n" + rule_accuracy(rows, "dev"), end="")
    plots = reliability_plots(rows, args.plots or args.dir / "plots")
    if plots:
        print(f"\nreliability diagrams: {len(plots)} in {plots[0].parent}")
    if args.compare:
        before = collect(args.compare, read_manifest(args.compare), runs, rubric)
        print(f"\n== before ({args.compare}) ==")
        print(render(before, n_boot=args.n_boot), end="")
        print("\n== per dimension, before → after ==")
        for judge in ("heuristic", "llm"):
            print(dimension_shift(before, rows, judge), end="")
    return 0


def cmd_features(args: argparse.Namespace) -> int:
    from scorer._fs import write_atomic
    from scorer.calibrate.validity.features import dump_rows, feature_rows
    from scorer.calibrate.validity.verdicts import check_opinion
    from scorer.calibrate.validity.workspace import read_manifest

    opinion = check_opinion(args.verdict)
    manifest = read_manifest(args.dir)
    rows, left = feature_rows(args.dir, manifest, _runs("dev"), opinion=opinion)
    out = args.out or args.dir / "features-dev.jsonl"
    write_atomic(out, dump_rows(rows))
    print(f"wrote {out}: {len(rows)} dev runs with a {opinion} verdict "
          f"({len(left)} dev runs without one); test runs are never written")  # fmt: skip
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    """Fit both judges' goal-probability models on the dev runs; write the shipped file."""
    from scorer._fs import write_atomic
    from scorer.calibrate.validity.fitting import dev_rows, fit_models
    from scorer.calibrate.validity.workspace import read_manifest
    from scorer.judge.probability import MODEL_FILE

    manifest = read_manifest(args.dir)
    data = dev_rows(args.dir, manifest, _runs("dev"))
    versions = {
        "prompt": f"{manifest.prompt_version} ({manifest.prompt_hash})",
        "rubric": manifest.rubric_version,
        "heuristic": manifest.heuristic_version,
    }
    models = fit_models(data, versions=versions, version=args.version)
    out = args.out or REPO / "score_configs" / MODEL_FILE
    write_atomic(out, models.model_dump_json(indent=2) + "\n")
    llm, heur = models.dev["llm"], models.dev["heuristic"]
    print(f"wrote {out} ({models.version}): fitted on {len(models.fitted_on)} dev runs")
    for name, d, m in (("llm", llm, models.llm), ("heuristic", heur, models.heuristic)):
        print(f"  {name}: {d['runs']} runs, features {', '.join(d['features'])}, C {d['C']}; "
              f"cv AUROC {d['cv_auroc']}, log loss {d['cv_log_loss']}, 3-class "
              f"{d['cv_three_class_exact']}, resolved-vs-not {d['cv_resolved_balanced_accuracy']}; "
              f"rule complete ≥ {m.rule.complete}, failed < {m.rule.failed}"
              + (f"; band {m.band}, {m.in_band_share:.0%} of dev runs" if m.band else ""))  # fmt: skip
    for why in data.left_out:
        print(f"  left out {why}")
    return 0


def cmd_seconds(args: argparse.Namespace) -> int:
    """Write second-opinion packets for first verdicts in the uncertain band."""
    from scorer.calibrate.validity.seconds import write_second_packets
    from scorer.calibrate.validity.workspace import read_manifest

    manifest = read_manifest(args.dir)
    written = write_second_packets(args.dir, manifest, _runs(args.side))
    print(
        f"second-opinion packets: {len(written)} runs in the band ({args.side}); "
        f"{sum(len(w) for w in written.values())} packets"
    )
    for run, names in sorted(written.items()):
        print(f"  {run}: {', '.join(names)}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="validity.py", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("split", help="check (or --write) the committed dev/test split")
    s.add_argument("--write", action="store_true", help="rewrite the split file from its rules")
    s.add_argument("--reference", help="the backend whose outcomes place the tasks "
                   "(default: the committed split's)")  # fmt: skip
    s.set_defaults(run=cmd_split)
    folder = {"nargs": "?", "type": Path, "help": "the packet folder (or $SCORER_VALIDITY_DIR)"}
    verdict = {"default": "first", "help": "which verdict of each packet: first (default) "
               "or a second opinion, second-1, second-2, ..."}  # fmt: skip
    k = sub.add_parser("packets", help="write the judge packets, requests and heuristic cards")
    k.add_argument("dir", **folder)
    k.add_argument("--side", choices=("dev", "test", "all"), default="all")
    k.set_defaults(run=cmd_packets)
    i = sub.add_parser("ingest", help="take verdicts from reviewers' files or the real API")
    i.add_argument("dir", **folder)
    how = i.add_mutually_exclusive_group(required=True)
    how.add_argument("--from", dest="source", type=Path,
                     help="folder of <name>.json answers (and <name>.second-<k>.json)")  # fmt: skip
    how.add_argument("--api", action="store_true", help="send each packet's request (needs a key)")
    i.set_defaults(run=cmd_ingest)
    r = sub.add_parser("report", help="print agreement with outcomes per split and backend")
    r.add_argument("dir", **folder)
    r.add_argument("--compare", type=Path, help="a 'before' folder: per-dimension shift")
    r.add_argument("--n-boot", type=int, default=2000)
    r.add_argument(
        "--verdict",
        default="first",
        help="first (default), second-<k>, or "
        "combined (the first, with its second opinions when it is in the band)",
    )
    r.add_argument("--side", choices=("dev", "test", "all"), default="all",
                   help="report only this side (default: both)")  # fmt: skip
    r.add_argument("--plots", type=Path, help="where reliability diagrams go (default DIR/plots)")
    r.set_defaults(run=cmd_report)
    t = sub.add_parser("fit", help="fit the goal-probability models on dev; write the file")
    t.add_argument("dir", **folder)
    t.add_argument("--version", required=True, help="the model file's version, e.g. 2026-11-28.1")
    t.add_argument("--out", type=Path, help="default: score_configs/goal_probability.json")
    t.set_defaults(run=cmd_fit)
    o = sub.add_parser("seconds", help="write second-opinion packets for uncertain verdicts")
    o.add_argument("dir", **folder)
    o.add_argument("--side", choices=("dev", "test", "all"), default="all")
    o.set_defaults(run=cmd_seconds)
    f = sub.add_parser("features", help="write the dev runs' verdict features (JSONL)")
    f.add_argument("dir", **folder)
    f.add_argument("--out", type=Path, help="the JSONL file (default DIR/features-dev.jsonl)")
    f.add_argument("--verdict", **verdict)
    f.set_defaults(run=cmd_features)
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if "dir" in args:
            args.dir = _folder(args.dir)
        return int(args.run(args))
    except UsageError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ScorerError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
