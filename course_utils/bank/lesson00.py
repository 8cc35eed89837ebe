"""Lesson 00's demo exercise: count a model's trainable parameters."""

from __future__ import annotations

import random

from torch import nn

from course_utils.core.exercise import Case, Exercise
from course_utils.core.questions import Question, Quiz


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


EXERCISES = [
    Exercise(
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
            "counts frozen ones too": lambda m: sum(p.numel() for p in m.parameters()),
            "counts tensors, not elements": lambda m: sum(1 for p in m.parameters() if p.requires_grad),
            "counts tied weights twice": lambda m: sum(
                p.numel() for _, p in m.named_parameters(remove_duplicate=False) if p.requires_grad),
        },
    )
]

QUIZ = Quiz("00", [
    Question(
        "Your answer to an exercise is wrong. What does check() do?",
        ("Prints 'Failed' and carries on", "Raises CheckFailed with the case, expected and got",
         "Silently records a fail in progress", "Compares your source code with the solution"),
        1, "a check raises so nothing can hide a failure; it names the case, expected and got."),
    Question(
        "Where should you write your answers to lesson 01's exercises?",
        ("In exercises/01_mps_setup.ipynb directly", "In solutions/01_mps_setup.ipynb",
         "In the copy `course start 01` puts in workspace/", "In a new notebook anywhere"),
        2, "exercises/ is regenerated from solutions/; workspace/ copies are never overwritten."),
    Question(
        "On a Linux laptop without a GPU, lesson 06 says 'emulated'. What does that mean?",
        ("The lesson is skipped", "The MPS bug is reproduced on CPU at the dispatcher level, so "
         "unmodified code like torch.optim.Adam is affected", "The results were measured on a Mac "
         "and pasted in", "A slow software copy of Metal runs"),
        1, "emulations act where the real effect acts and are labelled; nothing is pasted."),
    Question(
        "check() passed. How could it have drawn inputs you never saw?",
        ("It did not: only the fixed cases run", "Random cases are drawn from a fresh seed each "
         "time, next to the fixed cases", "It reads your notebook's variables",
         "It uses the cases of the last learner"),
        1, "fixed cases cover chosen edges; seeded random cases stop answers tuned to a list."),
])
