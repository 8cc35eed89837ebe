"""``check()`` and ``hint()``: instant, exact feedback inside a notebook (lesson 00).

``check(exercise_id, answer)`` runs the exercise's fixed and seeded random cases against its
reference. It prints one pass line and records progress, or raises ``CheckFailed`` naming the
case, the expected and the got value and the first hint. It never prints a failure and carries on.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable

from course_utils.core import progress
from course_utils.core.compare import describe, mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, run

CHECK_LOG_ENV = "MPS_DETECTIVE_CHECK_LOG"  # set by `course check`: one JSON line per check()


class CheckFailed(AssertionError):
    """A learner's answer disagreed with the reference on one case."""

    def __init__(self, exercise: Exercise, case: Case, expected: str, got: str, problem: str,
                 seed: int):
        self.exercise_id, self.case_label = exercise.id, case.label
        self.expected, self.got, self.problem, self.seed = expected, got, problem, seed
        self.first_hint = exercise.hints[0] if exercise.hints else ""
        super().__init__(self._message())

    def _message(self) -> str:
        lines = [
            f"{self.exercise_id}: failed on case '{self.case_label}'",
            f"  expected: {self.expected}",
            f"  got:      {self.got}",
            f"  problem:  {self.problem}",
        ]
        if self.first_hint:
            lines.append(f"  hint:     {self.first_hint}")
        lines.append(f"  (random cases drawn with seed={self.seed}; "
                     f"hint('{self.exercise_id}') shows more hints)")
        return "\n".join(lines)

    def _render_traceback_(self) -> list[str]:
        """IPython shows this instead of a stack trace: the learner needs the case, not our frames."""
        return ["CheckFailed: " + self._message()]


def get_exercise(exercise_id: str) -> Exercise:
    """Look an exercise up by id; an unknown id raises ``UnknownId`` naming close ids."""
    from course_utils import bank

    return bank.get(exercise_id)


def default_judge(exercise: Exercise) -> Callable[[Outcome, Outcome, Case], str | None]:
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


def _shown(outcome: Outcome) -> str:
    return describe(outcome.error if outcome.error is not None else outcome.value)


def first_failure(exercise: Exercise, answer: Callable, seed: int):
    """Run every case; return (case, expected, got, problem) for the first failure, or None."""
    judge = exercise.judge or default_judge(exercise)
    for case in exercise.cases(seed):
        expected = run(exercise.reference, case)
        got = run(answer, case)
        if isinstance(got.error, NotImplementedError) and expected.error is None:
            raise NotImplementedError(
                f"{exercise.id} is not solved yet: replace the NotImplementedError in your "
                "function with your answer, then run this check again."
            ) from got.error
        problem = judge(expected, got, case)
        if problem:
            return case, expected, got, problem
    return None


def _log(exercise_id: str, result: str, detail: str = "") -> None:
    target = os.environ.get(CHECK_LOG_ENV)
    if target:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"id": exercise_id, "result": result, "detail": detail}) + "\n")


def check(exercise_id: str, answer: Callable, *, seed: int | None = None) -> None:
    """Grade ``answer`` against exercise ``exercise_id``; print a pass line or raise CheckFailed."""
    exercise = get_exercise(exercise_id)
    if not callable(answer):
        raise TypeError(f"check('{exercise_id}', answer): answer must be your function, "
                        f"got {type(answer).__name__}")
    seed = secrets.randbits(32) if seed is None else seed
    try:
        failure = first_failure(exercise, answer, seed)
    except NotImplementedError:
        _log(exercise_id, "unsolved")
        raise
    if failure is None:
        progress.record_attempt(exercise_id, passed=True)
        _log(exercise_id, "pass")
        n_fixed = len(exercise.fixed())
        n_random = exercise.n_random if exercise.random else 0
        print(f"✔ {exercise_id} passed: {n_fixed} fixed + {n_random} random cases.")
        return
    case, expected, got, problem = failure
    progress.record_attempt(exercise_id, passed=False)
    err = CheckFailed(exercise, case, _shown(expected), _shown(got), problem, seed)
    _log(exercise_id, "fail", str(err))
    raise err


def hint(exercise_id: str) -> None:
    """Print the next hint on the exercise's ladder (the last one again once all are shown)."""
    exercise = get_exercise(exercise_id)
    if not exercise.hints:
        print(f"{exercise_id} has no hints.")
        return
    shown = progress.hint_level(exercise_id)
    level = min(shown + 1, len(exercise.hints))
    progress.record_hint(exercise_id, level)
    tail = "" if level < len(exercise.hints) else " (last hint)"
    print(f"Hint {level}/{len(exercise.hints)} for {exercise_id}{tail}: {exercise.hints[level - 1]}")
