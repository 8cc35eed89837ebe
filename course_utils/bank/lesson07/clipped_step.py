"""One SGD step with gradient-norm clipping."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.bank.lesson07._shared import batch, model_judge
from course_utils.core.exercise import Case, Exercise, patched
from course_utils.labs.case_inputs import LinearKeepingGrad


def clipped_step(model, optimizer, x, y, max_norm):
    """Reference: one step with the total gradient norm clipped to ``max_norm``."""
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return model


def _case(label: str, seed: int, d_in: int, d_out: int, target_scale: float, max_norm: float,
          stale: bool = False, bare: bool = False) -> Case:
    """A (linear, tanh, linear) container, or with ``bare`` one linear layer; with ``stale`` a
    gradient left in .grad by an earlier backward (its layers keep it when copied)."""
    torch.manual_seed(seed)
    if bare:
        model = LinearKeepingGrad(d_in, d_out)
    else:
        model = nn.Sequential(LinearKeepingGrad(d_in, 8), nn.Tanh(), LinearKeepingGrad(8, d_out))
    x, y = batch(seed, 16, d_in, d_out, scale=target_scale)
    if stale:
        old_x, old_y = batch(seed + 999, 4, d_in, d_out, scale=50.0)
        F.mse_loss(model(old_x), old_y).backward()
    return Case(label, (model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, max_norm))


def _fixed() -> list[Case]:
    return [
        _case("huge targets: the gradient norm is far above max_norm=1", 71, 4, 2, 500.0, 1.0),
        _case("small gradients: clipping must change nothing", 72, 3, 1, 0.01, 100.0),
        _case("max_norm=0.5, one layer's gradient dominates", 73, 5, 3, 50.0, 0.5),
        _case("a stale gradient from an earlier backward, small new gradients", 74, 3, 2, 0.1, 5.0,
              stale=True),
        _case("one linear layer (no container), a stale gradient, max_norm=0.25", 75, 2, 1, 30.0, 0.25,
              stale=True, bare=True),
    ]


def _random(rng: random.Random) -> Case:
    scale, max_norm = rng.choice((0.1, 10.0, 300.0)), rng.choice((0.25, 1.0, 5.0))
    stale, bare = rng.random() < 0.5, rng.random() < 0.2
    return _case(f"target scale {scale}, max_norm {max_norm}{', stale gradient' if stale else ''}"
                 f"{', one linear layer' if bare else ''}", rng.randint(76, 10**6),
                 rng.randint(1, 6), rng.randint(1, 3), scale, max_norm, stale, bare)


def _clip_by_hand(model, optimizer, x, y, max_norm):
    """An alternative answer: the total norm and the scale written out (PyTorch's formula)."""
    model.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.sqrt(sum((g ** 2).sum() for g in grads))
    scale = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    with torch.no_grad():
        for g in grads:
            g.mul_(scale)
    optimizer.step()
    return model


def _vector_norm(model, optimizer, x, y, max_norm):
    """An alternative answer: the norm of the concatenated gradients; scale only when above."""
    optimizer.zero_grad(set_to_none=False)
    F.mse_loss(model(x), y).backward()
    params = list(model.parameters())
    total = torch.linalg.vector_norm(torch.cat([p.grad.flatten() for p in params]))
    if total > max_norm:
        for p in params:
            p.grad *= max_norm / (total + 1e-6)
    optimizer.step()
    return model


_CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)"

EXERCISE = Exercise(
    id="07.clipped_step",
    title="One SGD step with gradient-norm clipping",
    reference=clipped_step,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=model_judge("model", "optimizer", "x", "y", "max_norm"),
    hints=("Clip between backward() and step(): after backward the gradients exist, after "
           "step it is too late.",
           "clip_grad_norm_ on all parameters at once: the total norm, not each tensor's."),
    mutants={
        "no clipping": patched(clipped_step, (_CLIP, "pass")),
        "clips each parameter's norm separately": patched(clipped_step, (
            _CLIP, "for p in model.parameters():\n        torch.nn.utils.clip_grad_norm_([p], max_norm)")),
        "clips values instead of the norm": patched(clipped_step, ("clip_grad_norm_", "clip_grad_value_")),
        "clips after the step": patched(
            clipped_step, (_CLIP, "pass"), ("optimizer.step()", f"optimizer.step()\n    {_CLIP}")),
        "never zeroes the stale gradient": patched(clipped_step, ("optimizer.zero_grad()", "pass")),
    },
    equivalent={
        "swapped arguments: `F.mse_loss(model(x), y)` -> `F.mse_loss(y, model(x))`":
            "(a - b)^2 = (b - a)^2: the same loss and the same gradient for the model",
        "out-of-place: `torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)` -> "
        "`torch.nn.utils.clip_grad_norm(model.parameters(), max_norm)`":
            "clip_grad_norm is the deprecated alias of clip_grad_norm_: it clips in place too",
    },
    alternatives={
        "the total norm and the scale written out": _clip_by_hand,
        "the norm of the concatenated gradients, scaled only when above": _vector_norm,
    },
)
