"""Small forward functions whose saved-for-backward tensors differ (lesson 02, 02.saved_bytes).

They live outside the exercise bank so ``course grade`` can send them to a submission's process
(which may not load the bank). The comment on each says what autograd saves for its backward.
"""

from __future__ import annotations

import torch
from torch import nn

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
