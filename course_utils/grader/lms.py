"""``course grade --lms PATH``: a CSV an LMS can import, one row per learner.

Columns: ``learner, total, possible, percent``. The learner is the first folder below the folder
given to ``course grade`` (``CLASS/alice/01_mps_setup.ipynb`` -> ``alice``, the layout ``course
collect`` makes); a notebook directly in the folder given, or given by its own path, belongs to
that folder. ``possible`` is the same for every learner: every exercise the run graded (a learner
without a notebook for a lesson has 0 for its exercises), and a folder of the class holding no
notebook is a learner with 0. Two notebooks of one learner for the same lesson count once, the
better one. Cells cannot start a formula (as in the gradebook). Written with the gradebook, so it
is set aside and rewritten the same way.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from course_utils.grader.text import csv_cell

HEADER = ("learner", "total", "possible", "percent")


class LmsFile:
    """The LMS CSV at ``path`` for a run over ``paths`` (the class as given to ``course grade``)."""

    def __init__(self, path: Path, paths: list):
        self.path, self.paths = Path(path), [Path(p) for p in paths]
        self._learners: tuple[dict[str, str], list[str]] | None = None

    def learners(self) -> tuple[dict[str, str], list[str]]:
        """Row name -> learner, and the class's folders with no notebook (found once)."""
        if self._learners is None:
            from course_utils.grader.submissions import find

            of = {}
            for f in find(self.paths):
                below = Path(os.path.relpath(f.path, f.root)).parts
                of[f.name] = below[0] if len(below) > 1 else Path(os.path.abspath(f.root)).name
            empty = sorted({child.name for folder in self.paths if folder.is_dir()
                            for child in folder.iterdir() if not child.name.startswith(".")
                            and child.is_dir() and not child.is_symlink()} - set(of.values()))
            self._learners = of, empty
        return self._learners

    def text(self, graded) -> str:
        """The CSV for a graded class (``batch.Graded``; rows still running count 0)."""
        of, empty = self.learners()
        best: dict[str, dict[str | None, int]] = {name: {} for name in empty}
        for row in graded.rows:
            learner = of.get(row.name, row.name.split("/")[0])
            lessons = best.setdefault(learner, {})
            lessons[row.lesson] = max(lessons.get(row.lesson, 0), row.total)
        possible = len(graded.ids)
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(HEADER)
        for learner, lessons in sorted(best.items()):
            total = sum(lessons.values())
            percent = f"{100 * total / possible:.1f}" if possible else ""
            writer.writerow([csv_cell(learner), total, possible, percent])
        return out.getvalue()
