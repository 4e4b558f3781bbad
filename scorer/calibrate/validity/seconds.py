"""Second-opinion packets: the same scoring request asked again where the first verdict
is unsure, as `judge.second` asks it.

For a run whose first verdict's goal probability (by the shipped model) falls in the
uncertain band, two packets are written beside its first one:

    <side>/<run>.second-1.md   the plain second sample (the same request; its material
                               marked for the prompt cache)
    <side>/<run>.second-2.md   the adversarial one (`prompts/second_opinion.md` added)

answered as `<run>.second-1.json` / `<run>.second-2.json`, which ingest checks against the
run's reply schema and `report --verdict combined` averages in.
"""

from __future__ import annotations

import json
from pathlib import Path

from scorer._fs import write_atomic
from scorer.calibrate.validity.packets import Request, render_packet
from scorer.calibrate.validity.probability import product_verdict
from scorer.calibrate.validity.runs import BenchRun
from scorer.calibrate.validity.verdicts import FIRST, goal_label
from scorer.calibrate.validity.workspace import Manifest, request_params
from scorer.errors import ConfigError
from scorer.judge import prompts as P
from scorer.judge.probability import in_band, shipped_goal_models

KINDS = {"second-1": False, "second-2": True}
"""Second opinion → whether it is the adversarial one (the order `judge.second` asks)."""


def write_second_packets(
    folder: Path, manifest: Manifest, runs: list[BenchRun]
) -> dict[str, list[str]]:
    """Write the second-opinion packets of every run (of `runs`) whose first verdict is in
    the band; run → the packet names written.

    Raises:
        ConfigError: No goal-probability model is shipped (fit one first).
    """
    models = shipped_goal_models()
    if models is None or models.llm.band is None:
        raise ConfigError("no fitted goal-probability model with a band: run `validity.py fit`")
    by_id = {r.run_id: r for r in runs}
    written: dict[str, list[str]] = {}
    for entry in manifest.runs:
        run = by_id.get(entry.run)
        reply, _ = goal_label(folder, entry, FIRST) if run else (None, None)
        if run is None or reply is None:
            continue
        p, _ = product_verdict(reply, run, models=models)
        if p is None or not in_band(p, models.llm):
            continue
        written[entry.run] = _write(folder, entry.run, entry.side)
    return written


def _write(folder: Path, run: str, side: str) -> list[str]:
    params = request_params(folder, run)
    names = []
    for opinion, adversarial in KINDS.items():
        messages = P.second_opinion_messages(
            P.default_prompts(), params["messages"], adversarial=adversarial
        )
        name = f"{run}.{opinion}"
        request = Request(name=name, stage="score", params={**params, "messages": messages})
        write_atomic(Path(folder) / side / f"{name}.md", render_packet(request))
        text = json.dumps(request.params, indent=2, ensure_ascii=False)
        write_atomic(Path(folder) / "requests" / f"{name}.json", text + "\n")
        names.append(name)
    return names
