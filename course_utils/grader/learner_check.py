"""``course check PATH``: a learner's notebook graded exactly as ``course grade`` grades it.

The same fresh, limited process runs the cells in an IPython shell, the same cases are drawn and
the same judge decides, so ``course check`` and ``course grade`` can never disagree.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

from course_utils.core.errors import CourseError
from course_utils.grader.batch import Options, grade
from course_utils.grader.sandbox import Limits
from course_utils.grader.submissions import parse, read_capped


@dataclass(frozen=True)
class Verdict:
    """One exercise's outcome in a checked notebook: pass, fail, unsolved, error, timeout,
    missing, or "not graded" (an exercise only ``check()`` in the notebook can judge)."""

    exercise_id: str
    result: str
    detail: str = ""


UNSOLVED = "not solved yet: replace the NotImplementedError in its cell"


def _learner_status(verdict) -> str:
    return "unsolved" if verdict.reason == "not solved" else verdict.status


def _detail(verdict) -> str:
    if verdict.reason == "not solved":
        return UNSOLVED  # the one line the learner needs (the stub's own message adds nothing)
    if verdict.status == "fail":
        return (f"failed on case '{verdict.case}': {verdict.detail}\n  expected: {verdict.expected}"
                f"\n  got:      {verdict.got}")
    return verdict.detail


def _readable(path: Path) -> None:
    """A clear CourseError unless ``path`` is a notebook; reads only a regular file, never waits."""
    try:
        parse(read_capped(path, follow=True))
    except FileNotFoundError:
        raise CourseError(f"{path}: no such file") from None
    except (OSError, ValueError) as err:
        raise CourseError(f"{path}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    except CourseError as err:
        raise CourseError(f"{path}: {err}") from None


def check_notebook(path: Path, timeout: float = 300, seed: int | None = None,
                   memory_mb: int = 4096) -> list[Verdict]:
    """Grade a learner's notebook exactly as ``course grade`` does (the same fresh, limited
    process running the cells in an IPython shell, the same cases and the same judge), so the
    two can never disagree. The learner's file is only read."""
    _readable(Path(path))  # a missing or broken file is one clear message
    options = Options(limits=Limits(timeout=timeout, memory_mb=memory_mb), seed=seed, progress=False,
                      flag_copies=False)  # a learner checking a copy of the solution fools only themselves
    with warnings.catch_warnings():  # the references' own warnings (a std of one row) are no news
        warnings.simplefilter("ignore")
        graded = grade([path], options)
    if graded.status == "interrupted":
        raise KeyboardInterrupt
    row = graded.rows[0]
    found = [Verdict(ex_id, _learner_status(v), _detail(v)) for ex_id, v in row.verdicts.items()]
    return found + [Verdict(ex_id, "not graded", f"{why}; run its check() cell in the notebook")
                    for ex_id, why in graded.skipped.items()]
