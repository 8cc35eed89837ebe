"""How many bytes does a batch take? Elements times bytes per element, for any shape and dtype."""

from __future__ import annotations

import functools
import math
import operator
import random

import numpy as np
import torch

from course_utils.core.exercise import Case, Exercise, patched

DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64,
          torch.int32, torch.int8, torch.uint8, torch.bool, torch.complex64)


def batch_bytes(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """Reference: elements times bytes per element."""
    return math.prod(shape) * dtype.itemsize


def _fixed() -> list[Case]:
    return [
        Case("lesson 01's batch (32, 128, 768) float32", ((32, 128, 768), torch.float32)),
        Case("the same batch in float16", ((32, 128, 768), torch.float16)),
        Case("a scalar shape ()", ((), torch.float32)),
        Case("an empty batch (0, 10)", ((0, 10), torch.float32)),
        Case("a bool mask (8, 8)", ((8, 8), torch.bool)),
        Case("an image batch (16, 3, 224, 224) uint8", ((16, 3, 224, 224), torch.uint8)),
        Case("a batch of 1: (1, 7) float64", ((1, 7), torch.float64)),
        Case("size-1 dimensions (1, 1, 1) int16", ((1, 1, 1), torch.int16)),
        Case("odd sizes (3, 5) complex128", ((3, 5), torch.complex128)),
        Case("one dimension (3,) bfloat16", ((3,), torch.bfloat16)),
    ]


def _random(rng: random.Random) -> Case:
    shape = tuple(rng.randint(0, 64) for _ in range(rng.randint(0, 4)))
    dtype = rng.choice(DTYPES)
    return Case(f"shape {shape} {dtype}", (shape, dtype))


def _ask_pytorch(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """An alternative answer: a tensor on the meta device (no memory) knows its own nbytes."""
    return torch.empty(shape, dtype=dtype, device="meta").nbytes


def _numpy_product(shape: tuple[int, ...], dtype: torch.dtype) -> int:
    """An alternative answer from the rule: NumPy's integer product (a NumPy integer) times the
    bits per element (finfo / iinfo; a complex number is two floats, a bool one byte) / 8."""
    if dtype == torch.bool:
        bits = 8
    elif dtype.is_complex:
        bits = 2 * torch.finfo(dtype).bits
    elif dtype.is_floating_point:
        bits = torch.finfo(dtype).bits
    else:
        bits = torch.iinfo(dtype).bits
    return np.prod(shape, dtype=np.int64) * (bits // 8)


EXERCISE = Exercise(
    id="01.batch_bytes",
    title="How many bytes does a batch take?",
    reference=batch_bytes,
    fixed=_fixed,
    random=_random,
    hints=(
        "Bytes = number of elements × bytes per element.",
        "math.prod(shape) counts elements (and gives 1 for a scalar shape ()).",
        "dtype.itemsize is the bytes per element: 4 for float32, 2 for float16, 1 for bool.",
    ),
    mutants={
        "assumes 4 bytes per element": patched(batch_bytes, ("dtype.itemsize", "4")),
        "forgets the element size": patched(batch_bytes, (" * dtype.itemsize", "")),
        "reduce without a start value": lambda shape, dtype: functools.reduce(
            operator.mul, shape) * dtype.itemsize,
        "adds dimensions instead of multiplying": patched(batch_bytes, ("math.prod(shape)", "sum(shape)")),
        "returns a float (bits / 8)": patched(batch_bytes, ("dtype.itemsize", "(dtype.itemsize * 8 / 8)")),
        "an off-by-one, as a float": lambda shape, dtype: float(math.prod(shape) * dtype.itemsize + 1),
        "NumPy's product without an integer dtype (1.0 for shape ())": lambda shape, dtype: (
            np.prod(shape) * dtype.itemsize),
    },
    alternatives={
        "a meta tensor's nbytes": _ask_pytorch,
        "NumPy's integer product times the element size": _numpy_product,
    },
)
