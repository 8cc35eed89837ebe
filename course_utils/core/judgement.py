"""The one loop that judges an answer's outcomes against the reference's, case by case.

``check()`` in a notebook and ``course grade`` (hence ``course check``) both call
``first_failure``: the cases run in order and the first one the judge rejects is the verdict.
An answer that raises ``NotImplementedError`` where the reference returns is "not solved yet".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Judge, Outcome

UNSOLVED = "not solved yet"


class UnreadableValue(Exception):
    """Stands for a value that did not survive the trip from a submission's process."""


def default_judge(exercise: Exercise) -> Judge:
    """Values must match within tolerance; an expected error must be raised with the same type."""

    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        if expected.error is not None:
            if got.error is None:
                return f"expected {type(expected.error).__name__} to be raised, nothing was"
            if not isinstance(got.error, type(expected.error)):
                return f"raised {type(got.error).__name__}, expected {type(expected.error).__name__}"
            return None
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return mismatch(expected.value, got.value, exercise.atol, exercise.rtol)

    return judge


def judge_of(exercise: Exercise) -> Judge:
    """The exercise's own judge, or the default comparison."""
    return exercise.judge or default_judge(exercise)


@dataclass(frozen=True)
class Failure:
    """The first case an answer got wrong: what was expected, what came, and why it is wrong."""

    index: int
    case: Case
    expected: Outcome
    got: Outcome
    problem: str

    @property
    def unsolved(self) -> bool:
        """The answer is still the exercise's stub."""
        return self.problem == UNSOLVED


def case_problem(judge: Judge, expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Why ``got`` is wrong for this case, or None; never raises."""
    if got.error is not None and expected.error is None:
        if isinstance(got.error, NotImplementedError):
            return UNSOLVED
        if isinstance(got.error, UnreadableValue):
            return f"the value returned could not be read ({got.error})"
    try:
        return judge(expected, got, case) or None
    except Exception as err:  # noqa: BLE001 - a strange value must fail the case, not the checker
        return f"the answer could not be judged ({type(err).__name__}: {err})"


def first_failure(exercise: Exercise, cases: Iterable[Case], expected: Iterable[Outcome],
                  got: Iterable[Outcome]) -> Failure | None:
    """Judge case by case (the iterables are consumed in step, so lazy runs stay in order)."""
    judge = judge_of(exercise)
    # strict=False: a submission that ran out of time sends fewer outcomes than there are cases
    for index, (case, exp, answer) in enumerate(zip(cases, expected, got, strict=False)):
        problem = case_problem(judge, exp, answer, case)
        if problem:
            return Failure(index, case, exp, answer, problem)
    return None
