"""Bytes of optimizer state, per optimizer: the buffers each trainable parameter gets at its first step."""

from __future__ import annotations

import random

import torch
from torch import nn

from course_utils.core.exercise import Case, Exercise, patched


def state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Reference: bytes of per-element state buffers after the first step (step counters ignored)."""
    total = 0
    for group in optimizer.param_groups:
        if isinstance(optimizer, torch.optim.SGD):
            buffers = 1 if group["momentum"] != 0 else 0
        else:  # Adam or AdamW
            buffers = 3 if group["amsgrad"] else 2
        total += sum(buffers * p.numel() * p.element_size() for p in group["params"] if p.requires_grad)
    return total


KINDS = ("sgd", "sgd_momentum", "adam", "adamw", "adam_amsgrad")


def _optimizer(kind: str, params) -> torch.optim.Optimizer:
    return {
        "sgd": lambda: torch.optim.SGD(params, lr=0.1),
        "sgd_momentum": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9),
        "adam": lambda: torch.optim.Adam(params),
        "adamw": lambda: torch.optim.AdamW(params),
        "adam_amsgrad": lambda: torch.optim.Adam(params, amsgrad=True),
    }[kind]()


def _params(*shapes: tuple[int, ...], dtype: torch.dtype = torch.float32) -> list[nn.Parameter]:
    """Zero parameters (no random numbers drawn, so checks leave torch's global RNG alone)."""
    return [nn.Parameter(torch.zeros(shape, dtype=dtype)) for shape in shapes]


def _classifier() -> list[nn.Parameter]:
    return _params((64, 768), (64,), (3, 64), (3,))


def _fixed() -> list[Case]:
    frozen = _params((32, 32), (32,), (4, 32), (4,))
    for p in frozen[:2]:
        p.requires_grad_(False)
    cases = [Case(f"{kind} on a two-layer classifier", (_optimizer(kind, _classifier()),))
             for kind in KINDS]
    half = _params((32, 128), (32,), dtype=torch.float16)
    groups = _classifier()
    cases += [
        Case("adam on a float16 layer", (_optimizer("adam", half),)),
        Case("sgd_momentum on a float16 layer", (_optimizer("sgd_momentum", half),)),
        Case("adam with the first layer frozen", (_optimizer("adam", frozen),)),
        Case("two param groups: momentum on one only", (torch.optim.SGD(
            [{"params": groups[:2], "momentum": 0.9}, {"params": groups[2:]}], lr=0.1),)),
    ]
    return cases


def _random(rng: random.Random) -> Case:
    dtype = rng.choice((torch.float32, torch.float16, torch.bfloat16, torch.float64))
    shapes = [tuple(rng.randint(1, 9) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4))]
    params = _params(*shapes, dtype=dtype)
    for p in params:
        p.requires_grad_(rng.random() < 0.75)
    kind = rng.choice(KINDS)
    frozen = sum(not p.requires_grad for p in params)
    return Case(f"{kind}, {dtype}, shapes {shapes}, {frozen} frozen", (_optimizer(kind, params),))


EXERCISE = Exercise(
    id="02.state_bytes",
    title="Bytes of optimizer state, per optimizer",
    reference=state_bytes,
    fixed=_fixed,
    random=_random,
    hints=(
        "Per trainable parameter: SGD keeps nothing, SGD with momentum one buffer, Adam and "
        "AdamW two (exp_avg and exp_avg_sq), three with amsgrad.",
        "Read momentum and amsgrad from each param group: groups may differ. A parameter with "
        "requires_grad=False never gets a gradient, so never gets state.",
        "Each buffer is shaped and typed like its parameter: p.numel() * p.element_size() bytes "
        "(2 per value in float16 or bfloat16, not always 4).",
    ),
    mutants={
        "counts Adam as one moment": patched(state_bytes, ('3 if group["amsgrad"] else 2',
                                                           '2 if group["amsgrad"] else 1')),
        "gives SGD a momentum buffer even when momentum=0": patched(state_bytes, (
            '1 if group["momentum"] != 0 else 0', "1")),
        "assumes 4 bytes per value": patched(state_bytes, ("p.numel() * p.element_size()", "p.numel() * 4")),
        "counts frozen parameters": patched(state_bytes, (" if p.requires_grad)", ")")),
    },
)
