"""What tensors cost in bytes, and how to print it (lesson 02): the one place the course counts them.

Two questions, two names: ``tensor_bytes(shape, dtype)`` is what a *new contiguous* tensor of that
shape takes; ``storage_bytes(t)`` is what an *existing* tensor keeps alive (its whole storage, which
views share), and ``distinct_storage_bytes(tensors)`` adds that up with each storage counted once.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

import torch

MiB = 2**20


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    """Bytes of a contiguous tensor: elements times bytes per element (lesson 02)."""
    return math.prod(shape) * dtype.itemsize


def storage_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor keeps alive: its whole storage, which a view (a slice, ``.T``) shares."""
    return t.untyped_storage().nbytes()


def storage_key(t: torch.Tensor) -> int:
    """What identifies ``t``'s storage: two views of one storage have the same key."""
    return t.untyped_storage().data_ptr()


def distinct_storage_bytes(tensors: Iterable[torch.Tensor], exclude: Iterable[torch.Tensor] = ()) -> int:
    """Bytes the ``tensors`` keep alive, each storage once, leaving out the storages of ``exclude``
    (e.g. the parameters, when they are counted elsewhere)."""
    skip = {storage_key(t) for t in exclude}
    return sum({storage_key(t): storage_bytes(t) for t in tensors if storage_key(t) not in skip}.values())


def mib(n: int | None) -> str:
    """``n`` bytes as MiB with two decimals ("n/a" for None)."""
    return "n/a" if n is None else f"{n / MiB:.2f} MiB"
