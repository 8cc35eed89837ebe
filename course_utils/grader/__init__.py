"""Batch grading of a class's exercise notebooks: ``course grade`` (instructors, workshops).

Modules, in the order a run uses them:

- ``submissions``: find the notebooks (one row per path; ``walk`` gives each learner's folder its
  own budget and names what it skipped; only regular files read, links kept in the class folder),
  read each one as data (a shape too costly to parse refused first), tell its lesson, spot copies
  of course notebooks;
- ``judging``: draw the cases, run the references, judge returned values (grading process);
  ``text`` makes whatever a submission controls safe to show and write;
- ``sandbox`` -> ``supervise`` -> (``jail``) -> ``runner``: one fresh, limited process per
  submission that runs its cells (behind ``guard``'s audit hook) and returns its functions' values
  as tagged JSON (``wire``, with ``wire_numpy`` and ``wire_errors``) on a descriptor, read back by
  ``results``; ``isolation`` decides what it can see (a bank-less copy of the package; bubblewrap's
  jail, ``bwrap``, or ``jail``'s where namespaces work); ``procs`` and ``tidy`` clean up;
- ``batch``: the whole run (``grade``), ``--jobs`` at a time, every failure one row's error;
- ``gradebook`` and ``report``: the CSV, the JSON and the class report; ``outputs`` writes them
  from the start of a run to its end (old ones set aside, progress as rows finish).

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
