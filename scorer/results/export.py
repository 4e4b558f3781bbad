"""`scorer scores export`: CSV and Parquet with the flat columns, JSONL with one scorecard
JSON (the `scorer schema` shape) per line.

A file is written whole or not at all (temp file + rename).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from scorer._fs import write_atomic
from scorer.errors import ConfigError
from scorer.results.rows import COLUMNS, flat_rows, jsonable, require

if TYPE_CHECKING:
    from scorer.sinks.store import StoredRun

__all__ = ["ExportFormat", "export_text", "write_export"]

ExportFormat = Literal["csv", "jsonl", "parquet"]


def to_csv(runs: list[StoredRun]) -> str:
    """The flat rows as CSV text with a header row (pure)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    writer.writeheader()
    writer.writerows(jsonable(row) for row in flat_rows(runs))
    return buf.getvalue()


def to_jsonl(runs: list[StoredRun]) -> str:
    """One scorecard JSON document per line (pure)."""
    lines = (json.dumps(r.card.model_dump(mode="json"), ensure_ascii=False) for r in runs)
    return "".join(line + "\n" for line in lines)


def export_text(runs: list[StoredRun], fmt: ExportFormat) -> str:
    """CSV or JSONL text (Parquet is binary: use `write_export`)."""
    if fmt == "csv":
        return to_csv(runs)
    if fmt == "jsonl":
        return to_jsonl(runs)
    raise ConfigError("parquet is binary: give --output FILE")


def _arrow_table(runs: list[StoredRun]) -> object:
    pa = require("pyarrow")
    kinds = {
        "str": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "datetime": pa.timestamp("us", tz="UTC"),
    }
    schema = pa.schema([(name, kinds[kind]) for name, kind in COLUMNS.items()])
    return pa.Table.from_pylist(flat_rows(runs), schema=schema)


def write_export(runs: list[StoredRun], fmt: ExportFormat, path: Path) -> None:
    """Write the export to `path` atomically.

    Raises:
        ConfigError: Parquet asked for but pyarrow is not installed.
    """
    if fmt != "parquet":
        write_atomic(path, export_text(runs, fmt))
        return
    table = _arrow_table(runs)  # before touching the disk: a missing pyarrow writes nothing
    parquet = require("pyarrow.parquet")
    pa = require("pyarrow")
    sink = pa.BufferOutputStream()
    parquet.write_table(table, sink)
    write_atomic(path, sink.getvalue().to_pybytes())
