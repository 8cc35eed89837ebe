"""Fix-it mode in a timed round (lesson 08, ``course drill``): the judge drill mode calls.

The judge lives above this layer (``course_utils.grader.drill_fix`` runs the edit in ``course
grade``'s sandbox); ``course_utils`` hands it here with ``set_judge`` when the package is imported.
``judge(drill, code)`` calls it; without one (this module used on its own) the edit is judged in
this process, and the verdict says so. An edit that is empty, does not compile or changes nothing
is refused at once, without starting a process (``fixit.edit_problem``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from course_utils.drills import Drill
from course_utils.drills.fixit import TIME_LIMIT_S, FixVerdict, edit_problem, has_fixit, judge_edit

__all__ = ["TIME_LIMIT_S", "edit_problem", "has_fixit", "judge", "set_judge"]

_JUDGE: list[Callable[[Drill, str], FixVerdict]] = []


def set_judge(fn: Callable[[Drill, str], FixVerdict]) -> None:
    """Use ``fn(drill, code)`` to judge fix-it edits from now on."""
    _JUDGE[:] = [fn]


def judge(drill: Drill, code: str) -> FixVerdict:
    """The verdict on ``code``, an edit of ``drill``'s buggy code (sandboxed when a judge is set)."""
    if not has_fixit(drill):
        raise ValueError(f"{drill.id} has no fix-it mode: answer with a letter")
    problem = edit_problem(drill, code)
    if problem is not None:
        return FixVerdict(False, problems=(problem,), ran=False)
    if _JUDGE:
        return _JUDGE[0](drill, code)
    verdict = judge_edit(drill, code)
    return dataclasses.replace(verdict, problems=(*verdict.problems, "(judged in this process: no sandbox)"))
