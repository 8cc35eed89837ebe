"""What several of lesson 07's exercises use: seeded data, the training cases (a small model that
may carry a stale gradient, an optimizer, batches) and the judge that compares trained models."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.core.exercise import Case, Outcome
from course_utils.labs.case_inputs import LinearKeepingGrad


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def batch(seed: int, n: int, d_in: int, d_out: int, scale: float = 1.0):
    g = gen(seed)
    return torch.randn(n, d_in, generator=g), scale * torch.randn(n, d_out, generator=g)


def _linear(seed: int, d_in: int, d_out: int) -> nn.Linear:
    torch.manual_seed(seed)
    return LinearKeepingGrad(d_in, d_out)  # defined outside the bank: `course grade` sends it


def _optimizer(kind: str, params) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=0.05)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    return torch.optim.SGD(params, lr=0.1)


def _stale(model: nn.Module, seed: int) -> nn.Module:
    """Leave a gradient from earlier work in .grad (a validation pass that called backward)."""
    first = next(model.parameters())
    x, y = batch(seed + 999, 4, first.shape[1], first.shape[0], scale=3.0)
    F.mse_loss(model(x), y).backward()
    return model


def training_case(label: str, seed: int, kind: str, n_batches: int, d_in: int = 3,
                  d_out: int = 2, stale: bool = True, accum: int | None = None) -> Case:
    """A linear model (with a stale gradient unless ``stale=False``), an optimizer of ``kind``
    ("sgd", "momentum", "adam") and ``n_batches`` batches; and ``accum`` when given."""
    model = _linear(seed, d_in, d_out)
    if stale:
        _stale(model, seed)
    opt = _optimizer(kind, model.parameters())
    size = 4 if accum else 8
    batches = [batch(seed * 100 + i, size, d_in, d_out) for i in range(n_batches)]
    args = (model, opt, batches) if accum is None else (model, opt, batches, accum)
    return Case(label, args)


def _fresh_batch_losses(ref: nn.Module, mine: nn.Module) -> tuple[float, float]:
    """The reference's loss and the answer's on a fresh batch, both computed by the reference's
    module (``course grade`` receives a submission's parameters, not a model that can run)."""
    matrices = [w for w in ref.parameters() if w.dim() == 2]
    x, y = batch(4242, 16, matrices[0].shape[1], matrices[-1].shape[0])
    names = [name for name, _ in ref.named_parameters()]
    with torch.no_grad():
        yours = torch.func.functional_call(ref, dict(zip(names, mine.parameters(), strict=True)), (x,))
        return F.mse_loss(ref(x), y).item(), F.mse_loss(yours, y).item()


def model_judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """Compare trained models: every parameter, and the loss on a fresh batch."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if not isinstance(got.value, nn.Module):
        return f"return the trained model, got {type(got.value).__name__}"
    ref, mine = expected.value, got.value
    for (name, p), q in zip(ref.named_parameters(), mine.parameters(), strict=True):
        if not torch.allclose(p, q, atol=1e-5, rtol=1e-4):
            ours, yours = _fresh_batch_losses(ref, mine)
            diff = (p - q).abs().max().item()
            return (f"after training, parameter '{name}' differs from the reference by up to "
                    f"{diff:.3g}; on a fresh batch your model's loss is {yours:.4g}, the "
                    f"reference's {ours:.4g}")
    return None
