"""The files ``course grade`` writes, from the start of a run to its end (instructors).

- At the start, a previous run's gradebook at the same paths is set aside
  (``gradebook.csv`` -> ``gradebook.previous.csv``, the same for the HTML page and the JSON), so a
  run that fails can never leave an old gradebook looking current.
- While the run goes on, the CSV, the JSON and the HTML page (without its chart) are rewritten as
  rows finish (at most once a second): rows not graded yet say so in their note and the JSON's
  ``status`` is "in progress". If the grader is killed, that is what stays: every row, marked.
- At the end, the complete gradebook: ``status`` "complete", or "interrupted" after Ctrl-C (rows
  not graded say so), or "failed" if the grader itself broke (the rows it had, marked).

Every file is replaced atomically (``core.files.write_atomically``).
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from course_utils.core.files import write_atomically
from course_utils.grader import gradebook, report
from course_utils.grader.text import clean

PROGRESS_INTERVAL_S = 1.0


def previous_name(path: Path) -> Path:
    """Where a previous run's file is set aside: ``gradebook.csv`` -> ``gradebook.previous.csv``."""
    return path.with_name(f"{path.stem}.previous{path.suffix}")


def _write_over(path: Path, text: str) -> None:
    """``write_atomically``; a folder found where the file goes (made during the run) is first
    moved aside to ``NAME.in-the-way-N`` (and said so on stderr), so the file is still written."""
    if os.path.isdir(path) and not os.path.islink(path):
        import sys

        for n in range(1, 1000):
            aside = path.with_name(f"{path.name}.in-the-way-{n}")
            if not os.path.lexists(aside):
                os.replace(path, aside)
                print(f"course grade: a folder was in the way of {clean(str(path))}: moved to "
                      f"{clean(str(aside))}", file=sys.stderr)
                break
    write_atomically(path, text)


class GradebookFiles:
    """The CSV at ``out``, the HTML page beside it and the JSON at ``json_path`` (optional)."""

    def __init__(self, out: Path, json_path: Path | None = None,
                 interval_s: float = PROGRESS_INTERVAL_S, lms=None):
        self.out, self.json_path, self.interval_s = Path(out), json_path, interval_s
        self.lms = lms  # an lms.LmsFile (``--lms``), written with the gradebook
        self.page = self.out.with_suffix(".html")
        self.last = None  # the latest table seen
        self.written_key: tuple | None = None  # (rows graded, exercises) when last written
        self.written_at = -float("inf")

    @property
    def paths(self) -> list[Path]:
        return [self.out, self.page, *([self.json_path] if self.json_path is not None else []),
                *([self.lms.path] if self.lms is not None else [])]

    def set_aside(self) -> list[Path]:
        """Move a previous run's files to their ``.previous`` names; returns where they went."""
        moved = []
        for path in self.paths:
            if os.path.lexists(path):
                os.replace(path, previous_name(path))
                moved.append(previous_name(path))
        return moved

    def _write(self, graded, options, chart: bool, status: str | None = None) -> None:
        meta = graded.meta(options)
        if status is not None:
            meta["status"] = status
        stats = report.summarise(graded.rows, graded.ids)
        _write_over(self.out, gradebook.csv_text(graded.rows, graded.ids))
        _write_over(self.page, report.html_page(stats, graded.rows, meta, chart=chart))
        if self.json_path is not None:
            _write_over(self.json_path, gradebook.json_text(graded.rows, graded.ids, meta))
        if self.lms is not None:
            _write_over(self.lms.path, self.lms.text(graded))
        self.written_at = time.monotonic()

    def progress(self, graded, options) -> None:
        """The table so far (unfinished rows marked), when it changed: at most once per
        ``interval_s`` (``grade`` calls again at least once a second, so nothing is held back long)."""
        self.last = graded
        key = (graded.graded, len(graded.ids))
        if key != self.written_key and time.monotonic() - self.written_at >= self.interval_s:
            self._write(graded, options, chart=False)
            self.written_key = key

    def failed(self, options, err: BaseException) -> None:
        """The grader broke: the last table it had, marked as a failed run (if there was one)."""
        if self.last is not None:
            self._write(self.last, options, chart=False,
                        status=clean(f"failed ({type(err).__name__}: {err})", 300))

    def final(self, graded, options) -> str:
        """The finished gradebook; returns the text report for the terminal."""
        self._write(graded, options, chart=True)
        stats = report.summarise(graded.rows, graded.ids)
        passed = sum(r.total for r in graded.rows)
        possible = sum(r.possible for r in graded.rows)
        lines = [report.text_table(stats) if stats else "no exercises graded", ""]
        lines += [f"not graded here (check them in the notebook): {ex_id}: {why}"
                  for ex_id, why in graded.skipped.items()]
        if graded.status == "interrupted":
            lines.append(f"INTERRUPTED: {graded.graded} of {len(graded.rows)} submissions graded; "
                         "the gradebook marks the others 'not graded'")
        lines += [f"{len(graded.rows)} submissions, {passed}/{possible} exercises passed, "
                  f"{graded.elapsed_s:.1f} s (seed {graded.seed}; --seed {graded.seed} reproduces the cases)"]
        if graded.isolation:
            lines.append(f"isolation: {graded.isolation}")
        lines.append("wrote " + ", ".join(clean(str(p)) for p in self.paths))
        return "\n".join(lines)


def _progress(files: GradebookFiles, options):
    """Rewrite the gradebook as rows finish, unless a submission could read it there: its folder
    is hidden from submissions, but a system folder (``/``, ``/usr``...) cannot be; then the
    gradebook is written at the end only."""
    from course_utils.grader.bwrap import SYSTEM

    folders = {os.path.dirname(os.path.realpath(p)) for p in files.paths}
    if folders & (SYSTEM - {"/tmp"}):
        import sys

        print("course grade: the gradebook is in a system folder, which submissions can read: it is "
              "written when the run ends, not as rows finish", file=sys.stderr)
        return None
    return lambda table: files.progress(table, options)


def _stop(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def grade_and_write(paths: list, options, out: Path, json_path: Path | None = None,
                    lms_path: Path | None = None) -> int:
    """``course grade``: set the old gradebook aside, grade (writing as rows finish), write the
    gradebook, print the report. Returns the exit code: 0, or 130 when interrupted (Ctrl-C or
    SIGTERM, which stops the run the same way)."""
    import signal
    import sys

    from course_utils.core.errors import CourseError
    from course_utils.grader.batch import grade
    from course_utils.grader.lms import LmsFile

    files = GradebookFiles(out, json_path, lms=LmsFile(lms_path, paths) if lms_path else None)
    files.set_aside()
    previous = signal.signal(signal.SIGTERM, _stop)
    # Ctrl-C stops the run even when this process was started with SIGINT ignored (a background
    # job of a script: POSIX shells start those so, and Python then leaves it ignored)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        options = replace(options, private=tuple(str(p) for p in files.paths))
        graded = grade(paths, options, progress=_progress(files, options))
    except KeyboardInterrupt:
        print("course grade: interrupted while reading the class: nothing was graded", file=sys.stderr)
        return 130
    except BaseException as err:  # the files written so far say the run failed, and why
        files.failed(options, err)
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    if not graded.rows:
        raise CourseError(f"no notebooks (*.ipynb) found in {' '.join(map(str, paths))}")
    print(files.final(graded, options))
    return 130 if graded.status == "interrupted" else 0
