"""Case inputs of lesson 02: forwards whose saved-for-backward bytes differ, and a step that runs
out of memory."""

from __future__ import annotations

import torch
from torch import nn

# --- 02: forwards whose saved-for-backward tensors differ (the comment says what is saved) -----

_W = torch.randn(5, 6, generator=torch.Generator().manual_seed(2))
_B = torch.zeros(5)


def square(x):
    return x * x  # x, twice


def sin_then_cos(x):
    return x.sin().cos()  # x and sin(x)


def total(x):
    return x.sum()  # nothing


def gram(x):
    return x @ x.t()  # x and a view of x


def slice_sin(x):
    return x[:, :2].sin()  # a view of all of x


def linear_then_tanh(x):
    return nn.functional.linear(x[:, :6], _W, _B).tanh()


def softmax_last(x):
    return x.softmax(dim=-1)


def sigmoid_times_x(x):
    return x.sigmoid() * x


SAVING_EXAMPLES = {
    "exp": torch.exp,  # its result
    "x*x": square,
    "sin then cos": sin_then_cos,
    "relu": torch.relu,  # its result
    "sum": total,
    "x @ x.T": gram,
    "a slice's sin": slice_sin,
    "linear then tanh": linear_then_tanh,
    "softmax": softmax_last,
    "sigmoid times x": sigmoid_times_x,
}


# --- 02: a step that runs out of memory ---------------------------------------------------------


class SimulatedOOMStep:
    """A training step that runs out of memory (emulated) above ``fits`` rows, on any device.

    ``step(size)`` returns a short string when ``size <= fits``; above it raises what the backend
    would: ``kind="cuda"`` a ``torch.OutOfMemoryError``, ``kind="mps"`` a ``RuntimeError`` worded as
    MPS words it (R27 in references.md). ``other`` is raised instead at every call, to check a retry helper
    lets other errors through. ``calls`` lists the sizes tried; more than 60 calls raise
    ``RecursionError`` so a retry loop that never stops ends.
    """

    def __init__(self, fits: int, kind: str = "cuda", other: Exception | None = None):
        if kind not in ("cuda", "mps"):
            raise ValueError(f"kind must be 'cuda' or 'mps', got {kind!r}")
        self.fits, self.kind, self.other, self.calls = fits, kind, other, []

    def __call__(self, size: int) -> str:
        self.calls.append(size)
        if len(self.calls) > 60:
            raise RecursionError("step called more than 60 times: the retry never stops")
        if self.other is not None:
            raise self.other
        if size > self.fits:
            if self.kind == "cuda":
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate (emulated)")
            raise RuntimeError("MPS backend out of memory (emulated: MPS allocated, max allowed)")
        return f"trained on {size} rows"
