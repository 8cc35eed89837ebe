"""Unit-length rows without dividing by zero."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import gen, value_judge
from course_utils.core.exercise import Case, Exercise


def unit_rows(x):
    """Reference: each row divided by max(its L2 norm, 1e-12); zero rows stay zero."""
    return F.normalize(x, dim=-1)


def _case(label: str, seed: int, rows: int, cols: int, zero: int | None = None,
          tiny: int | None = None, transposed: bool = False, tiny_scale: float = 1e-7) -> Case:
    g = gen(seed)
    x = torch.randn(cols, rows, generator=g).t() if transposed else torch.randn(rows, cols, generator=g)
    x = x.clone() if not transposed else x
    if zero is not None:
        x[zero] = 0.0
    if tiny is not None:
        x[tiny] = x[tiny] * tiny_scale
    return Case(label, (x,))


def _fixed() -> list[Case]:
    return [
        _case("4 rows, row 2 all zeros", 91, 4, 8, zero=2),
        _case("a row with a tiny norm (about 1e-7)", 92, 3, 5, tiny=1),
        _case("a transposed (non-contiguous) input with a zero row", 93, 5, 3, zero=0, transposed=True),
        _case("one row, one column", 94, 1, 1),
        _case("a row with a norm of about 1e-15, below 1e-12: divided by 1e-12, not a unit row", 95, 3, 4,
              tiny=2, tiny_scale=1e-15),
        _case("no rows: shape (0, 4)", 96, 0, 4),
        _case("rows of length 0: shape (3, 0)", 97, 3, 0),
    ]


def _random(rng: random.Random) -> Case:
    rows, cols = rng.randint(1, 6), rng.randint(1, 6)
    zero = rng.randrange(rows) if rng.random() < 0.5 else None
    return _case(f"{rows}x{cols}, zero row {zero}", rng.randint(98, 10**6), rows, cols, zero,
                 transposed=rng.random() < 0.3)


def _clamped(x):
    """An alternative answer: the norm clamped from below."""
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _maximum(x):
    """An alternative answer: vector_norm of each row and torch.maximum."""
    norms = torch.linalg.vector_norm(x, dim=1, keepdim=True)
    return x / torch.maximum(norms, torch.full_like(norms, 1e-12))


EXERCISE = Exercise(
    id="07.unit_rows",
    title="Unit-length rows without dividing by zero",
    reference=unit_rows,
    fixed=_fixed,
    random=_random,
    judge=value_judge("x"),
    hints=("A zero row has norm 0, and 0 / 0 is NaN.",
           "Divide by max(norm, 1e-12), as F.normalize does; adding 1e-8 distorts tiny rows.",
           "Norm of each row: x.norm(dim=-1, keepdim=True)."),
    mutants={
        "x / norm (NaN for a zero row)": lambda x: x / x.norm(dim=-1, keepdim=True),
        "x / (norm + 1e-8): no NaN, but tiny rows shrink":
            lambda x: x / (x.norm(dim=-1, keepdim=True) + 1e-8),
        "divides by the norm of the whole tensor": lambda x: x / x.norm().clamp_min(1e-12),
        "x / norm where the norm is not 0 (tiny rows become unit rows)": lambda x: torch.where(
            x.norm(dim=-1, keepdim=True) > 0, x / x.norm(dim=-1, keepdim=True), x),
    },
    equivalent={
        "contiguous added: `return F.normalize(x, dim=-1)` -> `return F.normalize(x, dim=-1).contiguous()`":
            "F.normalize returns a new contiguous tensor: .contiguous() returns it unchanged",
        "sign: `-1` -> `1`": "x is 2-D (the task says so): dim=1 is dim=-1",
    },
    alternatives={
        "the norm clamped from below": _clamped,
        "vector_norm and torch.maximum": _maximum,
    },
)
