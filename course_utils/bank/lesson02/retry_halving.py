"""Retry on out-of-memory by halving the batch, tested against simulated OOMs
(``case_inputs.SimulatedOOMStep``): other errors pass through, min_batch is the floor."""

from __future__ import annotations

import random

import torch

from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.labs.case_inputs import SimulatedOOMStep
from course_utils.toolkit.memory.oom import is_out_of_memory


def retry_halving(step, batch_size: int, min_batch: int) -> tuple:
    """Reference: call step(size), halving on out-of-memory errors, never below min_batch."""
    size = batch_size
    while True:
        try:
            return step(size), size
        except Exception as err:
            if not is_out_of_memory(err):
                raise
            if size <= min_batch:
                raise RuntimeError(f"out of memory even at min_batch={min_batch}") from err
        size = max(min_batch, size // 2)


def _fixed() -> list[Case]:
    return [
        Case("fits at once", (SimulatedOOMStep(64), 64, 1)),
        Case("cuda-style OOM until 16 rows", (SimulatedOOMStep(16), 64, 1)),
        Case("mps-style RuntimeError OOM until 8 rows", (SimulatedOOMStep(8, "mps"), 64, 1)),
        Case("halving 100 -> 50 -> 25 -> 12", (SimulatedOOMStep(12), 100, 1)),
        Case("min_batch 20 stops halving at 20", (SimulatedOOMStep(20), 100, 20)),
        Case("min_batch 4 still runs out of memory", (SimulatedOOMStep(2), 64, 4)),
        Case("nothing fits, min_batch 1", (SimulatedOOMStep(0, "mps"), 32, 1)),
        Case("a ValueError must pass through untouched",
             (SimulatedOOMStep(64, other=ValueError("labels out of range")), 64, 1)),
        Case("a non-OOM RuntimeError must pass through",
             (SimulatedOOMStep(64, other=RuntimeError("mat1 and mat2 shapes cannot be multiplied")), 64, 1)),
        Case("a batch of 1 that fits", (SimulatedOOMStep(1), 1, 1)),
        Case("batch_size is min_batch and it runs out of memory", (SimulatedOOMStep(4, "mps"), 8, 8)),
        Case("odd sizes: 99 -> 49 -> 24 -> 12 -> 6", (SimulatedOOMStep(7), 99, 1)),
        Case("the halving would undershoot min_batch 20: 64 -> 32 -> 20", (SimulatedOOMStep(25), 64, 20)),
    ]


def _random(rng: random.Random) -> Case:
    batch, min_batch = rng.randint(1, 256), rng.choice((1, 1, 2, 4, 8))
    fits, kind = rng.randint(0, 300), rng.choice(("cuda", "mps"))
    return Case(f"batch {batch}, {kind} OOM above {fits} rows, min_batch {min_batch}",
                (SimulatedOOMStep(fits, kind), batch, min_batch))


def _sizes_tried(expected: Outcome, got: Outcome) -> str | None:
    """The step records the sizes it was called with (in check()'s process): they must be the
    reference's, batch_size then halvings, never below min_batch."""
    if got.inputs is None or expected.inputs is None:
        return None
    want, have = expected.inputs[0][0].calls, got.inputs[0][0].calls
    if have != want:
        return f"called step with sizes {have[:12]}; the halving from batch_size tries {want}"
    return None


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    problem = _value_or_error(expected, got, case)
    return problem or _sizes_tried(expected, got)


def _value_or_error(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if expected.error is None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return None if got.value == expected.value else f"returned {got.value!r}, expected {expected.value!r}"
    min_batch = case.args[2]
    if case.args[0].other is not None:  # another error: it must come out as it went in
        other = case.args[0].other
        same_kind = isinstance(got.error, type(other)) and type(got.error).__name__ == type(other).__name__
        if not same_kind or str(got.error) != str(other):
            shown = f"{type(got.error).__name__}: {got.error}" if got.error else f"returned {got.value!r}"
            return f"the step's {type(other).__name__}({str(other)!r}) must propagate untouched; {shown}"
        return None
    if not isinstance(got.error, RuntimeError) or isinstance(got.error, RecursionError):
        shown = f"{type(got.error).__name__}: {got.error}" if got.error else f"returned {got.value!r}"
        return f"expected a RuntimeError saying even min_batch={min_batch} runs out of memory; {shown}"
    if str(min_batch) not in str(got.error):
        return f"the final error should name min_batch ({min_batch}); got: {got.error}"
    return None


def _retry_once(step, batch_size, min_batch):
    try:  # the circulating idea: one more try, then give up
        return step(batch_size), batch_size
    except RuntimeError:
        return step(max(min_batch, batch_size // 2)), max(min_batch, batch_size // 2)


def twice_per_size(step, batch_size: int, min_batch: int) -> tuple:
    """A wrong answer only check() can see (the step's record of the sizes tried; tests/test_bank):
    "an OOM may be transient", so every size is tried twice before halving."""
    size = batch_size
    while True:
        for _attempt in range(2):
            try:
                return step(size), size
            except Exception as err:
                if not is_out_of_memory(err):
                    raise
                last = err
        if size <= min_batch:
            raise RuntimeError(f"out of memory even at min_batch={min_batch}") from last
        size = max(min_batch, size // 2)


def _recursive(step, batch_size: int, min_batch: int) -> tuple:
    """An alternative answer: recursion, the out-of-memory test written from the rule."""
    try:
        return step(batch_size), batch_size
    except RuntimeError as err:  # torch.OutOfMemoryError is a RuntimeError too
        if not (isinstance(err, torch.OutOfMemoryError) or "out of memory" in str(err)):
            raise
        if batch_size <= min_batch:
            raise RuntimeError(f"min_batch={min_batch} still does not fit") from err
    return _recursive(step, max(min_batch, batch_size // 2), min_batch)


def _planned_sizes(step, batch_size: int, min_batch: int) -> tuple:
    """An alternative answer: the sizes to try, listed first; the last error re-raised at the end."""
    sizes = [batch_size]
    while sizes[-1] > min_batch:
        sizes.append(max(min_batch, sizes[-1] // 2))
    last = None
    for size in sizes:
        try:
            return step(size), size
        except Exception as err:
            if not is_out_of_memory(err):
                raise
            last = err
    raise RuntimeError(f"out of memory at every size down to min_batch={min_batch}") from last


EXERCISE = Exercise(
    id="02.retry_halving",
    title="Retry on out-of-memory by halving the batch",
    reference=retry_halving,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "A loop around the call, not a context manager: try step(size); on an out-of-memory "
        "error set size = max(min_batch, size // 2) and go round again.",
        "Out of memory is torch.OutOfMemoryError or, on MPS, a RuntimeError whose message says "
        "'out of memory' (R27 in references.md). Re-raise anything else with a bare `raise`.",
        "When the failing size is already min_batch, raise RuntimeError(f'... min_batch={min_batch}') "
        "from the OOM instead of looping or returning.",
    ),
    mutants={
        "catches every exception": patched(retry_halving, (
            "except Exception as err:\n            if not is_out_of_memory(err):\n                raise\n",
            "except Exception as err:\n")),
        "catches only torch.OutOfMemoryError (misses MPS's RuntimeError)": patched(retry_halving, (
            "is_out_of_memory(err)", "isinstance(err, torch.OutOfMemoryError)")),
        "ignores min_batch": lambda step, batch_size, min_batch: retry_halving(step, batch_size, 1),
        "retries once, then gives up": _retry_once,
        "swallows the final error": patched(retry_halving, (
            'raise RuntimeError(f"out of memory even at min_batch={min_batch}") from err',
            "return None, min_batch")),
        "tries the same size again after halving to min_batch": patched(retry_halving, (
            "if size <= min_batch:", "if size < min_batch:")),
        "halves before the first try": patched(retry_halving, ("size = batch_size\n",
                                                               "size = max(min_batch, batch_size // 2)\n")),
    },
    alternatives={
        "recursion, the OOM test written from the rule": _recursive,
        "the sizes to try listed first": _planned_sizes,
    },
)
