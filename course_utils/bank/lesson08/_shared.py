"""What the four capstone checkpoints share: the reference (the fixed script), the labs they run
in, a judge per checkpoint, and the wrong scripts that more than one checkpoint rejects."""

from __future__ import annotations

import functools
import random
from collections.abc import Callable

from course_utils.core.exercise import Case, Outcome, patched
from course_utils.labs.capstone import Lab, fixed, haunted


@functools.lru_cache(maxsize=64)
def _fixed_report(settings: tuple) -> dict:
    return fixed(Lab(**dict(settings)))


def train(lab: Lab) -> dict:
    """Reference: the fixed script (deterministic for a lab, so its report is computed once)."""
    return dict(_fixed_report(tuple(lab.settings().items())))


def _lab_case(seed: int) -> Case:
    return Case(f"affected Mac (emulated), data seed {seed}, {Lab().steps} steps", (Lab(seed=seed),))


def _fixed_cases() -> list[Case]:
    return [_lab_case(0), _lab_case(1)]


def _random_case(rng: random.Random) -> Case:
    return _lab_case(rng.randrange(2, 100_000))


def judge_with(check: Callable) -> Callable[[Outcome, Outcome, Case], str | None]:
    """A judge that asks a checkpoint of ``course_utils.labs.capstone`` about the answer's report."""
    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return check(got.value, case.args[0])

    return judge


# Every checkpoint reads the report lab.run() measures inside the answer's process; from another
# process that report is only a claim, and a made-up dict would pass.
_IN_PROCESS = ("its checks read what lab.run(...) measured inside the answer's own process (the loss, "
               "frozen parameters, fallbacks, syncs); a submission could return a made-up report")
COMMON = {"reference": train, "fixed": _fixed_cases, "random": _random_case, "n_random": 2,
          "in_process_only": _IN_PROCESS}


def broken(*edits: tuple[str, str]) -> Callable[[Lab], dict]:
    """The fixed script (``labs.capstone.fixed``) with a bug put back: each ``(old, new)`` pair
    replaces a piece of its source (``core.exercise.patched``)."""
    return patched(fixed, *edits)


HAUNTED = {"the haunted script as given": haunted}
CLONE_TIE = {"keeps the .T.clone() tie": broken(("weight.T.contiguous()", "weight.T.clone()"))}
