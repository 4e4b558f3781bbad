"""Verdicts: the answers to packets, from blind reviewers' files or from the real API.

A verdict is `<dir>/verdicts/<name>.json`: the reply JSON the packet's schema asks for
(the scorecard reply for `<run>`, chunk notes for `<run>.notes-<i>`). Every verdict is
checked against the schema of the exact request its packet showed, so answers to an
older prompt are never mixed with a newer one.

A scoring packet may have more than one verdict: the first, `<run>.json`, and second
opinions on the same request, `<run>.second-1.json`, `<run>.second-2.json`, ... Which one
a report reads is its *opinion*: `first` (the default) or `second-<k>`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scorer._fs import write_atomic
from scorer.calibrate.validity.packets import load_prepared, requests_for
from scorer.calibrate.validity.runs import BenchRun
from scorer.calibrate.validity.workspace import (
    Manifest,
    RunEntry,
    read_notes,
    request_params,
    write_packets,
)
from scorer.errors import ConfigError, CredentialsError, ScorerError
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.reply import Unscored, UsageTally
from scorer.judge.schema import ChunkNotes
from scorer.judge.sdk import anthropic

_FENCE = re.compile(r"\A\s*```(?:json)?\s*\n(?P<body>.*)\n```\s*\Z", re.S)
_OPINION = re.compile(r"\A(first|second-[1-9][0-9]*)\Z")
FIRST = "first"


@dataclass
class Ingested:
    """What one ingest did."""

    written: list[str] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    cost_usd: float = 0.0


def check_opinion(opinion: str) -> str:
    """`opinion` when it names a verdict (`first`, `second-<k>`).

    Raises:
        ConfigError: It does not.
    """
    if not _OPINION.match(opinion):
        raise ConfigError(f"no such verdict {opinion!r}: first, or second-1, second-2, ...")
    return opinion


def verdict_path(folder: Path, name: str, opinion: str = FIRST) -> Path:
    """Where a packet's verdict is: `<name>.json`, or `<name>.<opinion>.json` for a second."""
    suffix = "" if opinion == FIRST else f".{check_opinion(opinion)}"
    return Path(folder) / "verdicts" / f"{name}{suffix}.json"


def second_opinions(folder: Path, name: str, *, flat: bool = False) -> list[str]:
    """The second opinions a packet has (`second-1`, `second-2`, ...), in order.

    Args:
        folder: The harness folder (its `verdicts/`), or with `flat` a folder of answers.
        name: The packet's name.
        flat: Look in `folder` itself.
    """
    where = Path(folder) if flat else Path(folder) / "verdicts"
    found = [p.name.removeprefix(f"{name}.").removesuffix(".json")
             for p in where.glob(f"{name}.second-*.json")]  # fmt: skip
    valid = [o for o in found if _OPINION.match(o)]
    return sorted(valid, key=lambda o: int(o.removeprefix("second-")))


def check_verdict(text: str, schema: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """Parse a verdict and check it against the packet's schema.

    A reply wrapped in one Markdown code fence is accepted (reviewers add them).

    Returns:
        The reply object, or None and the first reason it is unusable.
    """
    try:
        import jsonschema  # a dev dependency: the harness runs from a dev checkout
    except ImportError as e:
        raise ConfigError("checking verdicts needs jsonschema: pip install -e '.[dev]'") from e

    match = _FENCE.match(text)
    try:
        data = json.loads(match["body"] if match else text)
    except json.JSONDecodeError as e:
        return None, f"not JSON: {e.msg} at line {e.lineno}"
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(schema).iter_errors(data)
    )
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "reply"
        return None, f"does not match the schema at {where}: {error.message[:200]}"
    return data, None


def _schema(folder: Path, name: str) -> dict[str, Any]:
    schema: dict[str, Any] = request_params(folder, name)["output_config"]["format"]["schema"]
    return schema


def ingest_files(folder: Path, manifest: Manifest, source: Path) -> Ingested:
    """Copy valid `<name>.json` answers (and `<name>.second-<k>.json` second opinions of
    scoring packets) from `source` into the folder's verdicts.

    An answer that does not parse or match its packet's schema is reported, not copied.
    """
    done = Ingested()
    for run in manifest.runs:
        for request in run.requests:
            first = Path(source) / f"{request.name}.json"
            if first.is_file():
                _ingest_one(folder, request.name, FIRST, first, done)
            else:
                done.missing.append(request.name)
            if request.stage == "notes":
                continue
            for opinion in second_opinions(source, request.name, flat=True):
                path = Path(source) / f"{request.name}.{opinion}.json"
                _ingest_one(folder, request.name, opinion, path, done)
    return done


def _ingest_one(folder: Path, name: str, opinion: str, path: Path, done: Ingested) -> None:
    label = name if opinion == FIRST else f"{name}.{opinion}"
    data, error = check_verdict(path.read_text(encoding="utf-8"), _schema(folder, name))
    if data is None:
        done.invalid.append((label, error or "invalid"))
        return
    write_atomic(verdict_path(folder, name, opinion), json.dumps(data, indent=1) + "\n")
    done.written.append(label)


def ingest_api(
    folder: Path, manifest: Manifest, runs: list[BenchRun], judge: AnthropicJudge
) -> Ingested:
    """Answer every packet without a verdict by sending its exact request to the API.

    The request is rebuilt by the product's code and must hash to what the packet shows
    (else the packets are stale and must be written again first).

    Raises:
        CredentialsError: No key, or the key is rejected (nothing more would work).
    """
    done = Ingested()
    by_id = {r.run_id: r for r in runs}
    for entry in manifest.runs:
        run = by_id.get(entry.run)
        if run is None or all(verdict_path(folder, q.name).is_file() for q in entry.requests):
            continue
        try:
            _answer_run(folder, entry, run, judge, done)
        except CredentialsError:
            raise
        except (ScorerError, Unscored) as e:
            done.invalid.append((entry.run, str(e)))
    return done


def _answer_run(
    folder: Path, entry: RunEntry, run: BenchRun, judge: AnthropicJudge, done: Ingested
) -> None:
    prepared = load_prepared(str(run.session_path), run.instruction)
    notes = read_notes(folder, run.run_id, len(prepared.chunks))
    requests = requests_for(judge, prepared, run.run_id, notes)
    shown = {q.name: q.sha256 for q in entry.requests}
    if any(shown.get(q.name) != q.sha256 for q in requests):
        raise ConfigError(
            f"{run.run_id}: the packets are stale (the code changed); write them again"
        )
    tally = UsageTally()
    settler = judge.settler(tally)
    try:
        for request in requests:
            reply = ChunkNotes if request.stage == "notes" else judge.reply_model
            answer = settler.call(request.params, reply, request.stage)
            text = answer.model_dump_json(indent=1) + "\n"
            write_atomic(verdict_path(folder, request.name), text)
            done.written.append(request.name)
    except anthropic.APIError as e:
        raise judge.api_failure(e) from e
    finally:
        done.cost_usd += judge.pricing.cost_usd(tally.usage, judge.model)
    if requests and requests[0].stage == "notes":  # the final packet can be built now
        write_packets(folder, [run], judge)
        done.notes.append(f"{run.run_id}: chunk notes in; its final packet is written")


def goal_label(
    folder: Path, run: RunEntry, opinion: str = FIRST
) -> tuple[dict[str, Any] | None, str | None]:
    """A scoring verdict of a run: (reply, None), or (None, why there is none).

    Args:
        folder: The harness folder.
        run: The run's manifest entry.
        opinion: Which verdict: `first` (`<run>.json`) or `second-<k>`.
    """
    final = next((q for q in run.requests if q.stage in ("score", "final")), None)
    if final is None:
        return None, "only chunk notes so far: its final packet is not written yet"
    path = verdict_path(folder, final.name, opinion)
    if not path.is_file():
        return None, "no verdict" if opinion == FIRST else f"no {opinion} verdict"
    data, error = check_verdict(path.read_text(encoding="utf-8"), _schema(folder, final.name))
    return data, error
