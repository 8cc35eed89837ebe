"""The bill of one training step, part by part, against its measured peak (lesson 02).

Weights, gradients, optimizer state (``optimizer_state_bytes``), the activations autograd really
saves (``saved.SavedTensors``), backward's working space and the batch; the sum agrees with the
peak ``tracking()`` measures within ``TOLERANCE``. Sizes are counted by ``sizes``.

``TinyIssueClassifier`` is the lesson's model: the running (batch, tokens, features) example
shrunk to run in milliseconds, with one self-attention block so sequence length matters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from torch import nn

from course_utils.toolkit.memory.pictures import plot_breakdowns
from course_utils.toolkit.memory.saved import SavedTensors
from course_utils.toolkit.memory.sizes import MiB, distinct_storage_bytes
from course_utils.toolkit.memory.tracking import tracking

TOLERANCE = 0.20  # training_step_breakdown: |measured peak / estimate - 1| stays within this
# (checked in tests/test_memory.py on the lesson's model from 4 to 1024 tokens, five optimizers)


class TinyIssueClassifier(nn.Module):
    """Lesson 02's model: (batch, tokens, features) -> 3 logits, with one self-attention block.

    The attention scores are (batch, tokens, tokens): the one activation that grows with the
    square of the sequence length.
    """

    def __init__(self, features: int = 64, hidden: int = 128, classes: int = 3):
        super().__init__()
        self.embed = nn.Linear(features, hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.mlp = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        h = h + scores.softmax(dim=-1) @ v
        h = h + self.mlp(h)
        return self.head(h.mean(dim=1))


# --- optimizer state ----------------------------------------------------------------------------


def _trainable(params: Sequence[torch.Tensor]) -> list[torch.Tensor]:
    return [p for p in params if p.requires_grad]


def _scalar_bytes() -> int:
    """Adam's per-tensor step counter is a float32 scalar (float64 when that is the default)."""
    return 8 if torch.get_default_dtype() == torch.float64 else 4


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> tuple[int, str]:
    """Bytes of state ``optimizer`` keeps after its first step, and the rule used (lesson 02).

    SGD: none; SGD with momentum: one buffer per trainable parameter; Adam/AdamW: two moments
    (three with amsgrad) plus a scalar step counter per parameter. Raises TypeError for others.
    """
    if isinstance(optimizer, torch.optim.SGD):
        total = sum(p.nbytes for g in optimizer.param_groups if g["momentum"] != 0
                    for p in _trainable(g["params"]))
        momentum = any(g["momentum"] != 0 for g in optimizer.param_groups)
        return total, "1 momentum buffer per weight" if momentum else "none (plain SGD)"
    if isinstance(optimizer, torch.optim.Adam):  # AdamW is a subclass
        total = 0
        for g in optimizer.param_groups:
            moments = 3 if g["amsgrad"] else 2
            total += sum(moments * p.nbytes + _scalar_bytes() for p in _trainable(g["params"]))
        amsgrad = any(g["amsgrad"] for g in optimizer.param_groups)
        return total, f"{type(optimizer).__name__}: {3 if amsgrad else 2} moments per weight + step counters"
    raise TypeError(f"no state rule for {type(optimizer).__name__}: count optimizer.state instead")


def _counted_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    return sum(t.nbytes for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t))


# --- the bill -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """One line of the bill: what, how many bytes, and how the number was obtained."""

    name: str
    bytes: int
    how: str


@dataclass(frozen=True)
class Breakdown:
    """``training_step_breakdown``'s answer: the estimated bill and the measured peak."""

    label: str
    parts: tuple[Part, ...]
    measured_peak: int
    tolerance: float = TOLERANCE

    @property
    def estimate(self) -> int:
        return sum(p.bytes for p in self.parts)

    @property
    def ratio(self) -> float:
        """Measured peak / estimate."""
        return self.measured_peak / self.estimate

    @property
    def agrees(self) -> bool:
        return abs(self.ratio - 1) <= self.tolerance

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.parts]

    def __getitem__(self, name: str) -> int:
        return self.parts[self.names.index(name)].bytes

    def table(self) -> str:
        rows = [f"{self.label}", f"{'part':<18}{'bytes':>12}{'MiB':>9}  how it is counted"]
        rows += [f"{p.name:<18}{p.bytes:>12,}{p.bytes / MiB:>9.2f}  {p.how}" for p in self.parts]
        rows.append(f"{'estimate (sum)':<18}{self.estimate:>12,}{self.estimate / MiB:>9.2f}")
        rows.append(f"{'measured peak':<18}{self.measured_peak:>12,}{self.measured_peak / MiB:>9.2f}"
                    f"  ratio {self.ratio:.2f}, within ±{self.tolerance:.0%}: {self.agrees}")
        return "\n".join(rows)

    __str__ = table

    def plot(self, ax=None):
        """This breakdown as one stacked bar (see ``plot_breakdowns``)."""
        return plot_breakdowns([self], ax=ax)


def training_step_breakdown(model: nn.Module, optimizer: torch.optim.Optimizer,
                            batch: tuple[torch.Tensor, ...], loss_fn: Callable,
                            label: str | None = None) -> Breakdown:
    """The bill of one training step, estimated part by part, and its measured peak (lesson 02).

    Runs two ordinary steps (``zero_grad()``, forward, ``loss_fn(output, *targets)``, backward,
    ``step()``) on ``model``, so it trains it: the first creates the optimizer state, the second is
    measured with ``tracking()`` while ``SavedTensors`` counts the activations saved for backward.
    The estimate adds weights, gradients, optimizer state (by rule, per optimizer kind), saved
    activations, backward's working space and the batch. Working space is a rule of thumb: while
    backward passes the largest saved activation it holds a gradient of the same size. The peak
    measured (what was alive before the step plus the tracker's peak) agrees within ``TOLERANCE``;
    the rest is timing: activations are freed as gradients appear, and other temporaries come and go.
    """
    inputs, *targets = batch
    params, device = list(model.parameters()), inputs.device

    def step() -> None:
        optimizer.zero_grad()
        loss_fn(model(inputs), *targets).backward()
        optimizer.step()

    step()
    optimizer.zero_grad()
    state_tensors = [t for s in optimizer.state.values() for t in s.values() if torch.is_tensor(t)]
    weights = [*params, *model.buffers()]
    before = distinct_storage_bytes([*weights, *state_tensors, *batch])
    with tracking(device) as tracker, SavedTensors(exclude=[*weights, *batch]) as saved:
        step()
    try:
        state, state_how = optimizer_state_bytes(optimizer)
    except TypeError:
        state, state_how = _counted_state_bytes(optimizer), "counted in optimizer.state"
    parts = (
        Part("weights", distinct_storage_bytes(weights), "parameters and buffers"),
        Part("gradients", sum(p.nbytes for p in _trainable(params)), "1 per trainable weight"),
        Part("optimizer state", state, state_how),
        Part("activations", saved.bytes, "saved for backward (saved_tensors_hooks)"),
        Part("working space", max(saved.storages.values(), default=0),
             "gradient of the largest saved activation (rule of thumb)"),
        Part("batch", distinct_storage_bytes(batch), "inputs and targets"),
    )
    return Breakdown(label or type(optimizer).__name__, parts, before + tracker.peak_bytes)
