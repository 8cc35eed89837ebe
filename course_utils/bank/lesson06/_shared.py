"""What several of lesson 06's exercises use: the judge of an answer that runs code on machines,
which must leave no machine's emulation switched on behind it."""

from __future__ import annotations

from collections.abc import Callable

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Outcome
from course_utils.core.inputs import grad_mode_left_off
from course_utils.toolkit.emulate import inplace


def emulation_left_on() -> str | None:
    """Whether the answer left an emulated bug switched on (``machine.__enter__()`` never exited):
    says so, and switches it off so the next case runs on a clean process."""
    if inplace.active() is None:
        return None
    while inplace.active() is not None:
        inplace.active().__exit__(None, None, None)
    return ("a machine's emulated bug was left switched on after your function returned: enter "
            "machines with `with machine:`, which switches them off again")


def machine_judge(extra: Callable[[Outcome, Outcome, Case], str | None] | None = None):
    """The value must match; nothing may be left switched on (an emulation, gradients off);
    then ``extra``, if given."""

    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        left = emulation_left_on() or grad_mode_left_off()
        if left:
            return left
        if got.error is not None:
            if expected.error is not None and isinstance(got.error, type(expected.error)):
                return None
            return f"raised {type(got.error).__name__}: {got.error}"
        return mismatch(expected.value, got.value) or (extra(expected, got, case) if extra else None)

    return judge
