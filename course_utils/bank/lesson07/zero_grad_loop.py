"""A training loop whose every step uses only its own batch."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import model_judge, training_case
from course_utils.core.exercise import Case, Exercise, patched


def train(model, optimizer, batches):
    """Reference: one step per batch, each using only that batch's gradient."""
    for x, y in batches:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


def _model_zero_grad(model, optimizer, batches):
    """An alternative answer: the model clears its gradients, the loss written out."""
    for x, y in batches:
        model.zero_grad()
        ((model(x) - y) ** 2).mean().backward()
        optimizer.step()
    return model


def _grads_to_none(model, optimizer, batches):
    """An alternative answer: each gradient set to None by hand, batches taken by index."""
    for i in range(len(batches)):
        for p in model.parameters():
            p.grad = None
        x, y = batches[i]
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
    return model


def _fixed() -> list[Case]:
    return [
        training_case("SGD, 3 batches, a stale gradient left by a validation pass", 1, "sgd", 3),
        training_case("SGD, 1 batch, a stale gradient", 2, "sgd", 1),
        training_case("Adam, 3 batches, no stale gradient", 3, "adam", 3, stale=False),
        training_case("SGD with momentum, 4 batches", 4, "momentum", 4),
        training_case("a container (linear, tanh, linear) with a stale gradient, Adam", 5, "adam", 3,
                      hidden=5),
        training_case("SGD, 2 batches of one row each, a stale gradient", 6, "sgd", 2, size=1),
    ]


def _random(rng: random.Random) -> Case:
    kind = rng.choice(("sgd", "adam", "momentum"))
    n, d_in, d_out = rng.randint(1, 4), rng.randint(1, 6), rng.randint(1, 3)
    stale, hidden = rng.random() < 0.7, rng.choice((0, 0, 4))
    return training_case(f"{kind}, {n} batch(es), {d_in}->{d_out}{' via 4 hidden' if hidden else ''}, "
                         f"stale gradient={stale}", rng.randint(7, 10**6), kind, n, d_in, d_out, stale,
                         hidden=hidden)


_ZERO = ("optimizer.zero_grad()", "pass")  # the mutants take it out, then put it back elsewhere

EXERCISE = Exercise(
    id="07.zero_grad_loop",
    title="A training loop whose every step uses only its own batch",
    reference=train,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=model_judge("model", "optimizer", "batches"),
    hints=("backward() adds into .grad; something must clear it before each backward().",
           "The model may arrive with a stale gradient: clear it before the first backward, "
           "not after the step.",
           "for x, y in batches: optimizer.zero_grad(); loss.backward(); optimizer.step()"),
    mutants={
        "never calls zero_grad": patched(train, _ZERO),
        "zero_grad after step (a stale gradient leaks into step 1)": patched(
            train, _ZERO, ("optimizer.step()", "optimizer.step()\n        optimizer.zero_grad()")),
        "zero_grad between backward and step (nothing learns)": patched(
            train, _ZERO, (".backward()", ".backward()\n        optimizer.zero_grad()")),
        "zero_grad once, before the loop": patched(
            train, _ZERO, ("for x, y in batches:", "optimizer.zero_grad()\n    for x, y in batches:")),
    },
    equivalent={
        "swapped arguments: `F.mse_loss(model(x), y)` -> `F.mse_loss(y, model(x))`":
            "(a - b)^2 = (b - a)^2: the same loss and the same gradient for the model",
    },
    alternatives={
        "model.zero_grad(), the loss written out": _model_zero_grad,
        "every .grad set to None by hand": _grads_to_none,
    },
)
