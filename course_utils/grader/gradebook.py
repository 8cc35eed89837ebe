"""The gradebook: one row per submission, written atomically (``course grade``, instructors).

The CSV holds only what is stable from run to run (status words and totals), so grading the same
class twice gives the same file. The JSON holds the details: cases, expected and got values,
exceptions, captured output, timings and the seed that reproduces the run, and the run's
``status``: "in progress" while rows are still being graded (the files are rewritten as they
finish), then "complete" or "interrupted". A row not graded (yet) has no status words and says why
in its note. Every text a submission controls is cleaned (``text.clean``) and CSV cells cannot
start a formula (``text.csv_cell``).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field
from typing import Any

from course_utils.grader.judging import Verdict
from course_utils.grader.text import clean, csv_cell


@dataclass
class Row:
    """One submission's grades and what its process did."""

    name: str
    lesson: str | None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    note: str = ""
    run: dict[str, Any] = field(default_factory=dict)
    graded: bool = True  # False for a row the run did not get to (in progress, interrupted)

    @property
    def total(self) -> int:
        """Exercises passed."""
        return sum(v.status == "pass" for v in self.verdicts.values())

    @property
    def possible(self) -> int:
        """Exercises graded."""
        return len(self.verdicts)


def csv_text(rows: list[Row], ids: list[str]) -> str:
    """submission, lesson, one column per exercise (its status), total, out_of, note."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["submission", "lesson", *map(csv_cell, ids), "total", "out_of", "note"])
    for row in rows:
        cells = [row.verdicts[i].status if i in row.verdicts else "" for i in ids]
        writer.writerow([csv_cell(row.name), csv_cell(row.lesson or ""), *cells, row.total, row.possible,
                         csv_cell(row.note)])
    return out.getvalue()


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data with every string cleaned (deep or odd parts shown as text)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if value is None or isinstance(value, bool | int):
        return value if type(value) is not int or abs(value) < 2**63 else str(hex(value))
    if isinstance(value, str):
        return clean(value, 100_000)
    if depth < 8 and isinstance(value, dict):
        return {clean(k, 200): plain(v, depth + 1) for k, v in list(value.items())[:1000]}
    if depth < 8 and isinstance(value, list | tuple):
        return [plain(v, depth + 1) for v in value[:1000]]
    return f"<{type(value).__name__}>"


def json_text(rows: list[Row], ids: list[str], meta: dict[str, Any]) -> str:
    """Every detail of the run, for reading a row or reproducing it (``--seed``)."""
    doc = {**meta, "exercises": ids, "submissions": [
        {"submission": r.name, "lesson": r.lesson, "total": r.total, "out_of": r.possible,
         "note": r.note, "results": {i: v.as_dict() for i, v in r.verdicts.items()}, "run": r.run}
        for r in rows]}
    return json.dumps(plain(doc), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
