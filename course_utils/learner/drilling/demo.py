"""Lesson 08's worked round, told from the drills it serves (nothing about it is written by hand).

``method_answer(session)`` answers the current drill as lesson 08's method says: run the buggy code,
write the hypothesis from what was measured, then choose. ``guess_answer(session)`` answers the
next one as a guess that skipped the measurement (the first wrong choice). ``unmeasured(drill)``
says what the skipped measurement would have shown. Every word about a drill comes from that
drill: its measured symptom and its choices. The lesson runs them on a ``DrillSession`` made with
``record=False``, on drills the lessons have already solved, so nothing is spoiled or recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from course_utils.drills import Drill
from course_utils.drills.hypothesis_gate import hypothesis_problem

if TYPE_CHECKING:
    from course_utils.learner.drilling.mode import DrillSession


def _checked(drill: Drill, hypothesis: str) -> str:
    problem = hypothesis_problem(drill.buggy_code, hypothesis)
    if problem:
        raise ValueError(f"{drill.id}: the worked hypothesis is not one: {problem}")
    return hypothesis


def method_answer(session: DrillSession) -> str:
    """Measure, hypothesise from the measurement, then answer: the transcript of those steps."""
    drill = session.current
    measured = drill.symptom()
    hypothesis = _checked(drill, f"the buggy code measures: {measured.summary}")
    return "\n".join([f"1. ran the buggy code: {measured}",
                      "2. hypothesis, from that measurement (written before choosing)",
                      "3. " + session.answer(drill.question.answer, hypothesis)])


def guess_answer(session: DrillSession) -> str:
    """A guess that skips the measurement: the first wrong choice, taken as the hypothesis."""
    drill = session.current
    q = drill.question
    wrong = next(i for i in range(len(q.choices)) if i != q.answer)
    hypothesis = _checked(drill, f"a guess from reading the code, not measured: {q.choices[wrong]}; "
                                 "the loss would show it")
    return f"guessed without running anything: {q.choices[wrong]}\n" + session.answer(wrong, hypothesis)


def unmeasured(drill: Drill) -> str:
    """What *Run the buggy code* would have shown, in the drill's own measured words."""
    return f"Run the buggy code would have measured: {drill.symptom()}\nafter the fix: {drill.fix_check()}"
