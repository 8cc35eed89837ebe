"""``check()`` and ``hint()``: instant, exact feedback inside a notebook (lesson 00).

``check(exercise_id, answer)`` runs the exercise's fixed and seeded random cases against its
reference. It prints one pass line and records progress, or raises ``CheckFailed`` naming the
case, the expected and the got value and the first hint. It never prints a failure and carries on.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import sys
from collections.abc import Callable

from course_utils.core import progress
from course_utils.core.compare import describe_value
from course_utils.core.exercise import Case, Exercise, Outcome, run
from course_utils.core.judgement import Failure, default_judge, first_failure
from course_utils.core.questions import plain

__all__ = ["CheckFailed", "NotSolved", "check", "default_judge", "find_failure", "hint"]


class CheckFailed(AssertionError):
    """A learner's answer disagreed with the reference on one case."""

    def __init__(self, exercise: Exercise, case: Case, expected: str, got: str, problem: str,
                 seed: int):
        self.exercise_id, self.case_label = exercise.id, case.label
        self.expected, self.got, self.problem, self.seed = expected, got, problem, seed
        self.first_hint = plain(exercise.hints[0]) if exercise.hints else ""
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


class NotSolved(NotImplementedError):
    """The answer is still the exercise's stub: one line, no traceback (the first thing every
    learner sees)."""

    def __init__(self, exercise_id: str):
        super().__init__(f"{exercise_id} is not solved yet: replace the NotImplementedError in its "
                         "cell with your answer, then run this check again.")

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def _shown(outcome: Outcome) -> str:
    return describe_value(outcome.error if outcome.error is not None else outcome.value)


def find_failure(exercise: Exercise, answer: Callable, seed: int) -> Failure | None:
    """Run every case (reference, then answer, case by case); the first failure, or None."""
    cases = exercise.cases(seed)
    return first_failure(exercise, cases, (run(exercise.reference, c) for c in cases),
                         (run(answer, c) for c in cases))


def check(exercise_id: str, answer: Callable, *, seed: int | None = None) -> None:
    """Grade ``answer`` against exercise ``exercise_id``; print a pass line or raise CheckFailed."""
    exercise = get_exercise(exercise_id)
    if not callable(answer):
        raise TypeError(f"check('{exercise_id}', answer): answer must be your function, "
                        f"got {type(answer).__name__}")
    seed = secrets.randbits(32) if seed is None else seed
    failure = find_failure(exercise, answer, seed)
    if failure is not None and failure.unsolved:
        raise NotSolved(exercise_id) from None
    key = answer_key(answer)
    if failure is None:
        progress.record_attempt(exercise_id, passed=True, answer_key=key, demo=exercise.demo)
        n_fixed = len(exercise.fixed())
        n_random = exercise.n_random if exercise.random else 0
        print(f"✔ {exercise_id} passed: {n_fixed} fixed + {n_random} random cases.")
        return
    progress.record_attempt(exercise_id, passed=False, answer_key=key, demo=exercise.demo)
    if exercise.hints:
        progress.record_hint(exercise_id, 1, demo=exercise.demo)  # the failure shows the first hint
    raise CheckFailed(exercise, failure.case, _shown(failure.expected), _shown(failure.got),
                      failure.problem, seed)


def _code_bytes(code) -> bytes:
    """A code object's bytecode, constants (nested code objects recursively, never their
    addresses or file names) and names."""
    consts = [_code_bytes(c) if hasattr(c, "co_code") else repr(c).encode() for c in code.co_consts]
    return b"\0".join([code.co_code, *consts, repr(code.co_names).encode()])


def answer_key(answer: Callable) -> str:
    """A fingerprint of the answer's code, stable across kernels: the same code checked again
    (Run All, a re-run cell) is not a new attempt."""
    code = getattr(answer, "__code__", None)
    if code is None:
        return f"{type(answer).__module__}.{type(answer).__qualname__}"
    return hashlib.sha256(_code_bytes(code)).hexdigest()[:16]


def _cell_id() -> str | None:
    """The notebook cell being run, where the front end says (JupyterLab does; nbclient does not)."""
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        return kernel.get_parent()["metadata"].get("cellId") if kernel is not None else None
    except Exception:  # noqa: BLE001 - no kernel, an old one, or no metadata: use the source
        return None


def _call_site() -> str | None:
    """Where ``hint()`` was called: the notebook cell (its id, or the file IPython names after a
    hash of the cell's source, so the same cell run again is the same site) and the line."""
    frame = sys._getframe(2)
    if frame is None:
        return None
    cell = _cell_id() or os.path.basename(frame.f_code.co_filename)
    return f"{cell}:{frame.f_lineno}"


def hint(exercise_id: str) -> None:
    """Print the next hint on the exercise's ladder (the last one again once all are shown)."""
    exercise = get_exercise(exercise_id)
    if not exercise.hints:
        print(f"{exercise_id} has no hints.")
        return
    level = progress.next_hint(exercise_id, _call_site(), len(exercise.hints), demo=exercise.demo)
    tail = " (last hint)" if level == len(exercise.hints) else " (the next one: hint() in a new cell)"
    print(f"Hint {level}/{len(exercise.hints)} for {exercise_id}{tail}: {plain(exercise.hints[level - 1])}")
