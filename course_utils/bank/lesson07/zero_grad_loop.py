"""A training loop whose every step uses only its own batch."""

from __future__ import annotations

import random

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


def _fixed() -> list[Case]:
    return [
        training_case("SGD, 3 batches, a stale gradient left by a validation pass", 1, "sgd", 3),
        training_case("SGD, 1 batch, a stale gradient", 2, "sgd", 1),
        training_case("Adam, 3 batches, no stale gradient", 3, "adam", 3, stale=False),
        training_case("SGD with momentum, 4 batches", 4, "momentum", 4),
    ]


def _random(rng: random.Random) -> Case:
    kind = rng.choice(("sgd", "adam", "momentum"))
    n, d_in, d_out = rng.randint(1, 4), rng.randint(1, 6), rng.randint(1, 3)
    stale = rng.random() < 0.7
    return training_case(f"{kind}, {n} batch(es), {d_in}->{d_out}, stale gradient={stale}",
                         rng.randint(5, 10**6), kind, n, d_in, d_out, stale)


_ZERO = ("optimizer.zero_grad()", "pass")  # the mutants take it out, then put it back elsewhere

EXERCISE = Exercise(
    id="07.zero_grad_loop",
    title="A training loop whose every step uses only its own batch",
    reference=train,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=model_judge,
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
)
