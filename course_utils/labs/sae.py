"""Lesson 06's laboratory: the sparse autoencoder of the frozen-encoder story, its data and its
training step, small enough to train in a second on a CPU; and the ready-made runs the exercises
hand out (``Trainer``, ``inherited_run``). Everything here is importable while grading, unlike the
exercise bank, so learners' code and the grader's inputs may use it.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.toolkit.emulate.inplace import AFFECTED, HEALTHY, Machine
from course_utils.toolkit.timing import one_thread

# --- the lesson's model, data and training step ---------------------------------------------------


class TopKSAE(nn.Module):
    """A TopK sparse autoencoder: encode, keep the k largest activations (ReLU'd), decode."""

    def __init__(self, d_model: int = 32, d_hidden: int = 96, k: int = 4, tied_init: bool = True):
        super().__init__()
        self.k = k
        self.encoder = nn.Linear(d_model, d_hidden)
        self.decoder = nn.Linear(d_hidden, d_model)
        if tied_init:  # start the encoder as the decoder's transpose, as the story's model did
            self.encoder.weight.data = self.decoder.weight.T.clone()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pre = self.encoder(x - self.decoder.bias)
        top = pre.topk(self.k, dim=-1)
        codes = torch.zeros_like(pre).scatter(-1, top.indices, top.values.relu())
        return self.decoder(codes)


def activations(n: int = 2048, d_model: int = 32, n_features: int = 48, active: int = 2,
                seed: int = 0) -> torch.Tensor:
    """Synthetic "model activations": each row is ``active`` random features out of ``n_features``
    unit directions, with random strengths, plus a little noise (lesson 06)."""
    g = torch.Generator().manual_seed(seed)
    with one_thread():
        features = F.normalize(torch.randn(n_features, d_model, generator=g), dim=1)
        which = torch.rand(n, n_features, generator=g).topk(active, dim=1).indices  # distinct features
        strength = torch.rand(n, active, generator=g) * 2 + 0.5
        codes = torch.zeros(n, n_features).scatter(1, which, strength)
        return codes @ features + 0.01 * torch.randn(n, d_model, generator=g)


def make_optimizer(model: nn.Module, kind: str = "adam", lr: float = 1e-2) -> torch.optim.Optimizer:
    """"adam" (default arguments but lr), "adam-foreach", "adam-loop" or "sgd" (lesson 06)."""
    params = model.parameters()
    if kind == "sgd":
        return torch.optim.SGD(params, lr=lr * 10)
    foreach = {"adam": None, "adam-foreach": True, "adam-loop": False}[kind]
    return torch.optim.Adam(params, lr=lr, foreach=foreach)


def sae_step(model: nn.Module, optimizer: torch.optim.Optimizer, batch: torch.Tensor) -> torch.Tensor:
    """One training step of the lesson: MSE reconstruction, clipped gradients, Adam. Returns the loss."""
    optimizer.zero_grad()
    loss = F.mse_loss(model(batch), batch)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.detach()


def batches(data: torch.Tensor, steps: int, size: int = 128) -> Iterator[torch.Tensor]:
    """``steps`` consecutive batches of ``size`` rows, wrapping around ``data``."""
    for s in range(steps):
        start = (s * size) % (len(data) - size + 1)
        yield data[start:start + size]


def train(model: nn.Module, data: torch.Tensor, steps: int = 300, lr: float = 1e-2,
          optimizer: str | torch.optim.Optimizer = "adam", batch: int = 128, sentinel=None) -> list[float]:
    """Train ``model`` on ``data``; returns the loss of every step as a fraction of the data's
    variance (0 = perfect reconstruction, 1 = no better than predicting the mean). On the CPU it
    uses one thread: tensors this small only lose time to a thread pool."""
    opt = make_optimizer(model, optimizer, lr) if isinstance(optimizer, str) else optimizer
    variance = data.var().item()
    losses = []
    with one_thread():
        for xb in batches(data, steps, batch):
            loss = sae_step(model, opt, xb)
            if sentinel is not None:
                sentinel.step(loss)
            losses.append(loss)
    return (torch.stack(losses) / variance).tolist()


# --- models for the exercises --------------------------------------------------------------------


def transpose_layout(p: torch.Tensor) -> None:
    """Same values, stored transposed (what ``w.T.clone()`` gives)."""
    p.data = p.data.T.contiguous().T


class DeadGate(nn.Module):
    """A gate that forward multiplies by zero: its parameter gets a gradient of exact zeros (not
    None), so no optimizer moves it, and it is not frozen by the bug."""

    def __init__(self, d: int):
        super().__init__()
        self.gate = nn.Parameter(torch.ones(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 0.0 * self.gate


def mlp(seed: int, d: int, layout: tuple[int, ...] = (), frozen: tuple[int, ...] = (),
        spare: bool = False, dead: bool = False) -> nn.Module:
    """A 2-layer MLP d -> 12 -> d: weights of the layers in ``layout`` stored transposed, layers in
    ``frozen`` with requires_grad=False, with ``spare`` a parameter that forward never uses, and
    with ``dead`` a last ``DeadGate`` whose gradient is all zeros."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(d, 12), nn.ReLU(), nn.Linear(12, d))
    if dead:
        model.append(DeadGate(d))
    for i in layout:
        transpose_layout(model[2 * i].weight)
    for i in frozen:
        model[2 * i].requires_grad_(False)
    if spare:  # registered, optimized, never used in forward: it gets no gradient
        model.register_parameter("spare", nn.Parameter(torch.randn(4)))
    return model


def small_sae(seed: int, d: int, tied: bool = True) -> nn.Module:
    """A small TopKSAE (d -> 2d, k=2) for the exercises; ``tied`` gives the story's transposed init."""
    torch.manual_seed(seed)
    return TopKSAE(d_model=d, d_hidden=2 * d, k=2, tied_init=tied)


def zero_biases(model: nn.Module) -> nn.Module:
    """Set every bias to zero (a model whose tiny updates are sure to show); returns the model."""
    for name, p in model.named_parameters():
        if name.endswith("bias"):
            nn.init.zeros_(p)
    return model


def _warm_up(step: int) -> float:
    return min(1.0, step / 2)  # lr 0 at the first step, half at the second, full after


# --- ready-made runs -------------------------------------------------------------------------------


@dataclass
class Trainer:
    """``trainer.model`` and ``trainer.step()``: one training step of the lesson (MSE, clipping, the
    optimizer) on ``machine``. With ``warmup`` the learning rate is 0 at the first step."""

    model: nn.Module
    optimizer: str = "adam"
    lr: float = 1e-2
    warmup: bool = False
    machine: Machine = field(default_factory=lambda: HEALTHY)
    d_model: int = 8
    _state: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def steps_taken(self) -> int:
        """How many times ``step()`` ran."""
        return self._state.get("n", 0)

    def step(self) -> float:
        s = self._state
        if not s:
            s["opt"] = make_optimizer(self.model, self.optimizer, self.lr)
            s["sched"] = (torch.optim.lr_scheduler.LambdaLR(s["opt"], _warm_up) if self.warmup else None)
            s["data"] = list(batches(activations(192, self.d_model, 12, seed=1), 8, 64))
            s["n"] = 0
        with self.machine, one_thread():
            loss = sae_step(self.model, s["opt"], s["data"][s["n"] % 8])
        if s["sched"] is not None:
            s["sched"].step()
        s["n"] += 1
        return loss.item()


def inherited_run(seed: int) -> tuple[nn.Module, torch.optim.Optimizer]:
    """A run someone trained for 5 steps on an affected Mac (emulated): the model and its Adam.
    Seed 0 is the story's SAE; other seeds vary the model, which weights are transposed, and Adam's
    implementation (lesson 06, exercise 4)."""
    rng = random.Random(seed)
    d = 8
    if seed == 0:
        model = small_sae(0, d)
    elif rng.random() < 0.5:
        model = small_sae(seed, d)
        if rng.random() < 0.5:
            transpose_layout(model.decoder.weight)
    else:
        model = mlp(seed, d, layout=rng.choice(((0,), (1,), (0, 1))))
    opt = make_optimizer(model, "adam" if seed == 0 else rng.choice(("adam", "adam-foreach", "adam-loop")))
    with AFFECTED, one_thread():
        for xb in batches(activations(320, d, 12, seed=seed), 5, 64):
            sae_step(model, opt, xb)
    return model, opt


def continue_training(model: nn.Module, optimizer: torch.optim.Optimizer, steps: int = 10) -> list[float]:
    """Train ``steps`` more steps on the affected Mac (emulated); the losses, rounded to 6 digits."""
    d = next(model.parameters()).shape[-1]
    with AFFECTED, one_thread():
        losses = [sae_step(model, optimizer, xb).item()
                  for xb in batches(activations(320, d, 12, seed=99), steps, 64)]
    return [round(v, 6) for v in losses]
