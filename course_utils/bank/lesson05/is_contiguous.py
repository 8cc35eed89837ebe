"""is_contiguous(shape, strides), PyTorch's rule."""

from __future__ import annotations

import itertools
import math
import random

import torch

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


def _from_new_strides(shape: Shape, strides: Shape) -> bool:
    """An alternative answer: compare with a new tensor's strides, except where the size is 1."""
    if 0 in shape:
        return True
    return all(have == want for n, have, want in zip(shape, strides, contiguous_strides(shape), strict=False)
               if n != 1)


def _walks_in_order(shape: Shape, strides: Shape) -> bool:
    """An alternative answer, from the definition: visiting the elements in row-major order
    reaches consecutive storage positions."""
    positions = [sum(i * s for i, s in zip(index, strides, strict=False))
                 for index in itertools.product(*(range(n) for n in shape))]
    return all(b - a == 1 for a, b in zip(positions, positions[1:], strict=False))


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
    equivalent={
        "keyword dropped: `zip(shape, strides, strict=True)` -> `zip(shape, strides)`":
            "shape and strides always have the same length: strict never raises",
        "constant: `True` -> `False` #3": "zip(..., strict=False): shape and strides always have the "
                                          "same length, so strict never raises",
    },
    alternatives={
        "asks PyTorch": lambda shape, strides: torch.empty_strided(shape, strides).is_contiguous(),
        "from the rule: the strides of a new tensor, size-1 dimensions skipped": _from_new_strides,
        "from the definition: a row-major walk reaches consecutive positions": _walks_in_order,
    },
)
