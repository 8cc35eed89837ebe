"""Predictions in evaluation mode, without a graph."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.bank.lesson07._shared import gen
from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched


def predict(model, x):
    """Reference: evaluation mode and no graph."""
    model.eval()
    with torch.no_grad():
        return model(x)


def _classifier(seed: int, d_in: int, n_classes: int) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(d_in, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(16, n_classes))
    with torch.no_grad():
        for _ in range(5):  # some training-mode use fills the running statistics
            model(torch.randn(32, d_in) + 1)
    return model.train()


def _case(label: str, seed: int, d_in: int, n: int, classes: int = 3) -> Case:
    return Case(label, (_classifier(seed, d_in, classes), torch.randn(n, d_in, generator=gen(seed + 1))))


def _fixed() -> list[Case]:
    return [_case("a classifier with batch norm and dropout, in training mode", 41, 4, 6),
            _case("two samples", 42, 3, 2)]


def _random(rng: random.Random) -> Case:
    d_in, n = rng.randint(2, 8), rng.randint(2, 10)
    return _case(f"{n} samples with {d_in} features", rng.randint(40, 10**6), d_in, n)


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    if isinstance(got.value, torch.Tensor) and got.value.requires_grad:
        return ("the prediction carries an autograd graph (requires_grad=True): run the forward "
                "pass under torch.no_grad()")
    return mismatch(expected.value, got.value, 1e-5, 1e-4)


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
    },
)
