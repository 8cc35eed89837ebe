"""Predictions in evaluation mode, without a graph."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.bank.lesson07._shared import gen
from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs, grad_mode_left_off


def predict(model, x):
    """Reference: evaluation mode and no graph."""
    model.eval()
    with torch.no_grad():
        return model(x)


def _classifier(seed: int, d_in: int, n_classes: int, nested: bool = False) -> nn.Module:
    torch.manual_seed(seed)
    if nested:  # batch norm and dropout one container down, inside a block
        block = nn.Sequential(nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5))
        model = nn.Sequential(nn.Linear(d_in, 16), block, nn.Linear(16, n_classes))
    else:
        model = nn.Sequential(nn.Linear(d_in, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                              nn.Linear(16, n_classes))
    with torch.no_grad():
        for _ in range(5):  # some training-mode use fills the running statistics
            model(torch.randn(32, d_in) + 1)
    return model.train()


def _case(label: str, seed: int, d_in: int, n: int, classes: int = 3, nested: bool = False) -> Case:
    return Case(label, (_classifier(seed, d_in, classes, nested),
                        torch.randn(n, d_in, generator=gen(seed + 1))))


def _fixed() -> list[Case]:
    return [_case("a classifier with batch norm and dropout, in training mode", 41, 4, 6),
            _case("two samples", 42, 3, 2),
            _case("a batch of one sample", 43, 5, 1),
            _case("batch norm and dropout inside a nested block", 44, 4, 5, nested=True)]


def _random(rng: random.Random) -> Case:
    d_in, n = rng.randint(2, 8), rng.randint(1, 10)
    nested = rng.random() < 0.3
    return _case(f"{n} sample(s) with {d_in} features{', nested block' if nested else ''}",
                 rng.randint(45, 10**6), d_in, n, nested=nested)


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    left = grad_mode_left_off()
    if left:
        return left
    if isinstance(got.value, torch.Tensor) and got.value.requires_grad:
        return ("the prediction carries an autograd graph (requires_grad=True): run the forward "
                "pass under torch.no_grad()")
    return (mismatch(expected.value, got.value, 1e-5, 1e-4)
            or changed_inputs(case, got, ("model", "x")))


def _inference_mode(model, x):
    """An alternative answer: train(False) and inference_mode."""
    model.train(False)
    with torch.inference_mode():
        return model(x)


def _restores_the_mode(model, x):
    """An alternative answer: eval for the forward, the model's mode put back afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            out = model(x)
    finally:
        model.train(was_training)
    return out


def _detached(model, x):
    """An alternative answer: every module switched to eval by hand, the output detached."""
    for module in model.modules():
        module.training = False
    return model(x).detach()


EXERCISE = Exercise(
    id="07.predict",
    title="Predictions in evaluation mode, without a graph",
    reference=predict,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=_judge,
    hints=("Two switches: model.eval() for dropout and batch norm, torch.no_grad() for the "
           "graph.",
           "model.eval() does not stop autograd, and no_grad() does not change a module's "
           "mode."),
    mutants={
        "no_grad but still in training mode": patched(predict, ("model.eval()", "pass")),
        "eval() but the output keeps its graph":
            patched(predict, ("with torch.no_grad():\n        return", "return")),
        # dropout off, batch norm still on batch statistics
        "only dropout switched to eval": patched(predict, ("model.eval()", "model[3].eval()")),
        "eval() on the top module's children only (not recursive)": patched(predict, (
            "model.eval()", "for child in model.children():\n        child.training = False")),
    },
    equivalent={
        "no_grad added": "the forward already runs under no_grad; model.eval() builds no graph",
        "detach added: `return model(x)` -> `return model(x).detach()`":
            "the output was computed under no_grad: it has no graph to detach from",
        "contiguous added: `return model(x)` -> `return model(x).contiguous()`":
            "a linear layer's output is already contiguous; the values are the same",
    },
    alternatives={
        "train(False) and inference_mode": _inference_mode,
        "puts the model's mode back afterwards": _restores_the_mode,
        "modules switched by hand, output detached": _detached,
    },
)
