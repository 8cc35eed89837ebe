"""is_contiguous(shape, strides), PyTorch's rule."""

from __future__ import annotations

import math
import random

from course_utils.bank.lesson05._shared import LAYOUTS, Shape, random_layout
from course_utils.bank.lesson05.contiguous_strides import contiguous_strides
from course_utils.core.exercise import Case, Exercise, patched


def is_contiguous(shape: Shape, strides: Shape) -> bool:
    """Reference: PyTorch's rule. Empty tensors are contiguous; size-1 dimensions are skipped;
    every other dimension's stride must equal the product of the sizes after it."""
    if math.prod(shape) == 0:
        return True
    expected = 1
    for size, stride in reversed(list(zip(shape, strides, strict=True))):
        if size == 1:
            continue
        if stride != expected:
            return False
        expected *= size
    return True


def _fixed() -> list[Case]:
    return [Case(f"{label}: shape {shape} strides {strides}", (shape, strides))
            for label, shape, strides in LAYOUTS]


def _random(rng: random.Random) -> Case:
    shape, strides, _, how = random_layout(rng, min_size=0)
    return Case(f"x = torch.empty{how}: shape {shape} strides {strides}", (shape, strides))


EXERCISE = Exercise(
    id="05.is_contiguous",
    title="is_contiguous(shape, strides), PyTorch's rule",
    reference=is_contiguous,
    fixed=_fixed,
    random=_random,
    hints=(
        "Contiguous means: the strides are those of a new tensor of this shape, walked from "
        "the last dimension (expected stride 1, then times each size).",
        "Dimensions of size 1 are never stepped over, so their stride does not matter: skip them.",
        "A tensor with no elements is contiguous whatever its strides.",
    ),
    mutants={
        "does not skip size-1 dimensions":
            lambda shape, strides: tuple(strides) == contiguous_strides(shape),
        "forgets empty tensors": patched(is_contiguous, ("math.prod(shape) == 0", "False")),
        "only checks that strides decrease":
            lambda shape, strides: list(strides) == sorted(strides, reverse=True),
        "only checks the last stride is 1": lambda shape, strides: not strides or strides[-1] == 1,
    },
)
