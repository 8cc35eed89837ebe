"""The strides PyTorch gives a new tensor of a shape."""

from __future__ import annotations

import math
import random

import torch

from course_utils.bank.lesson05._shared import Shape
from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched


def contiguous_strides(shape: Shape) -> Shape:
    """Reference: the strides PyTorch gives a new (contiguous) tensor of this shape."""
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)  # a size-0 dimension must not zero the strides before it
    return tuple(reversed(strides))


def _front_to_back(shape: Shape) -> list[int]:
    """An alternative answer: each stride is the product of the sizes after it, as a list."""
    out = []
    for d in range(len(shape)):
        step = 1
        for size in shape[d + 1:]:
            step *= size if size > 0 else 1
        out.append(step)
    return out


def _fixed() -> list[Case]:
    shapes = [(3, 4), (2, 3, 4), (5,), (), (4, 1, 3), (1, 1), (2, 0, 3), (0,), (32, 3, 224, 224)]
    return [Case(f"shape {s}", (s,)) for s in shapes]


def _random(rng: random.Random) -> Case:
    shape = tuple(rng.choice((0, 1, 1, 2, 3, 4, 5, 7)) for _ in range(rng.randint(0, 5)))
    return Case(f"shape {shape}", (shape,))


def _tuple_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Compare sequences of ints, accepting a list where a tuple is expected."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    value = tuple(got.value) if isinstance(got.value, list) else got.value
    return mismatch(expected.value, value)


EXERCISE = Exercise(
    id="05.contiguous_strides",
    title="The strides of a new tensor",
    reference=contiguous_strides,
    fixed=_fixed,
    random=_random,
    judge=_tuple_judge,
    hints=(
        "The last dimension has stride 1; each dimension's stride is the next one's stride "
        "times the next one's size.",
        "Walk the shape from the end: keep a running product, starting at 1.",
        "PyTorch multiplies by max(size, 1): a size-0 dimension must not zero the strides "
        "before it (compare torch.empty(2, 0, 3).stride()). A scalar shape () has strides ().",
    ),
    mutants={
        "column-major (Fortran) order": patched(
            contiguous_strides, ("reversed(shape)", "shape"), ("tuple(reversed(strides))", "tuple(strides)")),
        "multiplies by a size 0": patched(contiguous_strides, ("max(size, 1)", "size")),
        "starts from the last size instead of 1": patched(contiguous_strides, (
            "strides.append(step)\n        step *= max(size, 1)",
            "step *= size\n        strides.append(step)")),
        "assumes at least one dimension": lambda shape: contiguous_strides(shape) or (1,),
    },
    alternatives={
        "asks PyTorch": lambda shape: torch.empty(shape).stride(),
        "from the rule: the product of the (at least 1) sizes after each dimension":
            lambda shape: tuple(math.prod(max(n, 1) for n in shape[i + 1:]) for i in range(len(shape))),
        "a list, built front to back": _front_to_back,
    },
)
