"""The harness's folder: packets, exact requests, heuristic cards, verdicts and a manifest.

    <dir>/manifest.json           runs, their requests (sha256), versions; no outcomes
    <dir>/dev/<name>.md           packets a reviewer reads (dev: may be read while tuning)
    <dir>/test/<name>.md          packets of the untuned split (blind reviewers only)
    <dir>/requests/<name>.json    the exact Messages API params of each packet
    <dir>/heuristic/<run>.json    the heuristic judge's scorecard of the same session
    <dir>/verdicts/<name>.json    answers: the reply JSON the packet's schema asks for
    <dir>/verdicts/<name>.second-<k>.json   second opinions on the same packet, if any

It lives outside the repository (a folder the user names: packets are derived from the
shared data, which is not ours to commit).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from scorer._fs import write_atomic
from scorer._version import package_version
from scorer.calibrate.validity.packets import Request, load_prepared, render_packet, requests_for
from scorer.calibrate.validity.runs import BenchRun
from scorer.calibrate.validity.split import SPLIT_METHOD
from scorer.errors import ConfigError
from scorer.judge.anthropic import AnthropicJudge
from scorer.judge.heuristic import HEURISTIC_VERSION, HeuristicJudge
from scorer.judge.schema import ChunkNotes
from scorer.models import SessionInfo

MANIFEST = "manifest.json"


class RequestEntry(BaseModel):
    """One packet of a run."""

    model_config = ConfigDict(extra="forbid")

    name: str
    stage: str
    sha256: str
    packet: str
    """Path of the packet, relative to the folder."""


class RunEntry(BaseModel):
    """One run of the manifest (its outcome is never written here)."""

    model_config = ConfigDict(extra="forbid")

    run: str
    task_id: str
    side: str
    session_id: str
    agent_backend: str
    """The agent's model as the session shows it (`SessionInfo.agent_model`)."""
    backend: str | None = None
    """The data folder of the agent model that ran it (`BenchRun.backend`); None in
    manifests written before there were two backends."""
    n_chunks: int
    requests: list[RequestEntry]


class Manifest(BaseModel):
    """What a packet folder holds and which code built it."""

    model_config = ConfigDict(extra="forbid")

    created_at: datetime
    package_version: str
    model: str
    effort: str
    prompt_version: str
    prompt_hash: str
    rubric_version: str
    rubric_hash: str
    heuristic_version: str
    code_commit: str | None = None
    """The checkout that wrote the packets (`git describe --always --dirty`): a chunked
    run's final packet must be written by the same code as its notes packets."""
    split_method: str = SPLIT_METHOD
    runs: list[RunEntry] = Field(default_factory=list)

    def run(self, run_id: str) -> RunEntry | None:
        return next((r for r in self.runs if r.run == run_id), None)


def read_manifest(folder: Path) -> Manifest:
    """The manifest of a packet folder.

    Raises:
        ConfigError: No manifest there, or not one of ours.
    """
    path = Path(folder) / MANIFEST
    try:
        return Manifest.model_validate_json(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ConfigError(f"no packet manifest at {path}: {e.strerror or e}") from e
    except ValueError as e:
        raise ConfigError(f"{path} is not a packet manifest: {e}") from e


def read_notes(folder: Path, run: str, n_chunks: int) -> list[ChunkNotes] | None:
    """The chunk notes answered for a chunked run, or None until all of them are in."""
    notes = []
    for i in range(1, n_chunks + 1):
        path = Path(folder) / "verdicts" / f"{run}.notes-{i}.json"
        if not path.is_file():
            return None
        notes.append(ChunkNotes.model_validate_json(path.read_text(encoding="utf-8")))
    return notes


def write_packets(
    folder: Path, runs: list[BenchRun], judge: AnthropicJudge, *, commit: str | None = None
) -> Manifest:
    """Build and write every run's packets, requests and heuristic card, then the manifest.

    Runs already in the folder's manifest but not in `runs` (another split) are kept.
    """
    folder = Path(folder)
    old = read_manifest(folder) if (folder / MANIFEST).is_file() else None
    manifest = Manifest(
        created_at=datetime.now(UTC),
        package_version=package_version(),
        model=judge.model,
        effort=judge.effort,
        prompt_version=judge.prompts.version,
        prompt_hash=judge.prompts.hash,
        rubric_version=judge.rubric.version,
        rubric_hash=judge.rubric.hash,
        heuristic_version=HEURISTIC_VERSION,
        code_commit=commit,
    )
    if old is not None and (old.prompt_hash, old.rubric_hash, old.heuristic_version) != (
        manifest.prompt_hash, manifest.rubric_hash, manifest.heuristic_version,
    ):  # fmt: skip
        raise ConfigError(
            f"{folder} holds packets of prompt {old.prompt_version} / rubric "
            f"{old.rubric_version} / {old.heuristic_version}: write these to another folder"
        )
    heuristic = HeuristicJudge(rubric=judge.rubric)
    entries = {r.run: r for r in (old.runs if old else [])}
    for run in runs:
        entries[run.run_id] = _write_run(folder, run, judge, heuristic)
    manifest.runs = sorted(entries.values(), key=lambda e: (e.side, e.run))
    write_atomic(folder / MANIFEST, manifest.model_dump_json(indent=1) + "\n")
    return manifest


def _write_run(
    folder: Path, run: BenchRun, judge: AnthropicJudge, heuristic: HeuristicJudge
) -> RunEntry:
    prepared = load_prepared(str(run.session_path), run.instruction)
    n_chunks = len(prepared.chunks)
    notes = read_notes(folder, run.run_id, n_chunks) if n_chunks > 1 else None
    entries = []
    for request in requests_for(judge, prepared, run.run_id, notes):
        packet = f"{run.side}/{request.name}.md"
        write_atomic(folder / packet, render_packet(request))
        write_atomic(folder / "requests" / f"{request.name}.json", _request_json(request))
        entries.append(
            RequestEntry(
                name=request.name, stage=request.stage, sha256=request.sha256, packet=packet
            )
        )
    card = heuristic.judge(prepared)
    write_atomic(folder / "heuristic" / f"{run.run_id}.json", card.model_dump_json(indent=1))
    info = SessionInfo.of(prepared.session)
    return RunEntry(
        run=run.run_id,
        task_id=run.task_id,
        side=run.side,
        session_id=prepared.session.session_id,
        agent_backend=info.agent_model or "unknown",
        backend=run.backend,
        n_chunks=n_chunks,
        requests=entries,
    )


def _request_json(request: Request) -> str:
    return json.dumps(request.params, indent=1, ensure_ascii=False, default=str) + "\n"


def request_params(folder: Path, name: str) -> dict[str, Any]:
    """The saved Messages API params of one packet."""
    data: dict[str, Any] = json.loads(
        (Path(folder) / "requests" / f"{name}.json").read_text(encoding="utf-8")
    )
    return data


class PacketSizes(BaseModel):
    """How big the packets of one split and backend are (what a reviewer reads)."""

    side: str
    backend: str
    runs: int
    packets: int
    chars: list[int]
    """Characters of each packet file."""
    chunks: dict[int, int]
    """Chunks per run → how many runs have that many."""


def packet_sizes(folder: Path, manifest: Manifest) -> list[PacketSizes]:
    """Per split and backend (then per split, all backends): packets and their sizes."""
    groups: dict[tuple[str, str], list[RunEntry]] = {}
    for entry in manifest.runs:
        for backend in (entry.backend or "unknown", "all backends"):
            groups.setdefault((entry.side, backend), []).append(entry)
    out = []
    for (side, backend), entries in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1] == "all backends", kv[0][1])
    ):
        chars = [
            len((Path(folder) / q.packet).read_text(encoding="utf-8"))
            for e in entries
            for q in e.requests
        ]
        chunks: dict[int, int] = {}
        for e in entries:
            chunks[e.n_chunks] = chunks.get(e.n_chunks, 0) + 1
        out.append(
            PacketSizes(
                side=side,
                backend=backend,
                runs=len(entries),
                packets=len(chars),
                chars=chars,
                chunks=dict(sorted(chunks.items())),
            )
        )
    return out
