"""Ground-truth labels for calibration: execution-verified outcomes, label files, and
human annotations made in Langfuse.

Every loader returns `Label`s on the rubric's own scale (category labels mapped to their
values), so the statistics never see strings.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from scorer.errors import ConfigError, SourceError
from scorer.judge.rubric import Rubric, ScoreConfig, default_rubric
from scorer.langfuse_client import LangfuseClient

GOAL = "goal_achievement"
EXECUTION = "execution"
"""The annotator of an execution-verified label: the task's own tests, not a person."""
_REQUIRED = ("session_id", "dimension", "value")
_PAGE = 100  # the v3 scores endpoint's maximum page size


class Label(BaseModel):
    """One ground-truth value for one session and dimension."""

    session_id: str
    """Join key with `Scorecard.session_id` (a Langfuse session or trace id for annotations)."""
    dimension: str
    value: float
    """On the rubric's scale: the category value for CATEGORICAL dimensions."""
    label: str | None = None
    """The category label, for CATEGORICAL dimensions."""
    annotator: str
    """Who gave it: a user id, `execution` for test outcomes, or the file's column."""
    source: str
    """Where it came from: `terminal-bench`, `file:<name>`, `langfuse`."""
    meta: dict[str, Any] = Field(default_factory=dict)


# --- value mapping (pure) -------------------------------------------------------------


def to_value(cfg: ScoreConfig, raw: Any) -> tuple[float, str | None]:
    """Map a raw value (category label or number) to `(value, label)` on `cfg`'s scale.

    Raises:
        ValueError: unknown category, or a number outside the dimension's range.
    """
    number = _as_number(raw)
    if cfg.data_type == "CATEGORICAL":
        if number is None:
            by_label = {c.label.lower(): c for c in cfg.categories}
            cat = by_label.get(str(raw).strip().lower())
            if cat is None:
                raise ValueError(f"unknown {cfg.name} category {raw!r} (expected {cfg.labels})")
            return float(cat.value), cat.label
        for cat in cfg.categories:
            if cat.value == number:
                return number, cat.label
        values = [c.value for c in cfg.categories]
        raise ValueError(f"{cfg.name} value {raw!r} is not a category value {values}")
    if number is None:
        raise ValueError(f"{cfg.name} needs a number, got {raw!r}")
    low, high = (0.0, 1.0) if cfg.computed else (cfg.min_value, cfg.max_value)
    if low is not None and high is not None and not low <= number <= high:
        raise ValueError(f"{cfg.name} value {number:g} outside {low:g}..{high:g}")
    return number, None


def _as_number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return float(raw)
    if isinstance(raw, int | float):
        return float(raw)
    try:
        return float(str(raw).strip())
    except ValueError:
        return None


def _config(rubric: Rubric, name: str) -> ScoreConfig:
    try:
        return rubric.get(name)
    except KeyError:
        names = [s.name for s in rubric.scores]
        raise ValueError(f"unknown dimension {name!r} (expected one of {names})") from None


# --- Terminal-Bench execution outcomes -------------------------------------------------


def outcome_label(data: dict[str, Any]) -> str:
    """Goal-achievement category of one Terminal-Bench `label.json`.

    Resolved (the task's own tests passed) is `complete`; otherwise `partial` when at
    least one test passed and `failed` when none did (or none ran).
    """
    if data.get("is_resolved") is True:
        return "complete"
    results = data.get("parser_results") or {}
    return "partial" if any(v == "passed" for v in results.values()) else "failed"


def bench_backends(root: Path) -> list[Path]:
    """The Terminal-Bench backend folders under `root`, one per agent model.

    `root` is a backend folder itself when it holds `*/label.json` (one task per
    subfolder), else the folder holding backends (`*/*/label.json`), as in
    `shared/data/terminal-bench/`.

    Raises:
        SourceError: neither layout is there.
    """
    root = Path(root)
    if any(root.glob("*/label.json")):
        return [root]
    backends = sorted({path.parent.parent for path in root.glob("*/*/label.json")})
    if not backends:
        raise SourceError(f"no */label.json files under {root} (nor under its subfolders)")
    return backends


def load_terminal_bench(root: Path, *, rubric: Rubric | None = None) -> list[Label]:
    """Goal-achievement labels from Terminal-Bench task folders, of one backend or all.

    `root` is one backend's folder (`<root>/<task>/label.json`) or the folder holding
    several (`<root>/<backend>/<task>/label.json`); see `bench_backends`. Each label's
    `meta["backend"]` is its backend folder's name, so the same task run by two agent
    models gives two labels.

    The session id is the `session_id` of `session.jsonl`'s `system/init` line, which is
    what the stream-json source reports; a run without a stream falls back to
    `<backend>/<task id>` (unique, and never a scorecard's id).

    Raises:
        SourceError: `root` is missing, holds no label files, or a file is not JSON.
    """
    cfg = _config(rubric or default_rubric(), GOAL)
    return [
        _bench_label(f, cfg, backend.name)
        for backend in bench_backends(root)
        for f in sorted(backend.glob("*/label.json"))
    ]


def _bench_label(path: Path, cfg: ScoreConfig, backend: str) -> Label:
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, json.JSONDecodeError) as e:
        raise SourceError(f"cannot read {path}: {e}") from e
    except RecursionError:
        raise SourceError(f"cannot read {path}: JSON nested too deeply") from None
    task_id = data.get("task_id") or path.parent.name
    stream = path.parent / "session.jsonl"
    stream_id = _init_session_id(stream) if stream.is_file() else None
    results = data.get("parser_results") or {}
    category = cfg.category(outcome_label(data))
    return Label(
        session_id=stream_id or f"{backend}/{task_id}",
        dimension=cfg.name,
        value=float(category.value),
        label=category.label,
        annotator=EXECUTION,
        source="terminal-bench",
        meta={
            "task_id": task_id,
            "backend": backend,
            "session_path": str(stream) if stream.is_file() else None,
            "instruction": data.get("instruction"),
            "stream_complete": data.get("stream_complete"),
            "is_resolved": data.get("is_resolved"),
            "failure_mode": data.get("failure_mode"),
            "tests_passed": sum(v == "passed" for v in results.values()),
            "tests_total": len(results),
            "agent_started_at": data.get("agent_started_at"),
        },
    )


def _init_session_id(stream: Path, max_lines: int = 20) -> str | None:
    """`session_id` of the `system/init` line (the first line, but tolerate preamble)."""
    with stream.open(encoding="utf-8", errors="replace") as fh:
        for _, line in zip(range(max_lines), fh, strict=False):
            try:
                obj = json.loads(line)
            except (json.JSONDecodeError, RecursionError):
                continue
            if (
                isinstance(obj, dict)
                and obj.get("type") == "system"
                and obj.get("subtype") == "init"
            ):
                return obj.get("session_id")
    return None


# --- CSV / JSONL label files -----------------------------------------------------------


def load_file(path: Path, *, rubric: Rubric | None = None) -> list[Label]:
    """Labels from a CSV (header row) or JSONL file with columns
    `session_id, dimension, value, annotator` (`annotator` optional, default `human`).

    `value` is a number on the dimension's scale or a category label (`complete`).

    Raises:
        ConfigError: unreadable file, unknown format, or a bad row (names the line).
    """
    path = Path(path)
    rubric = rubric or default_rubric()
    suffix = path.suffix.lower()
    if suffix not in (".csv", ".jsonl", ".ndjson"):
        raise ConfigError(
            f"{path}: label files must be .csv or .jsonl, not {suffix or 'no suffix'}"
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise ConfigError(f"cannot read label file {path}: {e.strerror or e}") from e
    rows = _csv_rows(text, path) if suffix == ".csv" else _jsonl_rows(text, path)
    return [_row_label(row, rubric, path, line) for line, row in rows]


def _csv_rows(text: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in _REQUIRED if c not in (reader.fieldnames or [])]
    if missing:
        word = "column" if len(missing) == 1 else "columns"
        raise ConfigError(f"{path}:1: missing {word} {', '.join(missing)}")
    for row in reader:
        yield reader.line_num, row


def _jsonl_rows(text: str, path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ConfigError(f"{path}:{line_no}: not valid JSON ({e.msg})") from e
        except RecursionError:  # a line nested thousands deep: a bad row like any other
            raise ConfigError(f"{path}:{line_no}: JSON nested too deeply") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{line_no}: expected a JSON object")
        yield line_no, row


def _row_label(row: dict[str, Any], rubric: Rubric, path: Path, line: int) -> Label:
    try:
        empty = [c for c in _REQUIRED if row.get(c) in (None, "")]
        if empty:
            raise ValueError(f"missing {', '.join(empty)}")
        cfg = _config(rubric, str(row["dimension"]).strip())
        value, label = to_value(cfg, row["value"])
    except ValueError as e:
        raise ConfigError(f"{path}:{line}: {e}") from e
    extra = {k: v for k, v in row.items() if k not in (*_REQUIRED, "annotator") and k}
    return Label(
        session_id=str(row["session_id"]).strip(),
        dimension=cfg.name,
        value=value,
        label=label,
        annotator=str(row.get("annotator") or "human").strip(),
        source=f"file:{path.name}",
        meta={"line": line, **extra},
    )


# --- Langfuse annotations --------------------------------------------------------------


def load_langfuse_annotations(
    client: LangfuseClient,
    *,
    since: datetime | None = None,
    names: Iterable[str] | None = None,
    rubric: Rubric | None = None,
) -> list[Label]:
    """Human annotation scores from Langfuse (`GET /api/public/v3/scores`, source ANNOTATION).

    Args:
        client: The Langfuse project (`make_client()`, or
            `LangfuseClient.wrap(Langfuse().api)`).
        since: only scores at or after this time.
        names: score names to fetch; default: every rubric score (others are dropped).
        rubric: maps categorical values to numbers; default rubric when omitted.

    The label's `session_id` is the score's subject id (a session id, or the trace id for
    trace/observation scores); the annotator is the score's `authorUserId`.

    Raises:
        CredentialsError: Langfuse rejected the keys.
        SourceError: any other API or network failure.
    """
    rubric = rubric or default_rubric()
    wanted = list(names) if names else [s.name for s in rubric.scores]
    labels: list[Label] = []
    for score in _iter_scores(client, since=since, names=wanted):
        label = annotation_label(score, rubric)
        if label is not None and label.dimension in wanted:
            labels.append(label)
    return labels


def _iter_scores(
    client: LangfuseClient, *, since: datetime | None, names: list[str]
) -> Iterator[Any]:
    """Every page through `LangfuseClient.call`: the shared retry policy (429 waits for
    its Retry-After, 5xx and timeouts back off) and typed errors."""
    cursor: str | None = None
    while True:
        page = client.call(
            client.api.scores.get_many,
            error=SourceError,
            what="reading human annotation scores",
            limit=_PAGE,
            cursor=cursor,
            fields="details,subject,annotation",
            source="ANNOTATION",
            name=",".join(names),
            from_timestamp=since,
        )
        yield from page.data
        cursor = page.meta.cursor
        if not cursor or not page.data:
            return


def annotation_label(score: Any, rubric: Rubric) -> Label | None:
    """One SDK `ScoreV3` as a `Label`, or None when it cannot be joined or mapped
    (no subject, an experiment subject, a TEXT score, an unknown name or category)."""
    key = _subject_key(score.subject)
    if key is None or score.data_type not in ("NUMERIC", "CATEGORICAL", "BOOLEAN"):
        return None
    try:
        value, label = to_value(_config(rubric, score.name), score.value)
    except ValueError:
        return None
    kind, subject_id = key
    return Label(
        session_id=subject_id,
        dimension=score.name,
        value=value,
        label=label,
        annotator=score.author_user_id or "unknown",
        source="langfuse",
        meta={
            "score_id": score.id,
            "subject_kind": kind,
            "queue_id": score.queue_id,
            "comment": score.comment,
            "timestamp": score.timestamp.isoformat(),
        },
    )


def _subject_key(subject: Any) -> tuple[str, str] | None:
    if subject is None or subject.kind == "experiment":
        return None
    if subject.kind == "observation":
        # observation scores belong to their trace for calibration purposes
        return ("trace", subject.trace_id) if subject.trace_id else None
    return subject.kind, subject.id
