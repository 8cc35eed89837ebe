"""Bytes of optimizer state, per optimizer: the buffers each trainable parameter gets at its first step."""

from __future__ import annotations

import copy
import random

import torch
from torch import nn

from course_utils.core.compare import mismatch
from course_utils.core.exercise import Case, Exercise, Outcome, patched
from course_utils.core.inputs import difference, grad_mode_left_off


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
        Case("a model of containers (embedding, blocks, head), adamw",
             (_optimizer("adamw", _model().parameters()),)),
        Case("adam: one group with amsgrad, one without", (torch.optim.Adam(
            [{"params": _params((5, 7)), "amsgrad": True}, {"params": _params((3,))}]),)),
        Case("a size-0 parameter and a one-element one, adam", (_optimizer("adam", _params((0, 4), (1,))),)),
        Case("every parameter frozen, sgd_momentum", (_optimizer("sgd_momentum", frozen[:2]),)),
    ]
    return cases


def _model() -> nn.Module:
    """Containers in containers; the head's weight tied to the embedding (one parameter, once)."""
    with torch.no_grad():
        model = nn.Sequential(nn.Embedding(11, 6), nn.ModuleList([nn.Linear(6, 6), nn.LayerNorm(6)]),
                              nn.Linear(6, 11, bias=False))
        model[2].weight = model[0].weight
        for p in model.parameters():
            p.zero_()
    return model


def _random(rng: random.Random) -> Case:
    dtype = rng.choice((torch.float32, torch.float16, torch.bfloat16, torch.float64))
    shapes = [tuple(rng.randint(1, 9) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 4))]
    params = _params(*shapes, dtype=dtype)
    for p in params:
        p.requires_grad_(rng.random() < 0.75)
    kind = rng.choice(KINDS)
    frozen = sum(not p.requires_grad for p in params)
    return Case(f"{kind}, {dtype}, shapes {shapes}, {frozen} frozen", (_optimizer(kind, params),))


def _judge(expected: Outcome, got: Outcome, case: Case) -> str | None:
    """An int equal to the reference's; the optimizer left as given: no state, same parameters."""
    if got.error is not None:
        return f"raised {type(got.error).__name__}: {got.error}"
    problem = grad_mode_left_off() or mismatch(expected.value, got.value)
    if problem or got.inputs is None:
        return problem
    given, left = case.args[0], got.inputs[0][0]
    if len(left.state) != len(given.state):
        return ("your function stepped the optimizer it was given (it now holds state for "
                f"{len(left.state)} parameters): count from the rule, or step a copy")
    before = [p for g in given.param_groups for p in g["params"]]
    after = [p for g in left.param_groups for p in g["params"]]
    problem = difference(before, after)
    return f"your function changed the optimizer's parameters: {problem}" if problem else None


def _step_a_copy(optimizer: torch.optim.Optimizer) -> int:
    """An alternative that asks PyTorch: step a deep copy once with zero gradients and count the
    state it creates (its per-element buffers; Adam's scalar step counter left out)."""
    twin = copy.deepcopy(optimizer)
    for group in twin.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
    twin.step()
    return sum(t.numel() * t.element_size() for state in twin.state.values()
               for key, t in state.items() if key != "step" and isinstance(t, torch.Tensor))


def _table(optimizer: torch.optim.Optimizer) -> int:
    """An alternative answer from the rule: buffers per element by optimizer name and group setting."""
    name = type(optimizer).__name__
    total = 0
    for group in optimizer.param_groups:
        trainable = [p for p in group["params"] if p.requires_grad]
        if name == "SGD":
            per_value = 0 if not group["momentum"] else 1
        else:
            per_value = 2 + bool(group.get("amsgrad"))
        total += per_value * sum(torch.empty(0, dtype=p.dtype).element_size() * p.numel()
                                 for p in trainable)
    return total


def steps_the_optimizer(optimizer: torch.optim.Optimizer) -> int:
    """A wrong answer only check() can see: it steps the optimizer it was given (tests/test_bank)."""
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
    optimizer.step()
    return sum(t.numel() * t.element_size() for state in optimizer.state.values()
               for key, t in state.items() if key != "step")


EXERCISE = Exercise(
    id="02.state_bytes",
    title="Bytes of optimizer state, per optimizer",
    reference=state_bytes,
    fixed=_fixed,
    random=_random,
    judge=_judge,
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
        "reads amsgrad from the optimizer's defaults, not the group": patched(state_bytes, (
            'group["amsgrad"]', 'optimizer.defaults["amsgrad"]')),
        "counts parameters, not bytes": patched(state_bytes, (" * p.element_size()", "")),
    },
    equivalent={
        "no_grad added": "it reads numel, element_size, requires_grad and group settings, which "
                         "grad mode does not change",
    },
    alternatives={
        "step a deep copy once and count its state": _step_a_copy,
        "a table by optimizer name and group setting": _table,
    },
)
