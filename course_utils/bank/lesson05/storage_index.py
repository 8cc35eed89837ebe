"""Where does t[index] live in the storage?"""

from __future__ import annotations

import random

import torch

from course_utils.bank.lesson05._shared import Shape, random_layout
from course_utils.bank.lesson05.contiguous_strides import contiguous_strides
from course_utils.core.exercise import Case, Exercise, patched


def storage_index(index: Shape, shape: Shape, strides: Shape, offset: int) -> int:
    """Reference: where element ``t[index]`` sits in the storage."""
    return offset + sum(i * s for i, s in zip(index, strides, strict=True))


def _as_strided(index: Shape, shape: Shape, strides: Shape, offset: int) -> int:
    """An alternative answer: a view over arange holds its own storage positions."""
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides, strict=False))
    return torch.arange(offset + span).as_strided(shape, strides, offset)[index].item()


def _walk(index: Shape, shape: Shape, strides: Shape, offset: int) -> int:
    """An alternative answer: start at the offset and step each dimension's stride i times."""
    position = offset
    for d in range(len(index)):
        position += index[d] * strides[d]
    return position


def _fixed() -> list[Case]:
    return [
        Case("t = arange(12).view(3, 4); t[1, 2]", ((1, 2), (3, 4), (4, 1), 0)),
        Case("t.T; element [2, 1]", ((2, 1), (4, 3), (1, 4), 0)),
        Case("t[1:, 1:]; element [0, 0] (offset 5)", ((0, 0), (2, 3), (4, 1), 5)),
        Case("t[:, 1::2]; element [2, 1] (offset 1)", ((2, 1), (3, 2), (4, 2), 1)),
        Case("t[2]; element [3] (offset 8)", ((3,), (4,), (1,), 8)),
        Case("expanded (4, 1) -> (4, 3); element [2, 2]", ((2, 2), (4, 3), (1, 0), 0)),
        Case("a scalar at offset 7", ((), (), (), 7)),
    ]


def _random(rng: random.Random) -> Case:
    shape, strides, offset, how = random_layout(rng)
    index = tuple(rng.randrange(size) for size in shape)
    return Case(f"x = torch.empty{how}; element {list(index)} (offset {offset})",
                (index, shape, strides, offset))


EXERCISE = Exercise(
    id="05.storage_index",
    title="Where does t[index] live in the storage?",
    reference=storage_index,
    fixed=_fixed,
    random=_random,
    hints=(
        "Each index moves you stride[d] elements along the storage, starting at the offset.",
        "Use the strides you are given, not the ones a new tensor of this shape would have: "
        "views (transpose, slices, expand) have their own.",
        "offset + sum(i * s for i, s in zip(index, strides))",
    ),
    mutants={
        "ignores the offset": patched(storage_index, ("offset + ", "")),
        "uses the shape's contiguous strides": lambda index, shape, strides, offset:
            storage_index(index, shape, contiguous_strides(shape), offset),
        "pairs the index with reversed strides": lambda index, shape, strides, offset:
            storage_index(index, shape, tuple(reversed(strides)), offset),
    },
    equivalent={
        "swapped arguments: `zip(index, strides, strict=True)` -> `zip(strides, index, strict=True)`":
            "i * s == s * i: the sum of products does not depend on the pairs' order",
        "keyword dropped: `zip(index, strides, strict=True)` -> `zip(index, strides)`":
            "index and strides always have the same length: strict never raises",
        "constant: `True` -> `False`": "zip(..., strict=False): index and strides always have the "
                                       "same length, so strict never raises",
    },
    alternatives={
        "asks PyTorch: as_strided over arange": _as_strided,
        "from the rule: a running position, one dimension at a time": _walk,
    },
)
