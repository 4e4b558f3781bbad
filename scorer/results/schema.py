"""The JSON Schema of the one scorecard JSON shape (generated from the pydantic model)."""

from __future__ import annotations

import json
from typing import Any

from scorer.models import SCORECARD_SCHEMA_VERSION, Scorecard

__all__ = ["SCHEMA_ID", "scorecard_json_schema", "scorecard_json_schema_text"]

SCHEMA_ID = "https://session-scorer.invalid/scorecard.schema.json"


def scorecard_json_schema() -> dict[str, Any]:
    """The JSON Schema that every scorecard JSON document validates against.

    Generated in serialization mode, so it describes what the commands print (and what
    `Scorecard.model_validate` reads back).
    """
    schema = Scorecard.model_json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "x-schema-version": SCORECARD_SCHEMA_VERSION,
        **schema,
    }


def scorecard_json_schema_text() -> str:
    """The schema as the committed docs/scorecard.schema.json text."""
    return json.dumps(scorecard_json_schema(), indent=2, ensure_ascii=False) + "\n"
