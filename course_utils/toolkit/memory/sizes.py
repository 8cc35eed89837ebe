"""What a tensor costs in bytes, and how to print it (lesson 02)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

MiB = 2**20


def tensor_bytes(shape: Sequence[int], dtype: torch.dtype) -> int:
    """Bytes of a contiguous tensor: elements times bytes per element (lesson 02)."""
    return math.prod(shape) * dtype.itemsize


def storage_bytes(t: torch.Tensor) -> int:
    """Bytes a tensor keeps alive: its whole storage, which a view (a slice, ``.T``) shares."""
    return t.untyped_storage().nbytes()


def mib(n: int | None) -> str:
    """``n`` bytes as MiB with two decimals ("n/a" for None)."""
    return "n/a" if n is None else f"{n / MiB:.2f} MiB"
