"""Count the trainable parameters of a model: lesson 00's demo of check(), hints and mutants."""

from __future__ import annotations

import random

from torch import nn

from course_utils.core.exercise import Case, Exercise, patched


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


def _fixed() -> list[Case]:
    return [
        Case("one Linear(3, 2)", (nn.Linear(3, 2),)),
        Case("MLP with its first layer frozen", (_frozen_first(),)),
        Case("embedding tied to the output layer", (_tied(),)),
        Case("a model without parameters (ReLU)", (nn.ReLU(),)),
    ]


def _random(rng: random.Random) -> Case:
    widths = [rng.randint(1, 12) for _ in range(rng.randint(2, 5))]
    layers = [nn.Linear(a, b, bias=rng.random() < 0.7) for a, b in zip(widths, widths[1:], strict=False)]
    for layer in layers:
        if rng.random() < 0.3:
            layer.requires_grad_(False)
    return Case(f"random MLP widths {widths}", (nn.Sequential(*layers),))


EXERCISE = Exercise(
    id="00.count_params",
    title="Count the trainable parameters of a model",
    reference=count_trainable,
    fixed=_fixed,
    random=_random,
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
    },
)
