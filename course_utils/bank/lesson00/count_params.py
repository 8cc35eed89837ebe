"""Count the trainable parameters of a model: lesson 00's demo of check(), hints and mutants."""

from __future__ import annotations

import random
import warnings

import torch
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import changed_inputs, grad_mode_left_off, train_mode_changed


def count_trainable(model: nn.Module) -> int:
    """Reference: elements of the parameters an optimizer would update, each tensor once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def _tied() -> nn.Module:
    model = nn.Sequential(nn.Embedding(10, 4), nn.Linear(4, 10, bias=False))
    model[1].weight = model[0].weight  # weight tying: one tensor, used twice
    return model


def _frozen_first() -> nn.Module:
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    model[0].requires_grad_(False)
    return model


def _nested() -> nn.Module:
    """Containers inside containers, buffers that are not parameters, a module in eval mode."""
    torch.manual_seed(0)
    encoder = nn.ModuleDict({"embed": nn.Embedding(6, 3),
                             "blocks": nn.ModuleList([nn.Linear(3, 3), nn.BatchNorm1d(3)])})
    encoder["blocks"][1].eval()
    head = nn.Sequential(nn.Linear(3, 2, bias=False))
    head[0].weight.requires_grad_(False)
    model = nn.Sequential(encoder["blocks"][0], nn.ReLU(), nn.Sequential(head))
    model.add_module("encoder", encoder)  # blocks[0] is reachable twice: counted once
    return model


def _tied_frozen() -> nn.Module:
    model = _tied()
    model[0].weight.requires_grad_(False)  # frozen once, frozen everywhere it is used
    return model


def _no_inputs() -> nn.Module:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Initializing zero-element tensors is a no-op"
        return nn.Linear(0, 3)


def _fixed() -> list[Case]:
    return [
        Case("one Linear(3, 2)", (nn.Linear(3, 2),)),
        Case("MLP with its first layer frozen", (_frozen_first(),)),
        Case("embedding tied to the output layer", (_tied(),)),
        Case("a tied weight, frozen", (_tied_frozen(),)),
        Case("a model without parameters (ReLU)", (nn.ReLU(),)),
        Case("containers in containers, a shared layer, BatchNorm buffers", (_nested(),)),
        Case("a layer with no inputs: Linear(0, 3), 3 bias values only", (_no_inputs(),)),
        Case("a single parameter of one element: Linear(1, 1, bias=False)",
             (nn.Linear(1, 1, bias=False),)),
    ]


def _random(rng: random.Random) -> Case:
    widths = [rng.randint(1, 12) for _ in range(rng.randint(2, 5))]
    layers = [nn.Linear(a, b, bias=rng.random() < 0.7) for a, b in zip(widths, widths[1:], strict=False)]
    for layer in layers:
        if rng.random() < 0.3:
            layer.requires_grad_(False)
    return Case(f"random MLP widths {widths}", (nn.Sequential(*layers),))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """An int equal to the reference's; the model left as it came (parameters, requires_grad,
    train/eval) and gradients left on."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    return (grad_mode_left_off() or mismatch(expected.value, got.value)
            or changed_inputs(case, got, ("model",)) or train_mode_changed(case, got, ("model",)))


def counts_in_eval_mode(model: nn.Module) -> int:
    """A wrong answer only check() can see: it leaves the model in eval mode (tests/test_bank)."""
    return count_trainable(model.eval())


def freezes_as_it_counts(model: nn.Module) -> int:
    """A wrong answer only check() can see (it changes the model it was given; tests/test_bank)."""
    total = 0
    for p in model.parameters():
        if p.requires_grad:
            total += p.numel()
            p.requires_grad_(False)  # "so it is not counted twice": the model can no longer train
    return total


def _by_identity(model: nn.Module) -> int:
    """An alternative answer: every module's own parameters, each tensor once by identity."""
    seen: dict[int, nn.Parameter] = {}
    for module in model.modules():
        for p in module.parameters(recurse=False):
            seen.setdefault(id(p), p)
    total = 0
    for p in seen.values():
        if p.requires_grad:
            total += torch.numel(p)
    return total


def _as_one_vector(model: nn.Module) -> int:
    """An alternative answer: ask PyTorch to flatten the trainable parameters into one vector."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    if not trainable:
        return 0
    return nn.utils.parameters_to_vector(trainable).numel()


EXERCISE = Exercise(
    id="00.count_params",
    title="Count the trainable parameters of a model",
    reference=count_trainable,
    fixed=_fixed,
    random=_random,
    judge=_judge,
    hints=(
        "model.parameters() yields each parameter tensor once; t.numel() counts its elements.",
        "Frozen parameters have requires_grad == False: an optimizer never updates them.",
        "sum(p.numel() for p in model.parameters() if p.requires_grad)",
    ),
    mutants={
        "counts frozen ones too": patched(count_trainable, (" if p.requires_grad", "")),
        "counts tensors, not elements": patched(count_trainable, ("p.numel()", "1")),
        "counts tied weights twice": patched(count_trainable, (
            "for p in model.parameters()", "for _, p in model.named_parameters(remove_duplicate=False)")),
        "counts buffers too (BatchNorm's running statistics)": lambda model: count_trainable(model) + sum(
            b.numel() for b in model.buffers() if b.is_floating_point()),
        "returns a float": lambda model: float(count_trainable(model)),
    },
    equivalent={
        "no_grad added": "counting reads numel() and requires_grad, neither of which grad mode changes",
    },
    alternatives={
        "each module's own parameters, deduplicated by identity": _by_identity,
        "parameters_to_vector over the trainable ones": _as_one_vector,
    },
)
