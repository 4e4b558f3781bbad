"""What the stored scores become for people: flat rows and exports, trends, the JSON Schema.

Pure functions over `StoredRun`s read from the store; the viewer (`scorer.view`) and the
`scorer scores export` / `scorer trends` / `scorer schema` commands are built on them.
"""

from scorer.results.rows import COLUMNS, flat_row, to_dataframe
from scorer.results.schema import scorecard_json_schema
from scorer.results.trends import Trends, compute_trends

__all__ = [
    "COLUMNS",
    "Trends",
    "compute_trends",
    "flat_row",
    "scorecard_json_schema",
    "to_dataframe",
]
