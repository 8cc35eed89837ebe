"""The gradebook: one row per submission, written atomically (``course grade``, instructors).

The CSV holds only what is stable from run to run (status words and totals), so grading the same
class twice gives the same file. The JSON holds the details: cases, expected and got values,
exceptions, captured output, timings and the seed that reproduces the run.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from typing import Any

from course_utils.grader.judging import Verdict


@dataclass
class Row:
    """One submission's grades and what its process did."""

    name: str
    lesson: str | None
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    note: str = ""
    run: dict[str, Any] = field(default_factory=dict)

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
    writer.writerow(["submission", "lesson", *ids, "total", "out_of", "note"])
    for row in rows:
        cells = [row.verdicts[i].status if i in row.verdicts else "" for i in ids]
        writer.writerow([row.name, row.lesson or "", *cells, row.total, row.possible, row.note])
    return out.getvalue()


def json_text(rows: list[Row], ids: list[str], meta: dict[str, Any]) -> str:
    """Every detail of the run, for reading a row or reproducing it (``--seed``)."""
    doc = {**meta, "exercises": ids, "submissions": [
        {"submission": r.name, "lesson": r.lesson, "total": r.total, "out_of": r.possible,
         "note": r.note, "results": {i: v.as_dict() for i, v in r.verdicts.items()}, "run": r.run}
        for r in rows]}
    return json.dumps(doc, indent=1, ensure_ascii=False) + "\n"
