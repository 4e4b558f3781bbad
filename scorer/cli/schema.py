"""`scorer schema`: print the JSON Schema of the scorecard JSON."""

from __future__ import annotations

import sys

from scorer.cli._common import handle_errors


@handle_errors
def schema_command() -> None:
    """Print the JSON Schema of the scorecard JSON that `score-session --json`, `scorer
    scores show --json`, the JSONL export and the viewer use (docs/scorecard.schema.json)."""
    from scorer.results.schema import scorecard_json_schema_text

    sys.stdout.write(scorecard_json_schema_text())
