"""One session of a `--batch-api` run, from submission to its card: which requests it
waits for next (`Pending.needed`), what it got so far and what that cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from scorer.jobs.batch_requests import custom_id
from scorer.jobs.discovery import SessionRef
from scorer.judge.base import BatchJudge
from scorer.judge.reply import UsageTally
from scorer.judge.schema import ChunkNotes
from scorer.models import Chunk
from scorer.prepare import Prepared


@dataclass
class Pending:
    """One session the batch flow carries from submission to its card."""

    ref: SessionRef
    prepared: Prepared
    attempts: int
    estimate: float = 0.0
    notes: dict[int, ChunkNotes] = field(default_factory=dict)
    batched: UsageTally = field(default_factory=UsageTally)
    direct: UsageTally = field(default_factory=UsageTally)
    batch_ids: list[str] = field(default_factory=list)
    prompt_tokens: int = 0
    in_flight: bool = False
    """Submitted by an earlier run that was interrupted: its batches are polled, not redone."""
    _needed: tuple[int, int, list[tuple[str, dict[str, Any]]]] | None = None

    @property
    def sid(self) -> str:
        return self.ref.session_id

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        return self.prepared.chunks

    @property
    def multi(self) -> bool:
        return len(self.chunks) > 1

    def needed(self, judge: BatchJudge) -> list[tuple[str, dict[str, Any]]]:
        """The requests whose results this session waits for next: `(custom_id, params)`."""
        # Rendering prompts is not free and every poll round asks: memoize per step.
        step = (id(self.chunks), len(self.notes))  # a re-chunk makes a new list
        if self._needed is None or self._needed[:2] != step:
            self._needed = (*step, self._build_needed(judge))
        return self._needed[2]

    def _build_needed(self, judge: BatchJudge) -> list[tuple[str, dict[str, Any]]]:
        header = self.prepared.header
        if not self.multi:
            return [(custom_id(self.sid, "score"), judge.scoring_request(header, self.chunks[0]))]
        if len(self.notes) == len(self.chunks):
            return [(custom_id(self.sid, "final"), self.final_params(judge))]
        params = judge.notes_requests(header, self.chunks)
        return [
            (custom_id(self.sid, "notes", i), p)
            for i, p in enumerate(params)
            if i not in self.notes
        ]

    def final_params(self, judge: BatchJudge) -> dict[str, Any]:
        notes = [self.notes[i] for i in range(len(self.chunks))]
        return judge.final_request(self.prepared.header, notes, self.chunks[-1])
