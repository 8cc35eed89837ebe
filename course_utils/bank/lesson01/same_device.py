"""A guard that keeps model and batch together: the model's device, or an error naming both."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome, patched


def same_device(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    """Reference: return the model's device, or raise RuntimeError naming both devices."""
    where = next(model.parameters()).device
    for i, t in enumerate(tensors):
        if t.device != where:
            raise RuntimeError(f"model is on {where} but tensor {i} is on {t.device}")
    return where


def _on(device: str, *shape: int) -> torch.Tensor:
    return torch.zeros(*shape, device=device)


def _fixed() -> list[Case]:
    cpu_model, meta_model = nn.Linear(4, 2), nn.Linear(4, 2).to("meta")
    return [
        Case("model and batch on cpu", (cpu_model, _on("cpu", 3, 4))),
        Case("model on cpu, batch on meta", (cpu_model, _on("meta", 3, 4))),
        Case("model on meta, batch on cpu", (meta_model, _on("cpu", 3, 4))),
        Case("batch fine, labels on the other device", (cpu_model, _on("cpu", 3, 4), _on("meta", 3))),
        Case("model only, no tensors", (cpu_model,)),
    ]


def _random(rng: random.Random) -> Case:
    model_dev = rng.choice(("cpu", "meta"))
    devs = [rng.choice(("cpu", "meta")) for _ in range(rng.randint(1, 4))]
    model = nn.Linear(2, 2).to(model_dev)
    tensors = tuple(_on(d, rng.randint(1, 3)) for d in devs)
    return Case(f"model on {model_dev}, tensors on {devs}", (model, *tensors))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    if expected.error is None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        return None if got.value == expected.value else f"returned {got.value!r}, expected {expected.value!r}"
    if not isinstance(got.error, RuntimeError | ValueError):
        return "expected a RuntimeError (or ValueError) naming both devices" + (
            f", got {type(got.error).__name__}: {got.error}" if got.error else ", nothing was raised")
    named = [d for d in ("cpu", "meta") if d in str(expected.error)]
    missing = [d for d in named if d not in str(got.error)]
    return f"the error message does not name {missing}" if missing else None


EXERCISE = Exercise(
    id="01.same_device",
    title="A guard that keeps model and batch together",
    reference=same_device,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "nn.Module has no .device: read it from a parameter, next(model.parameters()).device.",
        "Check every tensor, not only the first one: labels travel separately from inputs.",
        "Raise RuntimeError with both devices in the message, e.g. f'model on {a}, input on {b}'.",
    ),
    mutants={
        "checks only the first tensor": lambda model, *tensors: same_device(model, *tensors[:1]),
        "message does not name the devices": patched(same_device, (
            'f"model is on {where} but tensor {i} is on {t.device}"', '"device mismatch"')),
        "reads model.device": patched(same_device, ("next(model.parameters()).device", "model.device")),
    },
)
