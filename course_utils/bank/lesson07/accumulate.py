"""Gradient accumulation equal to a big-batch step."""

from __future__ import annotations

import random

import torch
import torch.nn.functional as F

from course_utils.bank.lesson07._shared import model_judge, training_case
from course_utils.core.exercise import Case, Exercise, patched


def train_accumulated(model, optimizer, micro_batches, accum_steps):
    """Reference: one step per ``accum_steps`` micro-batches, equal to a step on their union."""
    optimizer.zero_grad()
    for i, (x, y) in enumerate(micro_batches):
        (F.mse_loss(model(x), y) / accum_steps).backward()
        if (i + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    return model


def _fixed() -> list[Case]:
    return [
        training_case("SGD, 8 micro-batches, accum_steps=4", 11, "sgd", 8, accum=4),
        training_case("SGD, 4 micro-batches, accum_steps=2, a stale gradient", 12, "sgd", 4,
                      accum=2),
        training_case("SGD with momentum, 6 micro-batches, accum_steps=3", 13, "momentum", 6,
                      accum=3),
        training_case("Adam, 4 micro-batches, accum_steps=4", 14, "adam", 4, accum=4),
        training_case("accum_steps=1: plain training", 15, "sgd", 3, accum=1),
        training_case("a container (linear, tanh, linear), momentum, 4 micro-batches, accum_steps=2",
                      16, "momentum", 4, accum=2, hidden=4),
        training_case("accum_steps=5: an odd group, Adam, 10 micro-batches of one row", 17, "adam", 10,
                      accum=5, size=1),
    ]


def _random(rng: random.Random) -> Case:
    kind, accum = rng.choice(("sgd", "adam", "momentum")), rng.randint(1, 4)
    groups = rng.randint(1, 3)
    hidden = rng.choice((0, 0, 3))
    return training_case(f"{kind}, {accum * groups} micro-batches, accum_steps={accum}"
                         f"{', a container' if hidden else ''}", rng.randint(18, 10**6), kind,
                         accum * groups, rng.randint(1, 5), rng.randint(1, 3), rng.random() < 0.5,
                         accum=accum, hidden=hidden)


def _one_backward_per_group(model, optimizer, micro_batches, accum_steps):
    """An alternative answer: the group's mean loss, one backward per group."""
    for start in range(0, len(micro_batches), accum_steps):
        group = micro_batches[start:start + accum_steps]
        optimizer.zero_grad()
        loss = sum(F.mse_loss(model(x), y) for x, y in group) / accum_steps
        loss.backward()
        optimizer.step()
    return model


def _concatenated(model, optimizer, micro_batches, accum_steps):
    """An alternative answer: equal micro-batches, so one big batch of the group's rows."""
    groups = [micro_batches[i:i + accum_steps] for i in range(0, len(micro_batches), accum_steps)]
    for group in groups:
        x = torch.cat([x for x, _ in group])
        y = torch.cat([y for _, y in group])
        model.zero_grad(set_to_none=False)
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


# Edits the mutants share: no zero_grad before the loop, none after each step, no division.
_NO_FIRST_ZERO = ("optimizer.zero_grad()\n    for", "for")
_NO_ZERO_AFTER_STEP = ("optimizer.step()\n            optimizer.zero_grad()", "optimizer.step()")
_UNDIVIDED = (" / accum_steps)", ")")

EXERCISE = Exercise(
    id="07.accumulate",
    title="Gradient accumulation equal to a big-batch step",
    reference=train_accumulated,
    fixed=_fixed,
    random=_random,
    n_random=8,
    judge=model_judge("model", "optimizer", "micro_batches", "accum_steps"),
    hints=("One optimizer.step() per accum_steps micro-batches, after the last of each group.",
           "Divide each micro-batch loss by accum_steps so the summed gradient is the mean.",
           "Zero the gradients before the first micro-batch and after every step."),
    mutants={
        "the seed's loop: step % accum == 0, no zero_grad, no division": patched(
            train_accumulated, _NO_FIRST_ZERO, _NO_ZERO_AFTER_STEP, _UNDIVIDED,
            ("(i + 1) % accum_steps", "i % accum_steps")),
        "right schedule, loss not divided by accum_steps": patched(train_accumulated, _UNDIVIDED),
        "zero_grad on every micro-batch (nothing accumulates)": patched(
            train_accumulated, _NO_ZERO_AFTER_STEP, _NO_FIRST_ZERO,
            ("enumerate(micro_batches):", "enumerate(micro_batches):\n        optimizer.zero_grad()")),
        "divides and steps right but never zeroes": patched(train_accumulated, _NO_ZERO_AFTER_STEP),
    },
    equivalent={
        "swapped arguments: `F.mse_loss(model(x), y)` -> `F.mse_loss(y, model(x))`":
            "(a - b)^2 = (b - a)^2: the same loss and the same gradient for the model",
    },
    alternatives={
        "one backward per group, on the group's mean loss": _one_backward_per_group,
        "each group concatenated into one batch": _concatenated,
    },
)
