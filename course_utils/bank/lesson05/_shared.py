"""What several of lesson 05's exercises use: layouts made by real view operations, and the fixed
layouts that ``is_contiguous`` and ``view_or_copy`` are asked about."""

from __future__ import annotations

import random

import torch

Shape = tuple[int, ...]

LAYOUTS = [
    ("a new (3, 4) tensor", (3, 4), (4, 1)),
    ("(3, 4) transposed", (4, 3), (1, 4)),
    ("(3, 4) with [:, ::2]", (3, 2), (4, 2)),
    ("(3, 4) with [:, :2]", (3, 2), (4, 1)),
    ("(3, 4) with [:2]", (2, 4), (4, 1)),
    ("size-1 dim with an odd stride", (3, 1, 4), (4, 99, 1)),
    ("(4, 1) expanded to (4, 3)", (4, 3), (1, 0)),
    ("(1, 4) with a stride-0 size-1 dim", (1, 4), (0, 1)),
    ("empty tensor with odd strides", (0, 3), (1, 5)),
    ("a scalar", (), ()),
    ("(2, 3, 4) permuted (2, 0, 1)", (4, 2, 3), (1, 12, 4)),
    ("(6,) with [::2]", (3,), (2,)),
]


def random_layout(rng: random.Random, min_size: int = 1) -> tuple[Shape, Shape, int, str]:
    """(shape, strides, offset, how) of a view made by 1-3 random view ops on a fresh tensor."""
    base = torch.empty([rng.randint(min_size, 5) for _ in range(rng.randint(2, 4))])
    t, how = base, []
    for _ in range(rng.randint(1, 3)):
        t, step = _random_view(rng, t)
        how.append(step)
    return tuple(t.shape), tuple(t.stride()), t.storage_offset(), f"{tuple(base.shape)}{''.join(how)}"


def _random_view(rng: random.Random, t: torch.Tensor) -> tuple[torch.Tensor, str]:
    dim = rng.randrange(t.dim())
    kind = rng.choice(("transpose", "permute", "narrow", "step", "unsqueeze", "expand"))
    if kind == "transpose" and t.dim() >= 2:
        a, b = rng.sample(range(t.dim()), 2)
        return t.transpose(a, b), f".transpose({a}, {b})"
    if kind == "permute":
        order = rng.sample(range(t.dim()), t.dim())
        return t.permute(order), f".permute{tuple(order)}"
    if kind == "narrow" and t.shape[dim] >= 1:
        start = rng.randint(0, max(t.shape[dim] - 1, 0))
        length = rng.randint(0 if t.shape[dim] == 0 else 1, t.shape[dim] - start)
        return t.narrow(dim, start, length), f".narrow({dim}, {start}, {length})"
    if kind == "step":
        step = rng.randint(2, 3)
        index = (slice(None),) * dim + (slice(None, None, step),)
        return t[index], f"[{':, ' * dim}::{step}]"
    if kind == "unsqueeze" or t.dim() >= 4:
        return t.unsqueeze(dim), f".unsqueeze({dim})"
    sizes = list(t.shape)
    sizes.insert(dim, rng.randint(2, 3))
    return t.unsqueeze(dim).expand(sizes), f".unsqueeze({dim}).expand{tuple(sizes)}"
