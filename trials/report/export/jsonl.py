"""A run's trials as JSON Lines: one object per trial, with exactly the fields of the CSV.

The fields and their order are :data:`capplan.trials.report.formats.CSV_COLUMNS`, so a JSONL
row and a ``trial report --format csv`` row say the same thing; values keep their JSON types (a
number stays a number, an unknown cost is ``null``, never 0 or an empty string). Strings are
redacted by value; JSON itself escapes control characters, so no cell can reach a terminal or a
spreadsheet as anything but text.
"""

from __future__ import annotations

import json
import math
from typing import Any

from capplan.core.redaction import redact_text
from capplan.trials.report.compare import Column
from capplan.trials.report.formats import CSV_COLUMNS
from capplan.trials.report.run_data import TrialResult


def row(trial: TrialResult, column: Column) -> dict[str, Any]:
    """One trial's fields, the CSV's columns in the CSV's order."""
    values = {**trial.as_row(), "column": column.label}
    return {name: _value(values.get(name)) for name in CSV_COLUMNS}


def _value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # JSON has no NaN or infinity; a hand-edited runs.jsonl line may
    return value


def render(columns: list[Column]) -> bytes:
    """Every trial of ``columns``, one JSON object per line."""
    out = [json.dumps(row(trial, column), ensure_ascii=False, allow_nan=False)
           for column in columns for trial in column.trials]
    return ("\n".join(out) + "\n" if out else "").encode("utf-8")
