"""One SGD step with gradient-norm clipping."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.bank.lesson07._shared import batch, model_judge
from course_utils.core.exercise import Case, Exercise, patched


def clipped_step(model, optimizer, x, y, max_norm):
    """Reference: one step with the total gradient norm clipped to ``max_norm``."""
    optimizer.zero_grad()
    F.mse_loss(model(x), y).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
    optimizer.step()
    return model


def _case(label: str, seed: int, d_in: int, d_out: int, target_scale: float, max_norm: float) -> Case:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(d_in, 8), nn.Tanh(), nn.Linear(8, d_out))
    x, y = batch(seed, 16, d_in, d_out, scale=target_scale)
    return Case(label, (model, torch.optim.SGD(model.parameters(), lr=0.1), x, y, max_norm))


def _fixed() -> list[Case]:
    return [
        _case("huge targets: the gradient norm is far above max_norm=1", 71, 4, 2, 500.0, 1.0),
        _case("small gradients: clipping must change nothing", 72, 3, 1, 0.01, 100.0),
        _case("max_norm=0.5, one layer's gradient dominates", 73, 5, 3, 50.0, 0.5),
    ]


def _random(rng: random.Random) -> Case:
    scale, max_norm = rng.choice((0.1, 10.0, 300.0)), rng.choice((0.25, 1.0, 5.0))
    return _case(f"target scale {scale}, max_norm {max_norm}", rng.randint(74, 10**6),
                 rng.randint(1, 6), rng.randint(1, 3), scale, max_norm)


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
    },
)
