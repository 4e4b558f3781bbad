"""Rescore every shared session with the heuristic judge: per-dimension means, before/after.

The "before" is the same script run on an older checkout (it only uses `resolve`, `prepare`
and `judge_prepared`, which every version since the checklist has), so a judge change shows
as a per-dimension shift over the same real sessions:

    git archive OLD | tar -x -C /tmp/old   # from the checkout
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/rescore_shared.py --out /tmp/before.json
    .venv/bin/python benchmarks/rescore_shared.py --out /tmp/after.json --compare /tmp/before.json

Sessions: the Claude Code transcripts (main sessions, not their subagent files), the tmux
pane captures, the asciinema recordings and the Terminal-Bench streams (each given its
task's instruction, as `score-session PATH --prompt "<instruction>"` does; no outcome is read).
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import Counter
from pathlib import Path

GROUPS = ("claude-code", "tmux-pane", "asciinema", "terminal-bench")


def shared_sessions(data: Path) -> list[tuple[str, Path, str | None]]:
    """(group, path, task) of every shared session, in a stable order."""
    out: list[tuple[str, Path, str | None]] = []
    for p in sorted((data / "claude-code-projects").rglob("*.jsonl")):
        if "subagents" not in p.parts and not p.name.startswith("agent-"):
            out.append(("claude-code", p, None))
    out += [("tmux-pane", p, None) for p in sorted((data / "tmux-panes").glob("*.txt"))]
    out += [("asciinema", p, None) for p in sorted((data / "terminal-bench/casts").glob("*.cast"))]
    for label in sorted((data / "terminal-bench/claude_code_coder").glob("*/label.json")):
        stream = label.parent / "session.jsonl"
        if stream.is_file():
            task = json.loads(label.read_text())["instruction"]
            out.append(("terminal-bench", stream, task))
    return out


def rescore(data: Path) -> dict[str, object]:
    """Heuristic card values of every shared session, keyed by path relative to `data`."""
    # imported here so that PYTHONPATH=<older checkout> decides which scorer runs
    from scorer.jobs.score import judge_prepared, prepare
    from scorer.sources import resolve

    cards: dict[str, dict[str, object]] = {}
    version = ""
    for group, path, task in shared_sessions(data):
        card = judge_prepared(prepare(resolve(str(path), task=task).load()), "heuristic")
        version = card.prompt_version
        values = {name: s.value for name, s in card.scores.items()}
        cards[str(path.relative_to(data))] = {"group": group, "values": values}
    return {"heuristic_version": version, "cards": cards}


def _mean(xs: list[float]) -> str:
    return f"{statistics.fmean(xs):.2f}" if xs else "-"


def compare(before: dict, after: dict) -> str:
    """A Markdown table: per dimension and group, mean before → after and sessions changed."""
    shared = sorted(set(before["cards"]) & set(after["cards"]))
    dims = list(dict.fromkeys(d for k in shared for d in after["cards"][k]["values"]))
    groups = [g for g in GROUPS if any(after["cards"][k]["group"] == g for k in shared)]
    counts = ", ".join(
        f"{g} {sum(after['cards'][k]['group'] == g for k in shared)}" for g in groups
    )
    head = ["dimension", *groups, "all", "changed"]
    lines = [
        f"{before['heuristic_version']} → {after['heuristic_version']}, {len(shared)} sessions "
        f"({counts}); mean before → after",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for dim in dims:
        row = [dim]
        for g in [*groups, None]:
            keys = [k for k in shared if g is None or after["cards"][k]["group"] == g]
            old = [before["cards"][k]["values"].get(dim) for k in keys]
            new = [after["cards"][k]["values"].get(dim) for k in keys]
            row.append(f"{_mean([x for x in old if x is not None])} → "
                       f"{_mean([x for x in new if x is not None])}")  # fmt: skip
        changed = sum(
            before["cards"][k]["values"].get(dim) != after["cards"][k]["values"].get(dim)
            for k in shared
        )
        lines.append("| " + " | ".join([*row, str(changed)]) + " |")
    return "\n".join([*lines, "", _goal_moves(before, after, shared)]) + "\n"


def _goal_moves(before: dict, after: dict, keys: list[str]) -> str:
    """Which goal labels changed into which (the means hide moves in both directions)."""
    names = ("failed", "partial", "complete", "exceeded")

    def label(result: dict, key: str) -> str:
        value = result["cards"][key]["values"].get("goal_achievement")
        return "unscored" if value is None else names[int(value)]

    moves = Counter((label(before, k), label(after, k)) for k in keys)
    cells = [f"{a} → {b} {n}" for (a, b), n in sorted(moves.items()) if a != b]
    return "goal_achievement moves: " + (", ".join(cells) or "none")


def main() -> None:
    from _common import shared_data  # the script's folder is on sys.path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the values as JSON here")
    ap.add_argument("--compare", type=Path, help="a JSON written by an older checkout")
    args = ap.parse_args()
    result = rescore(shared_data())
    if args.out:
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"{len(result['cards'])} sessions rescored by {result['heuristic_version']}")  # type: ignore[arg-type]
    if args.compare:
        print(compare(json.loads(args.compare.read_text()), result))


if __name__ == "__main__":
    main()
