"""Batch grading of a class's exercise notebooks: ``course grade`` (instructors, workshops).

Modules, in the order a run uses them:

- ``submissions``: find the notebooks, read each one as data, tell its lesson;
- ``judging``: draw the cases, run the references, judge returned values (grading process);
- ``sandbox`` -> ``supervise`` -> ``runner``: one fresh, limited process per submission that runs
  its cells and returns its functions' values as tagged JSON (``wire``); ``procs`` cleans up;
- ``batch``: the whole run (``grade``), ``--jobs`` at a time;
- ``gradebook`` and ``report``: the CSV, the JSON and the class report.

Importing this package loads nothing: the submission's process imports ``runner`` through it.
"""

from __future__ import annotations

__all__ = ["Limits", "Options", "grade"]


def __getattr__(name: str):
    if name in ("grade", "Options"):
        from course_utils.grader import batch

        return getattr(batch, name)
    if name == "Limits":
        from course_utils.grader.sandbox import Limits

        return Limits
    raise AttributeError(name)
