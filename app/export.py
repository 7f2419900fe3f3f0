"""One array of an answer as CSV for a spreadsheet or a notebook (POST /api/attention?format=csv).

  n × n stages (scores, scaled, masked, weights)   rows: queries, columns: keys; the header row
                                                    names the keys, the first column the queries
  q, k, v, output (n × d)                           rows: tokens, columns d0, d1, …
  a leading head axis                               one block of rows per head, in a first "head" column

Numbers are float64 written as the shortest text that reads back to the same float (as the
JSON answer); a hidden cell of "masked" (−∞, JSON's null) is an empty cell. Token text is data:
a label that a spreadsheet would run as a formula (starting with = + - @, a tab or a carriage
return) is prefixed with ', and the csv module quotes commas, quotes and line breaks.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

import numpy as np

SQUARE = ("scores", "scaled", "masked", "weights")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\n")


def cell_text(label: str) -> str:
    """A token label as a spreadsheet cell that can only ever be text."""
    return "'" + label if label.startswith(_FORMULA_STARTS) else label


def stage_csv(name: str, a: np.ndarray, tokens: Sequence[str]) -> bytes:
    """The CSV of array `name` (2-D, or 3-D with a leading head axis) of an answer whose rows are tokens."""
    labels = [cell_text(t) for t in tokens]
    columns = labels if name in SQUARE else [f"d{j}" for j in range(a.shape[-1])]
    heads = a[None] if a.ndim == 2 else a  # (h, n, ·)
    out = io.StringIO(newline="")
    w = csv.writer(out, lineterminator="\r\n")
    w.writerow((["head"] if a.ndim == 3 else []) + ["query" if name in SQUARE else "token", *columns])
    for h, rows in enumerate(heads):
        lead = [h] if a.ndim == 3 else []
        for label, row in zip(labels, rows.tolist(), strict=True):
            if name == "masked":
                row = ["" if x == -math.inf else x for x in row]
            w.writerow([*lead, label, *row])
    return out.getvalue().encode("utf-8")
