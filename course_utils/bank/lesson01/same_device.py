"""A guard that keeps model and batch together: the model's device, or an error naming both."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs, train_mode_changed


def same_device(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    """Reference: return the model's device, or raise RuntimeError naming both devices."""
    where = next(model.parameters()).device
    for i, t in enumerate(tensors):
        if t.device != where:
            raise RuntimeError(f"model is on {where} but tensor {i} is on {t.device}")
    return where


def _on(device: str, *shape: int) -> torch.Tensor:
    return torch.zeros(shape, device=device)


def _container(device: str) -> nn.Module:
    """A model whose first module has no parameters, with a container inside, partly frozen."""
    model = nn.Sequential(nn.ReLU(), nn.ModuleDict({"embed": nn.Embedding(5, 4)}), nn.Linear(4, 2))
    model[1]["embed"].requires_grad_(False)
    return model.to(device)


def _fixed() -> list[Case]:
    cpu_model, meta_model = nn.Linear(4, 2), nn.Linear(4, 2).to("meta")
    return [
        Case("model and batch on cpu", (cpu_model, _on("cpu", 3, 4))),
        Case("model on cpu, batch on meta", (cpu_model, _on("meta", 3, 4))),
        Case("model on meta, batch on cpu", (meta_model, _on("cpu", 3, 4))),
        Case("batch fine, labels on the other device", (cpu_model, _on("cpu", 3, 4), _on("meta", 3))),
        Case("model only, no tensors", (cpu_model,)),
        Case("a container on meta (ReLU first, a frozen embedding), batch on meta",
             (_container("meta"), _on("meta", 1, 4))),
        Case("a container on cpu, an empty batch on meta", (_container("cpu"), _on("meta", 0, 4))),
        Case("a batch of 1 and a 0-dim label, all on cpu", (_container("cpu"), _on("cpu", 1, 4), _on("cpu"))),
        Case("three tensors, only the last one elsewhere",
             (cpu_model, _on("cpu", 2, 4), _on("cpu", 2), _on("meta", 2))),
    ]


def _random(rng: random.Random) -> Case:
    model_dev = rng.choice(("cpu", "meta"))
    devs = [rng.choice(("cpu", "meta")) for _ in range(rng.randint(1, 4))]
    model = nn.Linear(2, 2).to(model_dev)
    tensors = tuple(_on(d, rng.randint(1, 3)) for d in devs)
    return Case(f"model on {model_dev}, tensors on {devs}", (model, *tensors))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    names = ("model", *(f"tensors[{i}]" for i in range(len(case.args) - 1)))
    left = changed_inputs(case, got, names) or train_mode_changed(case, got, names)
    if left:
        return left
    if expected.error is None:
        if got.error is not None:
            return f"raised {type(got.error).__name__}: {got.error}"
        if not isinstance(got.value, torch.device):
            return f"return a torch.device, got {type(got.value).__name__} {got.value!r}"
        return None if got.value == expected.value else f"returned {got.value!r}, expected {expected.value!r}"
    if not isinstance(got.error, RuntimeError | ValueError):
        return "expected a RuntimeError (or ValueError) naming both devices" + (
            f", got {type(got.error).__name__}: {got.error}" if got.error else ", nothing was raised")
    named = [d for d in ("cpu", "meta") if d in str(expected.error)]
    missing = [d for d in named if d not in str(got.error)]
    return f"the error message does not name {missing}" if missing else None


def _moves_the_model(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    if tensors and tensors[0].device.type == "meta":
        model.to(tensors[0].device)  # "fixes" the mismatch instead of reporting it
    return same_device(model, *tensors)


def _all_devices(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    """An alternative answer: the set of the tensors' devices, one ValueError naming them all."""
    (where, *_) = {p.device for p in model.parameters()}
    elsewhere = sorted({str(t.device) for t in tensors} - {str(where)})
    if elsewhere:
        raise ValueError(f"inputs on {', '.join(elsewhere)}, model on {where}: move them together")
    return where


def _named_parameter(model: nn.Module, *tensors: torch.Tensor) -> torch.device:
    """An alternative answer: the first named parameter's device, checked by device type."""
    for _, p in model.named_parameters():
        where = p.device
        break
    for t in tensors:
        if t.device.type != where.type:
            raise RuntimeError(f"Expected all tensors on {where.type}, found one on {t.device.type}")
    return where


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
        "returns the device's name, a string": lambda model, *tensors: str(same_device(model, *tensors)),
        "moves the model to the batch instead": _moves_the_model,
    },
    alternatives={
        "a set of the tensors' devices, one ValueError": _all_devices,
        "the first named parameter's device type": _named_parameter,
    },
)
