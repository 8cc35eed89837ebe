"""What several of lesson 07's exercises use: seeded data, the training cases (a small model that
may carry a stale gradient, an optimizer, batches), the judge that compares trained models and the
judge of the functions that must leave their inputs alone."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Outcome
from course_utils.core.inputs import changed_inputs, grad_mode_left_off
from course_utils.labs.case_inputs import LinearKeepingGrad


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def batch(seed: int, n: int, d_in: int, d_out: int, scale: float = 1.0):
    g = gen(seed)
    return torch.randn(n, d_in, generator=g), scale * torch.randn(n, d_out, generator=g)


def _linear(seed: int, d_in: int, d_out: int, hidden: int = 0) -> nn.Module:
    """A linear layer, or with ``hidden`` a container of two (linear, tanh, linear)."""
    torch.manual_seed(seed)
    if hidden:  # LinearKeepingGrad is defined outside the bank: `course grade` sends it
        return nn.Sequential(LinearKeepingGrad(d_in, hidden), nn.Tanh(), LinearKeepingGrad(hidden, d_out))
    return LinearKeepingGrad(d_in, d_out)


def _optimizer(kind: str, params) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=0.05)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9)
    return torch.optim.SGD(params, lr=0.1)


def _stale(model: nn.Module, seed: int, d_in: int, d_out: int) -> nn.Module:
    """Leave a gradient from earlier work in .grad (a validation pass that called backward)."""
    x, y = batch(seed + 999, 4, d_in, d_out, scale=3.0)
    F.mse_loss(model(x), y).backward()
    return model


def training_case(label: str, seed: int, kind: str, n_batches: int, d_in: int = 3,
                  d_out: int = 2, stale: bool = True, accum: int | None = None, hidden: int = 0,
                  size: int | None = None) -> Case:
    """A linear model (with ``hidden``: two linear layers in a container; with a stale gradient
    unless ``stale=False``), an optimizer of ``kind`` ("sgd", "momentum", "adam") and
    ``n_batches`` batches of ``size`` rows (4 with ``accum``, else 8); and ``accum`` when given."""
    model = _linear(seed, d_in, d_out, hidden)
    if stale:
        _stale(model, seed, d_in, d_out)
    opt = _optimizer(kind, model.parameters())
    size = size or (4 if accum else 8)
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


def model_judge(*names: str):
    """The judge of a training function (arguments ``names``: the model, the optimizer, then the
    data): compare trained models, every parameter and the loss on a fresh batch; the model must
    be left in training mode with its parameters trainable, gradients switched on, and the data
    unchanged."""

    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        return _trained(expected, got, case, names)

    return judge


def _trained(expected: Outcome, got: Outcome, case: Case, names: tuple[str, ...]) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if not isinstance(got.value, nn.Module):
        return f"return the trained model, got {type(got.value).__name__}"
    left = grad_mode_left_off()
    if left:
        return left
    ref, mine = expected.value, got.value
    if mine.training != ref.training:
        return "the model was left in eval mode: a training function leaves it in training mode"
    for (name, p), q in zip(ref.named_parameters(), mine.parameters(), strict=True):
        if q.requires_grad != p.requires_grad:
            return f"parameter '{name}' was left with requires_grad={q.requires_grad}"
        if not torch.allclose(p, q, atol=1e-5, rtol=1e-4):
            ours, yours = _fresh_batch_losses(ref, mine)
            diff = (p - q).abs().max().item()
            return (f"after training, parameter '{name}' differs from the reference by up to "
                    f"{diff:.3g}; on a fresh batch your model's loss is {yours:.4g}, the "
                    f"reference's {ours:.4g}")
    return changed_inputs(case, got, names, skip=(0, 1))


def value_judge(*names: str, atol: float = 1e-6, rtol: float = 1e-5):
    """The judge of a function of tensors that must not change them: the value within tolerance,
    the inputs (named ``names``) left as they were, gradients left switched on."""

    def judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return (grad_mode_left_off() or mismatch(expected.value, got.value, atol, rtol)
                or changed_inputs(case, got, names))

    return judge
